"""Reading what a delivered message links to, as a mail client would, and following
those links through the public pages."""

from dataclasses import dataclass
from email.message import EmailMessage

from messaging.services.htmltools import LenientHTMLParser

BASE = "https://mail.example.org"


@dataclass
class Anchor:
    href: str
    attrs: dict[str, str | None]


class _Links(LenientHTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.anchors: list[Anchor] = []
        self.images: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a" and dict(attrs).get("href") is not None:
            self.anchors.append(Anchor(href=str(dict(attrs)["href"]), attrs=dict(attrs)))
        elif tag == "img":
            self.images.append(dict(attrs))

    handle_startendtag = handle_starttag


def parsed(html: str) -> _Links:
    parser = _Links()
    parser.feed(html)
    parser.close()
    return parser


def html_of(message: EmailMessage) -> str:
    return str(message.get_body(("html",)).get_content())  # type: ignore[union-attr]


def text_of(message: EmailMessage) -> str:
    return str(message.get_body(("plain",)).get_content())  # type: ignore[union-attr]


def path_of(url: str) -> str:
    """The path of one of our public links, for the test client."""
    assert url.startswith(BASE + "/"), url
    return url[len(BASE) :]


def pixel_path(message: EmailMessage) -> str:
    [pixel] = [i for i in parsed(html_of(message)).images if "/t/o/" in str(i.get("src"))]
    return path_of(str(pixel["src"]))


def click_paths(message: EmailMessage) -> list[str]:
    tracked = BASE + "/t/c/"
    return [path_of(a.href) for a in parsed(html_of(message)).anchors if a.href.startswith(tracked)]


def unsubscribe_path(message: EmailMessage) -> str:
    header = str(message["List-Unsubscribe"]).strip()
    assert header.startswith("<"), header
    assert header.endswith(">"), header
    return path_of(header[1:-1])

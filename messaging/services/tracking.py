"""Open and click tracking in a message's HTML part: links rewritten to the click
redirect, the open pixel added. The HTML is parsed with the standard library's
tokenizer, not searched with patterns, and only the rewritten `<a>` start tags change
(plus the pixel inserted): every other byte of the document stays as written."""

import html
import uuid
from dataclasses import dataclass, field

from messaging import conf
from messaging.services.htmltools import LenientHTMLParser
from messaging.services.tokens import click_token, is_web_url, open_token

# Longer tracked links are left as written: some clients and proxies cut URLs near 2 KB.
MAX_TRACKED_LINK_LENGTH = 2000

Attrs = list[tuple[str, str | None]]


@dataclass(frozen=True)
class Tracking:
    """What to add to one email's HTML, and where its public links point."""

    email_id: uuid.UUID
    opens: bool
    clicks: bool
    base_url: str = field(default_factory=conf.public_base_url)

    def click_url(self, url: str) -> str:
        return f"{self.base_url}/t/c/{click_token(self.email_id, url)}"

    def pixel(self) -> str:
        src = html.escape(f"{self.base_url}/t/o/{open_token(self.email_id)}")
        return f'<img src="{src}" width="1" height="1" alt="">'

    def tracked_url(self, url: str) -> str | None:
        """The click redirect for an href, or None to keep it: only absolute http(s)
        links are tracked, never our own public pages (the unsubscribe and preference
        pages, links tracked already) nor a link whose redirect would be too long."""
        if not is_web_url(url):
            return None
        if any(url.startswith(f"{self.base_url}{prefix}") for prefix in ("/u/", "/p/", "/t/")):
            return None
        tracked = self.click_url(url)
        return tracked if len(tracked) <= MAX_TRACKED_LINK_LENGTH else None


@dataclass(frozen=True)
class _Link:
    start: int
    end: int
    attrs: Attrs
    closed: bool


class _Scanner(LenientHTMLParser):
    """Finds the `<a href>` start tags and the last `</body>` of one document, as
    character offsets into it."""

    def __init__(self, document: str) -> None:
        super().__init__(convert_charrefs=True)
        self.document = document
        # Offsets of each line's first character: the tokenizer reports (line, column),
        # counting lines by "\n" alone.
        self.line_starts = [0]
        newline = document.find("\n")
        while newline != -1:
            self.line_starts.append(newline + 1)
            newline = document.find("\n", newline + 1)
        self.links: list[_Link] = []
        self.body_end: int | None = None
        self.feed(document)
        self.close()

    def _offset(self) -> int:
        line, column = self.getpos()
        return self.line_starts[line - 1] + column

    def _start(self, tag: str, attrs: Attrs, closed: bool) -> None:
        if tag != "a" or not any(name == "href" for name, _ in attrs):
            return
        text = self.get_starttag_text()
        start = self._offset()
        # The tag as written must sit at the reported offset; if it did not, the tag is
        # left alone rather than risk cutting the document in the wrong place.
        if text is None or self.document[start : start + len(text)] != text:
            return
        self.links.append(_Link(start, start + len(text), attrs, closed))

    def handle_starttag(self, tag: str, attrs: Attrs) -> None:
        self._start(tag, attrs, closed=False)

    def handle_startendtag(self, tag: str, attrs: Attrs) -> None:
        self._start(tag, attrs, closed=True)

    def handle_endtag(self, tag: str) -> None:
        if tag == "body":
            self.body_end = self._offset()


def _start_tag(attrs: Attrs, *, closed: bool) -> str:
    written = "".join(
        f" {name}" if value is None else f' {name}="{html.escape(value, quote=True)}"'
        for name, value in attrs
    )
    return f"<a{written}{' /' if closed else ''}>"


def _retargeted(link: _Link, tracking: Tracking) -> str | None:
    """The start tag with its (first) href tracked, or None when it stays as written."""
    attrs = list(link.attrs)
    for index, (name, value) in enumerate(attrs):
        if name == "href":
            tracked = tracking.tracked_url(value.strip()) if value else None
            if tracked is None:
                return None
            attrs[index] = (name, tracked)
            return _start_tag(attrs, closed=link.closed)
    return None


def html_tracked(document: str, tracking: Tracking) -> str:
    """The HTML with its http(s) links pointing at the click redirect (`clicks`) and the
    open pixel before the last `</body>`, or at the end without one (`opens`). `mailto:`,
    `tel:`, anchors, relative links and links to our own public pages stay as written."""
    if not tracking.opens and not tracking.clicks:
        return document
    scanner = _Scanner(document)
    # (start, end, replacement) edits in document order; the pixel is an insertion.
    edits: list[tuple[int, int, str]] = []
    if tracking.clicks:
        for link in scanner.links:
            tag = _retargeted(link, tracking)
            if tag is not None:
                edits.append((link.start, link.end, tag))
    if tracking.opens:
        at = scanner.body_end if scanner.body_end is not None else len(document)
        edits.append((at, at, tracking.pixel()))
    edits.sort(key=lambda edit: edit[0])
    pieces: list[str] = []
    cursor = 0
    for start, end, replacement in edits:
        pieces.append(document[cursor:start])
        pieces.append(replacement)
        cursor = end
    pieces.append(document[cursor:])
    return "".join(pieces)

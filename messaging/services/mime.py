"""The MIME bytes of an outgoing email, written directly: the message Django's
`EmailMultiAlternatives` makes (the same headers in the same order, the same parts and
transfer encodings), without the `email` package's object tree and header folder, which
cost about half a millisecond per message, more than everything else a worker does for
it.

What it writes: `multipart/alternative` with a text and an HTML part (or a lone text
part), UTF-8, each part `7bit` when ASCII, `8bit` otherwise, and quoted-printable when a
line is longer than the 998 bytes RFC 5322 allows, as Django does. Header values that
are ASCII are written as given, folded at spaces past 78 characters; others are RFC 2047
encoded words. Addresses go through Django's `sanitize_address` (IDNA, encoded display
names) unless they are plain ASCII `local@domain`, which it returns unchanged."""

import functools
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from email import quoprimime
from email.header import Header
from email.utils import formatdate, make_msgid

from django.core.mail import BadHeaderError
from django.core.mail.message import sanitize_address
from django.core.mail.utils import DNS_NAME

from messaging import conf

# Set from the message's own fields, never from its extra headers (as Django does).
_ADDRESS_HEADERS = frozenset({"from", "to", "cc", "reply-to"})

# RFC 5322: a line is at most 998 bytes besides its CRLF; 78 is the recommended width.
LINE_LIMIT = 998
FOLD_WIDTH = 78
CRLF = "\r\n"

# A dot-atom local part at a lower-case ASCII domain of labels IDNA leaves as they are:
# what `sanitize_address` returns unchanged.
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_PLAIN_ADDRESS = re.compile(rf"{_ATOM}(?:\.{_ATOM})*@[a-z0-9-]{{1,63}}(?:\.[a-z0-9-]{{1,63}})*")
_LINE_BREAKS = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Outgoing:
    """One message to write: its addresses, subject, extra headers (in order) and parts."""

    subject: str
    from_email: str
    to: Sequence[str]
    text: str
    html: str | None = None
    reply_to: Sequence[str] = ()
    headers: dict[str, str] = field(default_factory=dict)


@functools.lru_cache(maxsize=1024)
def _sanitized(address: str) -> str:
    return str(sanitize_address(address, "utf-8"))


def address(value: str) -> str:
    """The address as Django's SMTP backend and message headers write it."""
    if _PLAIN_ADDRESS.fullmatch(value):
        return value
    return _sanitized(value)


def _fold(line: str) -> str:
    """A header line folded before spaces so that lines stay within 78 characters where
    the words allow (unfolding gives the line back); a longer word stays whole."""
    if len(line) <= FOLD_WIDTH:
        return line
    words = line.split(" ")
    lines: list[str] = []
    current = words[0]
    for word in words[1:]:
        # Never leave a line of whitespace alone: RFC 5322 forbids it.
        if len(current) + 1 + len(word) > FOLD_WIDTH and current.strip():
            lines.append(current)
            current = " " + word
        else:
            current += " " + word
    lines.append(current)
    return CRLF.join(lines)


def header(name: str, value: str) -> str:
    """`Name: value` as written, folded; refuses line breaks in the value, as Django does
    (a header injection)."""
    if "\n" in value or "\r" in value:
        raise BadHeaderError(f"Header values can't contain newlines (got {value!r} for {name})")
    if value.isascii():
        return _fold(f"{name}: {value}")
    encoded = Header(value, "utf-8", header_name=name).encode(linesep=CRLF)
    return f"{name}: {encoded}"


def _part(content: str, subtype: str) -> tuple[list[str], str]:
    """The headers and the body (CRLF line ends) of one text part."""
    body = _LINE_BREAKS.sub(CRLF, content)
    if any(len(line.encode()) > LINE_LIMIT for line in body.split(CRLF)):
        # What Django does for long lines: quoted-printable of the UTF-8 bytes.
        encoding = "quoted-printable"
        body = quoprimime.body_encode(body.encode().decode("latin-1"), eol=CRLF)
    else:
        encoding = "7bit" if body.isascii() else "8bit"
    heads = [
        f'Content-Type: text/{subtype}; charset="utf-8"',
        "MIME-Version: 1.0",
        f"Content-Transfer-Encoding: {encoding}",
    ]
    return heads, body


def _boundary(bodies: Iterable[str]) -> str:
    texts = list(bodies)
    while True:
        boundary = f"==============={secrets.randbelow(10**19):019d}=="
        if not any(boundary in text for text in texts):
            return boundary


def mime_bytes(message: Outgoing, *, date: str | None = None) -> bytes:
    """The whole message, CRLF line ends, ready for SMTP DATA (dot-stuffing is the SMTP
    client's)."""
    text_heads, text_body = _part(message.text, "plain")
    lines: list[str] = []
    if message.html is None:
        lines.extend(text_heads)
    else:
        html_heads, html_body = _part(message.html, "html")
        boundary = _boundary((text_body, html_body))
        lines.append(f'Content-Type: multipart/alternative;{CRLF} boundary="{boundary}"')
        lines.append("MIME-Version: 1.0")
    lines.append(header("Subject", message.subject))
    lines.append(header("From", address(message.from_email)))
    if message.to:
        lines.append(header("To", ", ".join(address(value) for value in message.to)))
    if message.reply_to:
        lines.append(header("Reply-To", ", ".join(address(value) for value in message.reply_to)))
    names = {name.lower() for name in message.headers}
    if "date" not in names:
        lines.append(f"Date: {date or formatdate(localtime=conf.use_localtime())}")
    if "message-id" not in names:
        lines.append(f"Message-ID: {make_msgid(domain=str(DNS_NAME))}")
    lines.extend(
        header(name, value)
        for name, value in message.headers.items()
        if name.lower() not in _ADDRESS_HEADERS
    )
    lines.append("")
    if message.html is None:
        lines.append(text_body)
        return CRLF.join(lines).encode()
    for heads, body in ((text_heads, text_body), (html_heads, html_body)):
        lines.append(f"--{boundary}")
        lines.extend(heads)
        lines.append("")
        lines.append(body)
    lines.append(f"--{boundary}--")
    lines.append("")
    return CRLF.join(lines).encode()

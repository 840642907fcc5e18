"""The email as it leaves: its message assembled from the stored email, with the HTML's
CSS inlined, its links tracked and the open pixel added, a text part made when there is
none, the unsubscribe headers, and a DKIM signature when the sending domain has a key;
as a Django message for the backends that take one, or as the MIME bytes an SMTP server
receives (messaging/services/mime.py)."""

import logging
import re
from email.utils import parseaddr
from typing import Any

import css_inline
import dkim
from django.core.mail import EmailMultiAlternatives
from django.core.mail.message import SafeMIMEMultipart, SafeMIMEText

from messaging import conf
from messaging.models.emails import Email
from messaging.services.domains import DkimKey
from messaging.services.htmltools import LenientHTMLParser
from messaging.services.mime import Outgoing, mime_bytes
from messaging.services.tokens import unsubscribe_token
from messaging.services.tracking import Tracking, html_tracked

logger = logging.getLogger(__name__)


class _TextOf(LenientHTMLParser):
    """The readable text of an HTML part: blocks on their own lines, links with their
    address after the words, scripts and styles left out."""

    BLOCKS = frozenset({"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0
        self.href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "head", "title"):
            self.skip += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")
        elif tag == "a":
            self.href = dict(attrs).get("href")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "head", "title"):
            self.skip = max(self.skip - 1, 0)
        elif tag in self.BLOCKS:
            self.parts.append("\n\n")
        elif tag == "a" and self.href:
            self.parts.append(f" ({self.href})")
            self.href = None

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> str:
    """A plain-text part for an email given only as HTML."""
    parser = _TextOf()
    parser.feed(html)
    parser.close()
    lines = [line.strip() for line in "".join(parser.parts).splitlines()]
    text: list[str] = []
    for line in lines:
        if line or (text and text[-1]):
            text.append(line)
    return "\n".join(text).strip() + "\n"


_inliner = css_inline.CSSInliner(load_remote_stylesheets=False)


def inline_css(html: str) -> str:
    """`<style>` rules moved into `style` attributes (mail clients drop style blocks)."""
    try:
        return _inliner.inline(html)
    except Exception:
        logger.warning("CSS inlining failed; sending the HTML as written", exc_info=True)
        return html


HEADERS_TO_SIGN = (
    b"from",
    b"to",
    b"reply-to",
    b"subject",
    b"date",
    b"message-id",
    b"mime-version",
    b"content-type",
    b"list-unsubscribe",
    b"list-unsubscribe-post",
)


def dkim_signature(raw: bytes, key: DkimKey) -> bytes:
    """The `DKIM-Signature` header line (folded, CRLF-ended) for a message's bytes."""
    return bytes(
        dkim.sign(
            raw,
            key.selector.encode(),
            key.domain.encode(),
            key.private_key_pem.encode(),
            include_headers=list(HEADERS_TO_SIGN),
            canonicalize=(b"relaxed", b"relaxed"),
        )
    )


class SignedEmail(EmailMultiAlternatives):
    """A message that adds its DKIM signature when it is turned into MIME."""

    dkim_key: DkimKey | None = None

    def message(self, *, policy: Any = None) -> SafeMIMEText | SafeMIMEMultipart:
        message: SafeMIMEText | SafeMIMEMultipart = super().message()
        if self.dkim_key is None:
            return message
        signature = dkim_signature(message.as_bytes(linesep="\r\n"), self.dkim_key)
        name, _, value = signature.decode().partition(":")
        # Unfolded: relaxed canonicalisation ignores how the header is wrapped.
        message[name] = " ".join(value.split())
        return message


def outgoing_of(email: Email) -> Outgoing:
    """What an email's message says: its headers (Message-ID, X-Email-Id, one-click
    List-Unsubscribe) and parts: HTML with CSS inlined, its links tracked and the open
    pixel added (as the project's policies say), and a text part made when there is none.

    The text part keeps the original links: plain-text readers see the address itself,
    and an opaque redirect there reads like phishing."""
    html = inline_css(email.html) if email.html else None
    text = email.text if email.text else (html_to_text(html) if html else "")
    if html:
        project = email.project
        html = html_tracked(
            html,
            Tracking(email_id=email.id, opens=project.track_opens, clicks=project.track_clicks),
        )
    recipient = parseaddr(email.recipients[0])[1] if email.recipients else ""
    unsubscribe = f"{conf.public_base_url()}/u/{unsubscribe_token(email.id, recipient)}"
    return Outgoing(
        subject=email.subject,
        from_email=email.from_email,
        to=list(email.recipients),
        reply_to=[email.reply_to] if email.reply_to else [],
        text=text,
        html=html,
        headers={
            "Message-ID": email.message_id,
            "X-Email-Id": str(email.id),
            "List-Unsubscribe": f"<{unsubscribe}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
        },
    )


def build_message(
    email: Email, *, connection: Any = None, dkim_key: DkimKey | None = None
) -> SignedEmail:
    """The email as a Django message, for backends that take one (ESPs, the capture)."""
    outgoing = outgoing_of(email)
    message = SignedEmail(
        subject=outgoing.subject,
        body=outgoing.text,
        from_email=outgoing.from_email,
        to=list(outgoing.to),
        reply_to=list(outgoing.reply_to) or None,
        connection=connection,
        headers=dict(outgoing.headers),
    )
    if outgoing.html is not None:
        message.attach_alternative(outgoing.html, "text/html")
    message.dkim_key = dkim_key
    return message


def message_bytes(email: Email, *, dkim_key: DkimKey | None = None) -> bytes:
    """The email as the bytes an SMTP server receives, DKIM-signed when a key is given."""
    raw = mime_bytes(outgoing_of(email))
    if dkim_key is None:
        return raw
    # dkimpy's header, folded, goes first, as signers conventionally put it.
    return dkim_signature(raw, dkim_key) + raw

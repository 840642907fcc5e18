"""The message bytes written directly (`mime_bytes`) read back as the message Django's
`EmailMultiAlternatives` makes: the same headers in the same order, the same parts, the
same transfer encodings."""

from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any

import pytest
from django.core.mail import BadHeaderError, EmailMultiAlternatives
from django.core.mail.message import sanitize_address

from messaging.services.mime import Outgoing, address, header, mime_bytes

HEADERS = {
    "Message-ID": "<1.2.3@example.com>",
    "X-Email-Id": "4f1c3a52-0000-4000-8000-000000000001",
    "List-Unsubscribe": "<https://mail.example.org/u/" + "x" * 180 + ">",
    "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
}

CASES = {
    "ascii": Outgoing(
        subject="Your order 7 has shipped",
        from_email="Bench <bench@example.com>",
        to=["ada@example.net"],
        text="Hello there,\nOrder 7.\n",
        html="<html><body><p>Order 7</p></body></html>",
        headers=HEADERS,
    ),
    "unicode": Outgoing(
        subject="Votre commande n° 7 est partie — merci, Zoë ! " * 3,
        from_email="Équipe Zoë <team@example.com>",
        to=["Ada Lovelace <ada@example.net>", "bob@bücher.example"],
        reply_to=['"Help, Desk" <help@example.com>'],
        text="Bonjour Zoë,\r\nvotre commande est partie.\n",
        html="<p>Bonjour Zoë</p>\n<p>.leading dot</p>",
        headers=HEADERS,
    ),
    "long lines": Outgoing(
        subject="Long",
        from_email="team@example.com",
        to=["ada@example.net"],
        text="word " * 400,
        html="<p>" + "é" * 1200 + "</p>",
        headers=HEADERS,
    ),
    "text only": Outgoing(
        subject="Plain",
        from_email="team@example.com",
        to=["ada@example.net"],
        text="Just words.\n",
        headers=HEADERS,
    ),
}


def _django_bytes(outgoing: Outgoing) -> bytes:
    message = EmailMultiAlternatives(
        subject=outgoing.subject,
        body=outgoing.text,
        from_email=outgoing.from_email,
        to=list(outgoing.to),
        reply_to=list(outgoing.reply_to) or None,
        headers=dict(outgoing.headers),
    )
    if outgoing.html is not None:
        message.attach_alternative(outgoing.html, "text/html")
    return bytes(message.message().as_bytes(linesep="\r\n"))


def _read(raw: bytes) -> EmailMessage:
    message: Any = message_from_bytes(raw, policy=policy.default)
    return message  # type: ignore[no-any-return]


def _headers(message: EmailMessage) -> list[tuple[str, str]]:
    # Stripped: Django's refolding of an encoded subject reads back with a leading space.
    return [
        (name, str(value).strip())
        for name, value in message.items()
        if name not in ("Date", "Content-Type")
    ]


def _parts(message: EmailMessage) -> list[tuple[str, str, str]]:
    parts = list(message.iter_parts()) if message.is_multipart() else [message]
    return [
        (
            part.get_content_type(),
            str(part["Content-Transfer-Encoding"]),
            part.get_content().replace("\r\n", "\n"),
        )
        for part in parts
    ]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_bytes_read_as_djangos_message(case):
    outgoing = CASES[case]

    ours = _read(mime_bytes(outgoing))
    theirs = _read(_django_bytes(outgoing))

    assert _headers(ours) == _headers(theirs)
    assert ours.get_content_type() == theirs.get_content_type()
    assert _parts(ours) == _parts(theirs)
    assert ours["Date"]


def test_lines_end_in_crlf_and_stay_within_the_limit():
    raw = mime_bytes(CASES["long lines"])

    assert b"\n" not in raw.replace(b"\r\n", b"")
    assert max(len(line) for line in raw.split(b"\r\n")) <= 998
    headers = mime_bytes(CASES["unicode"]).split(b"\r\n\r\n")[0]
    # Encoded words fold; only the one long unsubscribe address cannot.
    assert [line for line in headers.split(b"\r\n") if len(line) > 78] == [
        b" <" + HEADERS["List-Unsubscribe"][1:].encode()
    ]


def test_long_headers_fold_at_spaces_and_unfold_to_the_value():
    value = " ".join(f"word{n}" for n in range(40))

    line = header("Subject", value)

    assert all(len(part) <= 78 for part in line.split("\r\n"))
    assert line.replace("\r\n", "") == f"Subject: {value}"


def test_a_line_break_in_a_header_is_refused():
    with pytest.raises(BadHeaderError):
        header("Subject", "Hi\r\nBcc: someone@example.com")


def test_a_message_id_is_made_when_none_is_given():
    outgoing = Outgoing(subject="x", from_email="a@example.com", to=["b@example.com"], text="x")

    assert _read(mime_bytes(outgoing))["Message-ID"]


@pytest.mark.parametrize(
    "value",
    [
        "ada@example.net",
        "Ada.Lovelace+news@mail.example.net",
        "Ada@Example.NET",
        "Ada Lovelace <ada@example.net>",
        '"Lovelace, Ada" <ada@example.net>',
        "a..b@example.net",
        "zoë@example.net",
        "ada@bücher.example",
        "Zoë <zoe@example.net>",
    ],
)
def test_addresses_are_written_as_django_writes_them(value):
    assert address(value) == sanitize_address(value, "utf-8")

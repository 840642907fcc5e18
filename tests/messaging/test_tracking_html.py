"""The rewriting of HTML parts and the signed tokens of tracking links, on their own."""

import secrets
import uuid

from django.core import signing

from messaging.services.assembly import html_to_text
from messaging.services.tokens import (
    click_token,
    click_token_read,
    open_token,
    open_token_read,
    unsubscribe_token,
)
from messaging.services.tracking import MAX_TRACKED_LINK_LENGTH, Tracking, html_tracked
from tests.messaging.tracking_helpers import BASE, parsed

EMAIL_ID = uuid.UUID("7b3c1c4e-5a47-4b43-9d7a-0f0b8f6b6a51")


def tracking(opens: bool = True, clicks: bool = True) -> Tracking:
    return Tracking(email_id=EMAIL_ID, opens=opens, clicks=clicks, base_url=BASE)


def click_target(href: str) -> str:
    assert href.startswith(f"{BASE}/t/c/"), href
    read = click_token_read(href.removeprefix(f"{BASE}/t/c/"))
    assert read is not None
    assert read.email_id == EMAIL_ID
    return read.url


def test_everything_but_the_rewritten_tags_stays_byte_for_byte():
    before = "<!DOCTYPE html>\r\n<html>\n<body>\n  <p class=x>Caf&eacute; <b>bold</b>\n"
    tag = "<A HREF='https://example.com/a' target=_blank>"
    after = "go</A>\n<!-- a comment -->\n  </p>\n</body>\n</html>\n"
    document = before + tag + after

    result = html_tracked(document, tracking(opens=False))

    assert result.startswith(before)
    assert result.endswith(after)
    rewritten = result[len(before) : -len(after)]
    [anchor] = parsed(rewritten).anchors
    assert click_target(anchor.href) == "https://example.com/a"
    assert anchor.attrs["target"] == "_blank"


def test_the_pixel_goes_before_the_last_closing_body_tag():
    document = "<html><body><p>Hi</p></body></html>"

    result = html_tracked(document, tracking(clicks=False))

    pixel = f'<img src="{BASE}/t/o/{open_token(EMAIL_ID)}" width="1" height="1" alt="">'
    assert result == f"<html><body><p>Hi</p>{pixel}</body></html>"


def test_without_a_body_tag_the_pixel_goes_at_the_end():
    result = html_tracked("<p>Hi</p>", tracking(clicks=False))

    assert result.startswith("<p>Hi</p><img ")
    assert result.endswith(' alt="">')


def test_links_in_comments_scripts_and_styles_are_left_alone():
    document = (
        '<!--[if mso]><a href="https://outlook.example.com">x</a><![endif]-->'
        "<script>document.write('<a href=\"https://script.example.com\">')</script>"
        '<style>a[href="https://style.example.com"] {}</style>'
        '<a href="https://real.example.com">real</a>'
    )

    result = html_tracked(document, tracking(opens=False))

    assert result.startswith(document[: document.index('<a href="https://real')])
    assert click_target(parsed(result).anchors[-1].href) == "https://real.example.com"


def test_only_absolute_web_links_outside_our_own_pages_are_tracked():
    kept = [
        "mailto:a@example.com",
        "tel:+1555",
        "sms:+1555",
        "#section",
        "/relative/path",
        "relative.html",
        "//example.com/scheme-relative",
        "javascript:alert(1)",
        "https://",
        f"{BASE}/u/token",
        f"{BASE}/t/c/already",
        "",
    ]
    document = "".join(f'<a href="{href}">x</a>' for href in kept)

    assert html_tracked(document, tracking(opens=False)) == document


def test_entities_and_spaces_in_an_href_are_read_as_a_browser_reads_them():
    document = '<a href="  HTTPS://Example.com/?a=1&amp;b=2&#38;c=3\n">x</a>'

    [anchor] = parsed(html_tracked(document, tracking(opens=False))).anchors

    assert click_target(anchor.href) == "HTTPS://Example.com/?a=1&b=2&c=3"


def test_attributes_without_values_and_self_closing_tags_survive():
    document = '<a download href="https://example.com/f.pdf" data-x="a&quot;b"/>'

    result = html_tracked(document, tracking(opens=False))

    assert result.startswith("<a download href=")
    assert result.endswith(' data-x="a&quot;b" />')


def test_a_link_too_long_to_track_is_left_as_written():
    # Random, so compressing the token cannot make it short again.
    url = "https://example.com/?q=" + secrets.token_urlsafe(MAX_TRACKED_LINK_LENGTH)
    document = f'<a href="{url}">x</a><a href="https://example.com/short">y</a>'

    anchors = parsed(html_tracked(document, tracking(opens=False))).anchors

    assert anchors[0].href == url
    assert click_target(anchors[1].href) == "https://example.com/short"


def test_with_both_policies_off_the_document_is_returned_unchanged():
    document = '<body><a href="https://example.com">x</a></body>'

    assert html_tracked(document, tracking(opens=False, clicks=False)) is document


def test_broken_html_is_tracked_without_losing_content():
    document = '<p><a href="https://example.com/a">one<a href="https://example.com/b">two</p></div>'

    result = html_tracked(document, tracking())

    assert [click_target(a.href) for a in parsed(result).anchors] == [
        "https://example.com/a",
        "https://example.com/b",
    ]
    assert "one" in result
    assert "two</p></div><img " in result


def test_tracking_tokens_are_short_and_read_back():
    url = "https://shop.example.com/spring?utm_source=newsletter&utm_medium=email"

    assert len(open_token(EMAIL_ID)) == 76
    assert open_token_read(open_token(EMAIL_ID)) == EMAIL_ID
    token = click_token(EMAIL_ID, url)
    assert len(token) < 250
    read = click_token_read(token)
    assert read is not None
    assert (read.email_id, read.url) == (EMAIL_ID, url)


def test_tampered_or_foreign_tokens_read_as_nothing():
    opened, clicked = open_token(EMAIL_ID), click_token(EMAIL_ID, "https://example.com")

    assert open_token_read(opened[:-1] + ("A" if opened[-1] != "A" else "B")) is None
    assert open_token_read("x" + opened[1:]) is None
    assert click_token_read(("X" if clicked[0] != "X" else "Y") + clicked[1:]) is None
    assert open_token_read(clicked) is None
    assert click_token_read(opened) is None
    assert open_token_read(unsubscribe_token(EMAIL_ID, "a@example.com")) is None
    assert (
        click_token_read(signing.Signer(salt="messaging.click").sign_object("just a string"))
        is None
    )
    assert open_token_read(signing.Signer(salt="messaging.open").sign("not-a-uuid")) is None
    for garbage in ("", ":", "a:b", "..:", "%%%"):
        assert open_token_read(garbage) is None
        assert click_token_read(garbage) is None


def test_a_click_token_never_sends_anyone_to_a_non_web_address():
    assert click_token_read(click_token(EMAIL_ID, "javascript:alert(1)")) is None
    assert click_token_read(click_token(EMAIL_ID, "//evil.example.com")) is None


def test_a_malformed_marked_section_is_read_as_a_browser_reads_it():
    # Python 3.11's tokenizer raises on this; browsers take `<![ ...>` as a bogus comment.
    document = (
        '<body><![ broken <a href="https://a.example.com">a</a>\n'
        '<a href="https://b.example.com">b</a></body>'
    )

    result = html_tracked(document, tracking())

    assert result.startswith('<body><![ broken <a href="https://a.example.com">a</a>\n<a href=')
    assert click_target(parsed(result).anchors[-1].href) == "https://b.example.com"
    assert result.endswith(' alt=""></body>')
    assert html_to_text(document).strip().endswith("b (https://b.example.com)")

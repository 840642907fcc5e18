"""Views of the links in sent mail. Plain Django views, not API views: they answer an
image, a redirect and HTML pages, and are left out of the OpenAPI document. The
preference page has a module of its own (preferences.py).

A tampered or malformed token is 404 (in the error envelope, like every error of the
service). HEAD answers like GET but records nothing: link checkers and scanners send it.
A failure to record an open or a click is logged and the image or redirect is served
anyway: the reader's click matters more than its count."""

import base64
import logging
from email.utils import parseaddr

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.multipartparser import MultiPartParserError
from django.shortcuts import render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from messaging.models import Email
from messaging.selectors.emails import email_get_for_link
from messaging.services.engagement import (
    email_click_record,
    email_open_record,
    email_unsubscribe_record,
)
from messaging.services.tokens import click_token_read, open_token_read, unsubscribe_token_read

logger = logging.getLogger(__name__)

# A transparent 1x1 GIF (43 bytes).
PIXEL = base64.b64decode("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7")


def _private(response: HttpResponse) -> HttpResponse:
    """Never cached (each open and click must reach us) and never indexed."""
    add_never_cache_headers(response)
    response["Pragma"] = "no-cache"
    response["X-Robots-Tag"] = "noindex, nofollow"
    return response


# Exempt so that other methods answer 405 like every other path, not a CSRF 403: these
# views accept only GET and HEAD, which CSRF checks never cover.
@csrf_exempt
@require_http_methods(["GET", "HEAD"])
def open_pixel(request: HttpRequest, token: str) -> HttpResponse:
    """`GET /t/o/{token}`: the pixel; records the open."""
    email_id = open_token_read(token)
    if email_id is None:
        raise Http404
    if request.method == "GET":
        try:
            email_open_record(email_id=email_id, source="pixel")
        except Exception:
            logger.exception("Recording an open of email %s failed", email_id)
    return _private(HttpResponse(PIXEL, content_type="image/gif"))


@csrf_exempt  # As above: GET and HEAD only.
@require_http_methods(["GET", "HEAD"])
def click_redirect(request: HttpRequest, token: str) -> HttpResponse:
    """`GET /t/c/{token}`: 302 to the original link; records the click. The link is the
    one the token signed, so the redirect is never open to other targets."""
    click = click_token_read(token)
    if click is None:
        raise Http404
    if request.method == "GET":
        try:
            email_click_record(email_id=click.email_id, url=click.url, source="redirect")
        except Exception:
            logger.exception("Recording a click of email %s failed", click.email_id)
    return _private(HttpResponseRedirect(click.url))


def _sender(email: Email) -> str:
    name, address = parseaddr(email.from_email)
    return name or address or email.project.name


def _is_one_click(request: HttpRequest) -> bool:
    """Whether the body is RFC 8058's `List-Unsubscribe=One-Click` (a mail client's
    one-click request); a body that cannot be read is not one."""
    try:
        return request.POST.get("List-Unsubscribe") == "One-Click"
    except (MultiPartParserError, ValueError):
        return False


@csrf_exempt  # Mail clients post RFC 8058 one-click requests with no session or token.
@require_http_methods(["GET", "HEAD", "POST"])
def unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    """`GET /u/{token}`: a page asking to confirm; `POST`: unsubscribes and confirms.
    GET changes nothing (scanners follow links in mail)."""
    link = unsubscribe_token_read(token)
    if link is None:
        raise Http404
    if request.method == "POST":
        source = "one_click" if _is_one_click(request) else "link"
        done = email_unsubscribe_record(
            email_id=link.email_id, recipient=link.recipient, source=source
        )
        if done is None:
            raise Http404
        context = {
            "recipient": done.recipient,
            "topic": done.topic,
            "sender": _sender(done.email),
            "changed": done.changed,
        }
        return _private(render(request, "messaging/unsubscribed.html", context))
    email = email_get_for_link(email_id=link.email_id)
    if email is None:
        raise Http404
    context = {
        "recipient": link.recipient,
        "topic": email.topic,
        "sender": _sender(email),
        "action": request.path,
    }
    return _private(render(request, "messaging/unsubscribe.html", context))

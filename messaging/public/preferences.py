"""The preference page `/p/{token}`: a contact's topics with its status, saved with a
plain form post, and "unsubscribe from all". No JavaScript and nothing loaded from
elsewhere (a Content-Security-Policy says so to the browser).

CSRF: the page is exempt from Django's cookie-based check and sets no cookie. The signed
token in its URL is the credential: a forged cross-site post would have to know it, and
whoever knows it can use the page anyway, so a CSRF token would protect nothing more.
What remains is kept out: a post the browser marks as cross-site (`Sec-Fetch-Site:
cross-site`) is 403, the page is never framed (`X-Frame-Options: DENY`,
`frame-ancestors 'none'`), posts only to itself (`form-action 'self'`) and sends no
`Referer` (so the token does not leak to any link)."""

from typing import Any

from django.core.exceptions import BadRequest, PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.multipartparser import MultiPartParserError
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from contacts.selectors import contact_get_for_link
from contacts.topics.models import SubscriptionSource
from messaging.public.views import _private
from messaging.selectors.preferences import Preferences, is_subscribed, preferences_get
from messaging.services.preferences import preferences_update
from messaging.services.tokens import preferences_token_read

# Inline styles only (the page's own), forms only to itself, nothing else at all.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SAVE, UNSUBSCRIBE_ALL = "save", "unsubscribe_all"


def _page(response: HttpResponse) -> HttpResponse:
    response = _private(response)
    response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response["Referrer-Policy"] = "no-referrer"
    response["X-Frame-Options"] = "DENY"
    return response


def _form(request: HttpRequest) -> tuple[str, set[str], set[str]]:
    """The button pressed, the topics the page showed and the ones left ticked."""
    try:
        form = request.POST
        action = form.get("action") or SAVE
        shown, ticked = set(form.getlist("shown")), set(form.getlist("topic"))
    except (MultiPartParserError, ValueError):
        raise BadRequest("The form could not be read.") from None
    if action not in (SAVE, UNSUBSCRIBE_ALL):
        raise BadRequest("Unknown action.")
    return action, shown, ticked


def _save(preferences: Preferences, action: str, shown: set[str], ticked: set[str]) -> None:
    contact = preferences.contact
    # Only the topics the page showed change: one made since keeps its status, and a
    # topic deleted since is left out rather than refused.
    current = [str(status.topic.id) for status in preferences.topics]
    listed = [topic_id for topic_id in current if topic_id in shown]
    unsubscribed_all: bool | None = None
    if action == UNSUBSCRIBE_ALL:
        topics = [{"topic_id": topic_id, "subscribed": False} for topic_id in current]
        # Without an address there is nothing to suppress: its topics are all there is.
        unsubscribed_all = True if contact.email else None
    else:
        topics = [{"topic_id": topic_id, "subscribed": topic_id in ticked} for topic_id in listed]
        # Ticking a topic after unsubscribing from all means to receive it again; a
        # bounce, a complaint or the project's own entry stays.
        if preferences.chosen_by_contact and any(item["subscribed"] for item in topics):
            unsubscribed_all = False
    preferences_update(
        project=contact.project,
        contact_id=contact.id,
        topics=topics,
        unsubscribed_all=unsubscribed_all,
        source=SubscriptionSource.PREFERENCE_CENTER,
    )


@csrf_exempt  # The token is the credential; see the module's docstring.
@require_http_methods(["GET", "HEAD", "POST"])
def preference_page(request: HttpRequest, token: str) -> HttpResponse:
    """`GET /p/{token}`: the contact's topics and "unsubscribe from all"; `POST`: saves
    the form at once and shows the page again (303, so a reload does not post again)."""
    contact_id = preferences_token_read(token)
    if contact_id is None:
        raise Http404
    contact = contact_get_for_link(contact_id=contact_id)
    if contact is None:
        raise Http404
    if request.method == "POST":
        if request.headers.get("Sec-Fetch-Site") == "cross-site":
            raise PermissionDenied("The preference page takes posts from itself only.")
        action, shown, ticked = _form(request)
        _save(preferences_get(project=contact.project, contact=contact), action, shown, ticked)
        return _page(HttpResponseRedirect(f"{request.path}?saved=1", status=303))
    preferences = preferences_get(project=contact.project, contact=contact)
    context: dict[str, Any] = {
        "sender": contact.project.name,
        "address": contact.email,
        "topics": [
            {
                "id": str(status.topic.id),
                "name": status.topic.name,
                "description": status.topic.description,
                "subscribed": is_subscribed(status),
            }
            for status in preferences.topics
        ],
        "unsubscribed_all": preferences.unsubscribed_all,
        "chosen_by_contact": preferences.chosen_by_contact,
        "saved": request.GET.get("saved") == "1",
        "action": request.path,
    }
    return _page(render(request, "messaging/preferences.html", context))

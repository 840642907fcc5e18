"""django-anymail's tracking webhook views, one per ESP, each behind a guard: a webhook
that cannot tell the ESP from anyone else is not served, a failed check answers 401, and
every answer is the API's envelope."""

import json
import logging
import warnings
from collections.abc import Callable
from typing import Any

from anymail.exceptions import (
    AnymailAPIError,
    AnymailInsecureWebhookWarning,
    AnymailWebhookValidationFailure,
)
from anymail.webhooks.amazon_ses import AmazonSESTrackingWebhookView
from anymail.webhooks.brevo import BrevoTrackingWebhookView
from anymail.webhooks.mailersend import MailerSendTrackingWebhookView
from anymail.webhooks.mailgun import MailgunTrackingWebhookView
from anymail.webhooks.mailjet import MailjetTrackingWebhookView
from anymail.webhooks.mailtrap import MailtrapTrackingWebhookView
from anymail.webhooks.mandrill import MandrillCombinedWebhookView
from anymail.webhooks.postal import PostalTrackingWebhookView
from anymail.webhooks.postmark import PostmarkTrackingWebhookView
from anymail.webhooks.resend import ResendTrackingWebhookView
from anymail.webhooks.sendgrid import SendGridTrackingWebhookView
from anymail.webhooks.sendinblue import SendinBlueTrackingWebhookView
from anymail.webhooks.sparkpost import SparkPostTrackingWebhookView
from anymail.webhooks.unisender_go import UnisenderGoTrackingWebhookView
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponseBase, JsonResponse
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from django.views.generic import View

from config.api.envelope import error_body
from config.api.exceptions import status_error_body

logger = logging.getLogger(__name__)

# Anymail warns that a webhook without basic auth is open to anyone; the guard below does
# not serve such a webhook at all, and logs why on each refused call.
warnings.filterwarnings("ignore", category=AnymailInsecureWebhookWarning)

# The ESP's name in the path (`/webhooks/email/<esp>`, as in anymail's own URLs) -> the
# view anymail 15.2 gives for its delivery and engagement events. Mandrill has one view
# for tracking and inbound; `sendinblue` is Brevo's former name, kept for old set-ups.
TRACKING_VIEWS: dict[str, type[View]] = {
    "amazon_ses": AmazonSESTrackingWebhookView,
    "brevo": BrevoTrackingWebhookView,
    "mailersend": MailerSendTrackingWebhookView,
    "mailgun": MailgunTrackingWebhookView,
    "mailjet": MailjetTrackingWebhookView,
    "mailtrap": MailtrapTrackingWebhookView,
    "mandrill": MandrillCombinedWebhookView,
    "postal": PostalTrackingWebhookView,
    "postmark": PostmarkTrackingWebhookView,
    "resend": ResendTrackingWebhookView,
    "sendgrid": SendGridTrackingWebhookView,
    "sendinblue": SendinBlueTrackingWebhookView,
    "sparkpost": SparkPostTrackingWebhookView,
    "unisender_go": UnisenderGoTrackingWebhookView,
}

NOT_AUTHENTICATED = (
    "The webhook's credentials or signature do not match ANYMAIL_WEBHOOK_SECRET or the "
    "ESP's signing key."
)


class MalformedPayload(Exception):
    """The body of a call is not what the ESP sends."""

    def __init__(self, *, invalid_json: bool) -> None:
        super().__init__()
        self.invalid_json = invalid_json


class GuardedWebhook:
    """Mixed in front of an anymail webhook view.

    Anymail serves a webhook without any check when neither basic auth (WEBHOOK_SECRET)
    nor the ESP's signature is configured, and fails with a 500 when a required signing
    key or library is missing. Either way such a webhook is not served here (404, and a
    warning in the log): anyone could otherwise bounce or complain on any address. A
    failed check (anymail's 400) answers 401 `unauthenticated`, a body anymail cannot
    parse 400 (not a 500, which the sender would retry), and the empty 200 of an accepted
    post the success envelope."""

    refusal: str | None = None
    esp_name: str

    def __init__(self, **kwargs: Any) -> None:
        try:
            super().__init__(**kwargs)
        except ImproperlyConfigured as error:
            self.refusal = str(error)
            return
        # anymail's own notion of "no other check configured" (a signing key clears it).
        if getattr(self, "warn_if_no_basic_auth", False) and not getattr(self, "basic_auth", None):
            self.refusal = "Neither ANYMAIL_WEBHOOK_SECRET nor a signing key is set."

    @method_decorator(csrf_exempt)
    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if self.refusal is not None:
            logger.warning("The %s webhook is not configured: %s", self.esp_name, self.refusal)
            details = f"The {self.esp_name} webhook is not configured on this server."
            return JsonResponse(status_error_body(404, details), status=404)
        try:
            # A mixin over anymail's untyped webhook views, which define these three.
            response: HttpResponseBase = super().dispatch(  # type: ignore[misc]
                request, *args, **kwargs
            )
        except AnymailWebhookValidationFailure as error:
            logger.warning("A %s webhook call was refused: %s", self.esp_name, error)
            body = error_body(status=401, code="unauthenticated", message=NOT_AUTHENTICATED)
            return JsonResponse(body, status=401)
        except MalformedPayload as error:
            if error.invalid_json:
                body = error_body(
                    status=400, code="invalid_json", message="The body is not valid JSON."
                )
            else:
                message = f"The body is not a {self.esp_name} tracking event."
                body = error_body(status=400, code="validation_error", message=message)
            return JsonResponse(body, status=400)
        if response.status_code == 200 and request.method == "POST":
            return JsonResponse({"status": 200, "data": None})
        return response

    # Only anymail's own reading of the body is narrowed to a 400: a failure while an
    # event is recorded stays a 500, so the ESP sends the event again.
    def run_validators(self, request: HttpRequest) -> None:
        try:
            # A mixin over anymail's untyped webhook views (see dispatch).
            super().run_validators(request)  # type: ignore[misc]
        except AnymailAPIError as error:
            # Amazon SES reads the SNS envelope while validating (a JSON error is the cause).
            raise MalformedPayload(invalid_json=isinstance(error.__cause__, ValueError)) from error

    def parse_events(self, request: HttpRequest) -> list[Any]:
        try:
            # A mixin over anymail's untyped webhook views (see dispatch).
            events: list[Any] = super().parse_events(request)  # type: ignore[misc]
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise MalformedPayload(invalid_json=True) from error
        except (ValueError, LookupError, TypeError, AttributeError, AnymailAPIError) as error:
            raise MalformedPayload(invalid_json=False) from error
        return events


def tracking_view(view_class: type[View]) -> Callable[..., HttpResponseBase]:
    """The guarded view function of one anymail webhook view class."""
    guarded: type[View] = type(f"Guarded{view_class.__name__}", (GuardedWebhook, view_class), {})
    return guarded.as_view()

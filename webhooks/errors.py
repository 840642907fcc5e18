"""Errors of the webhooks family."""

from config.api.errors import Conflict


class EndpointDisabled(Conflict):
    message = "The endpoint is disabled; re-enable it (PATCH `disabled: false`) first."


class DeliveryInProgress(Conflict):
    message = "The delivery is being attempted right now; replay it once the attempt ends."

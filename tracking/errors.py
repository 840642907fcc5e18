"""Errors of the Segment-compatible endpoints."""

from config.api.errors import RequestTooLarge


class MessageTooLarge(RequestTooLarge):
    """A message of a batch over Segment's 32 KB (the whole batch is refused)."""

    message = "A message of the batch is larger than 32 KB."

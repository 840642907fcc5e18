"""Errors of event ingest (answered to clients) and of event processing (kept on the row)."""

from config.api.errors import Unprocessable
from config.workqueue.errors import WorkError


class ReservedEventName(Unprocessable):
    code = "reserved_event_name"
    message = "Event names starting with `sendrealm.` are reserved for system events."


class PayloadTooLarge(Unprocessable):
    code = "payload_too_large"
    message = "The serialised payload is larger than the project's event_payload_limit_bytes."


class ProcessingError(WorkError):
    """Processing could not finish. Transient errors retry with backoff; permanent ones
    go to the dead-letter queue at once, since retrying cannot change their outcome."""

    code = "processing_error"
    permanent = False


class ContactNotFound(ProcessingError):
    """No active contact matches the event's identity (yet)."""

    code = "contact_not_found"


class UnknownContactId(ContactNotFound):
    """`contact_id` names no active contact of the project and nothing else identifies one."""

    code = "unknown_contact_id"
    permanent = True

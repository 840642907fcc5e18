"""Domain errors: every service raises one of these; the exception handler renders it."""

from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Issue:
    """One validation problem, located by a dotted path into the request body."""

    code: str
    path: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "path": self.path, "message": self.message}


class ServiceError(Exception):
    """Base of all domain errors: a stable code, a message and the HTTP status."""

    code = "internal_error"
    status = 500
    message = "Something went wrong."

    def __init__(
        self,
        message: str | None = None,
        *,
        details: str = "",
        issues: list[Issue] | None = None,
        code: str | None = None,
        status: int | None = None,
    ) -> None:
        self.message = message or self.message
        self.details = details
        self.issues = issues or []
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        super().__init__(self.message)

    def response_headers(self) -> dict[str, str]:
        """HTTP headers the error's answer carries besides the envelope."""
        return {}


class ValidationFailed(ServiceError):
    code = "validation_error"
    status = 400
    message = "The request is not valid."

    @classmethod
    def at(cls, path: str, message: str, *, code: str = "invalid") -> "ValidationFailed":
        """A validation error with a single issue at `path`."""
        return cls(message, issues=[Issue(code=code, path=path, message=message)])


class InvalidJson(ServiceError):
    code = "invalid_json"
    status = 400
    message = "The request body is not valid JSON."


class RequestTooLarge(ServiceError):
    code = "request_too_large"
    status = 413
    message = "The request body is larger than this endpoint accepts."


class UnsupportedMediaType(ServiceError):
    code = "unsupported_media_type"
    status = 415
    message = "The body's media type is not supported here."


class Unauthenticated(ServiceError):
    code = "unauthenticated"
    status = 401
    message = "The API key is missing or invalid."


class Forbidden(ServiceError):
    code = "forbidden"
    status = 403
    message = "The API key has no access to this project or action."


class NotFound(ServiceError):
    code = "not_found"
    status = 404
    message = "The resource does not exist."


class MethodNotAllowed(ServiceError):
    code = "method_not_allowed"
    status = 405
    message = "This method is not allowed on this path."


class Conflict(ServiceError):
    code = "conflict"
    status = 409
    message = "The request conflicts with the current state of the resource."


class IdempotencyConflict(ServiceError):
    code = "idempotency_conflict"
    status = 409
    message = "The idempotency key was already used for a different request."


class Unprocessable(ServiceError):
    """422 family: the request is well formed but cannot be carried out."""

    code = "unprocessable"
    status = 422
    message = "The request could not be processed."


class PayloadTooLarge(Unprocessable):
    """A stored JSON value (contact fields, member properties) over its project's bound."""

    code = "payload_too_large"
    message = "The value is larger than the project allows."


def or_404(found: T | None, message: str) -> T:
    """What a selector found, or 404 `not_found` with `message` when it found nothing."""
    if found is None:
        raise NotFound(message)
    return found

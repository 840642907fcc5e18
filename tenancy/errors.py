"""Tenancy's errors: a key that must name a project, prepared actions that no longer
apply, plan limits and the request rate limit, on the bases of config.api.errors."""

from typing import Any

from config.api.errors import ServiceError, Unprocessable


class ProjectRequired(ServiceError):
    code = "project_required"
    status = 400
    message = "Personal keys must name a project with the X-Service-Project-Id header."


class PreparedActionExpired(Unprocessable):
    code = "prepared_action_expired"
    message = "The prepared action has expired; prepare it again."


class PreparedActionInvalid(Unprocessable):
    code = "prepared_action_invalid"
    message = "The prepared action does not match this operation, resource or key."


class PlanLimitExceeded(Unprocessable):
    code = "plan_limit_exceeded"
    message = "The plan limit for this operation is reached."


class RateLimited(ServiceError):
    code = "rate_limited"
    status = 429
    message = "Too many requests; slow down."

    def __init__(
        self, message: str | None = None, *, retry_after: int = 1, decision: Any = None, **kw: Any
    ) -> None:
        super().__init__(message, **kw)
        # Seconds the client should wait (the Retry-After header).
        self.retry_after = retry_after
        # The limiter's decision, whose headers the answer carries.
        self.decision = decision

    def response_headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}

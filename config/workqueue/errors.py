"""Errors of work items: what an attempt raises decides whether the row retries."""


class WorkError(Exception):
    """An attempt could not finish. Transient errors (the default) retry with backoff;
    permanent ones go to the dead-letter queue at once, since retrying cannot change
    their outcome. `code` is kept on the row (`error_code`) for the dead-letter filter."""

    code = "work_error"
    permanent = False
    # Seconds the other side asked us to wait (an HTTP `Retry-After`); the retry waits at
    # least that long, whatever the backoff says.
    retry_after: float | None = None

    def __init__(
        self, message: str = "", *, code: str | None = None, permanent: bool | None = None
    ):
        super().__init__(message)
        if code is not None:
            self.code = code
        if permanent is not None:
            self.permanent = permanent


class WorkerLost(WorkError):
    """The worker holding the claim died; the lease ran out."""

    code = "worker_lost"


class TimeLimitReached(WorkError):
    """The task's soft time limit ran out while the row was held; it is retried as any
    failed attempt is."""

    code = "time_limit"


class CommitFailed(WorkError):
    """The transaction of the row's batch failed at its commit (a serialization failure or
    deadlock found then, a deferred constraint, the connection lost), so nothing the
    attempt did was kept; it is retried as any failed attempt is."""

    code = "commit_failed"

"""The id of the request (or task) the current code works for: set by the request
middleware and, in workers, from the headers of the task being run; written into every
log line and into the headers of every task published on its behalf (config/celery.py)."""

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token

_request_id: ContextVar[str | None] = ContextVar("request_id", default=None)

# What a client may send as X-Request-Id; anything else is replaced by a fresh id.
_VALID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def current_request_id() -> str | None:
    return _request_id.get()


def request_id_from(given: str | None) -> str:
    """The client's id when it is a sane token, else a new one."""
    if given and _VALID.fullmatch(given):
        return given
    return uuid.uuid4().hex


@contextmanager
def request_id_bound(request_id: str | None) -> Iterator[None]:
    """Runs the block on behalf of `request_id`."""
    token = _request_id.set(request_id)
    try:
        yield
    finally:
        _request_id.reset(token)


def request_id_set(request_id: str | None) -> Token[str | None]:
    """Binds `request_id` until `request_id_reset(token)` (signal pairs such as Celery's
    task_prerun and task_postrun)."""
    return _request_id.set(request_id)


def request_id_reset(token: Token[str | None]) -> None:
    _request_id.reset(token)

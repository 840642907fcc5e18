"""The hook points of messaging: push sending lives in the push providers family, which
messaging never imports, so a test send of a push template goes through the sender that
family registers here (by dotted path, in its apps.py).

The sender runs inside the caller's request like any service: it validates, stores the
push message in its own transaction and queues the delivery after commit."""

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from config.hooks import Handlers

if TYPE_CHECKING:
    from messaging.models import TemplateVersion
    from tenancy.models import Project


class PushTestSender(Protocol):
    def __call__(
        self,
        *,
        project: "Project",
        version: "TemplateVersion",
        installation_id: uuid.UUID,
        data: Mapping[str, Any] | None,
        contact_id: uuid.UUID | None,
    ) -> uuid.UUID:
        """Sends `version` rendered once to the installation; the push message's id."""
        ...


_push_test_senders: Handlers[PushTestSender] = Handlers()


def register_push_test_sender(handler: PushTestSender | str) -> PushTestSender | str:
    """Installs the sender of push template tests: a callable, or the dotted path of one,
    imported at the first push test send."""
    return _push_test_senders.register(handler)


def unregister_push_test_sender(handler: PushTestSender | str) -> None:
    _push_test_senders.unregister(handler)


def push_test_sender() -> PushTestSender | None:
    """The registered sender (the first one), or None while push sending is not installed."""
    senders = _push_test_senders.all()
    return senders[0] if senders else None

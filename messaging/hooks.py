"""The hook points of messaging: push sending lives in the push providers family, which
messaging never imports, so a test send of a push template and push campaigns go through
the handlers that family registers here (by dotted path, in its apps.py).

The test sender runs inside the caller's request like any service: it validates, stores
the push message in its own transaction and queues the delivery after commit. The push
campaign handlers run inside the caller's transaction (a fan-out batch), so their
messages commit with the batch's recipient rows or not at all."""

import datetime as dt
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from config.registries.hooks import Handlers

if TYPE_CHECKING:
    from contacts.models import Contact
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


# --- push campaigns --------------------------------------------------------------------------


class PushAppResolver(Protocol):
    def __call__(self, *, project: "Project", app_ref: str) -> uuid.UUID | None:
        """The id of the project's push app named by `app_ref` (its id or public id)."""
        ...


class PushCampaignSender(Protocol):
    def __call__(
        self,
        *,
        project: "Project",
        campaign_id: uuid.UUID,
        app_id: uuid.UUID,
        version: "TemplateVersion",
        contacts: Sequence["Contact"],
        not_before: Mapping[uuid.UUID, dt.datetime],
    ) -> set[uuid.UUID]:
        """Stores one push message per contact (the version rendered for it) to its active
        installations of the app, in the caller's transaction, and wakes the delivery
        after commit (a contact of `not_before`, in its quiet hours, is delivered no
        earlier than then); returns the ids of the contacts that had an installation."""
        ...


@dataclass(frozen=True)
class PushCampaignProgress:
    """A push campaign's messages by what became of them."""

    queued: int = 0
    sent: int = 0
    failed: int = 0
    opened: int = 0


class PushCampaignProgressReader(Protocol):
    def __call__(
        self, *, campaign_ids: Collection[uuid.UUID]
    ) -> dict[uuid.UUID, PushCampaignProgress]:
        """The progress of each campaign that has messages (others are left out)."""
        ...


_push_app_resolvers: Handlers[PushAppResolver] = Handlers()
_push_campaign_senders: Handlers[PushCampaignSender] = Handlers()
_push_campaign_progress: Handlers[PushCampaignProgressReader] = Handlers()


def register_push_campaign_handlers(
    *,
    app_resolver: PushAppResolver | str,
    sender: PushCampaignSender | str,
    progress: PushCampaignProgressReader | str,
) -> None:
    """Installs what push campaigns need of push sending: resolving an app, sending a
    fan-out batch, and reading the campaign's progress (callables or dotted paths)."""
    _push_app_resolvers.register(app_resolver)
    _push_campaign_senders.register(sender)
    _push_campaign_progress.register(progress)


def push_app_resolver() -> PushAppResolver | None:
    found = _push_app_resolvers.all()
    return found[0] if found else None


def push_campaign_sender() -> PushCampaignSender | None:
    found = _push_campaign_senders.all()
    return found[0] if found else None


def push_campaign_progress() -> PushCampaignProgressReader | None:
    found = _push_campaign_progress.all()
    return found[0] if found else None

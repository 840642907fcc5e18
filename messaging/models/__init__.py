"""The messaging family's models, one module per sub-domain."""

from messaging.models.campaigns import (
    CANCELABLE_STATUSES,
    Campaign,
    CampaignAwaitingReview,
    CampaignFanout,
    CampaignRecipient,
    CampaignStatus,
    RecipientStatus,
    SkipReason,
)
from messaging.models.domains import Domain, DomainRecord, DomainStatus, RecordPurpose
from messaging.models.emails import (
    CapturedMessage,
    DeadLetteredEmailDelivery,
    Email,
    EmailDelivery,
    EmailKey,
    EmailStatus,
    EspEventReceipt,
)
from messaging.models.policy import ContactSends
from messaging.models.stats import DELIVERY_FIGURES, DeliveryDay
from messaging.models.suppressions import Suppression, SuppressionReason
from messaging.models.templates import Channel, MessageTemplate, TemplateVersion, VersionState

__all__ = [
    "CANCELABLE_STATUSES",
    "DELIVERY_FIGURES",
    "Campaign",
    "CampaignAwaitingReview",
    "CampaignFanout",
    "CampaignRecipient",
    "CampaignStatus",
    "CapturedMessage",
    "Channel",
    "ContactSends",
    "DeadLetteredEmailDelivery",
    "DeliveryDay",
    "Domain",
    "DomainRecord",
    "DomainStatus",
    "Email",
    "EmailDelivery",
    "EmailKey",
    "EmailStatus",
    "EspEventReceipt",
    "MessageTemplate",
    "RecipientStatus",
    "RecordPurpose",
    "SkipReason",
    "Suppression",
    "SuppressionReason",
    "TemplateVersion",
    "VersionState",
]

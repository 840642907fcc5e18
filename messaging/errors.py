"""Errors of the messaging family."""

from config.api.errors import Conflict, Issue, Unprocessable


class NoDraftToPublish(Conflict):
    message = "The template has no draft to publish; edit it (PATCH) or restore a version first."


class DraftIncomplete(Conflict):
    """A draft that could not be sent as it stands (an email without a subject)."""

    message = "The draft is not complete enough to publish."

    def __init__(self, issues: list[Issue]) -> None:
        super().__init__(issues=issues)


class TemplateRenderFailed(Unprocessable):
    """Valid Liquid that fails on the data it was given (a loop past the bound, a division
    by zero); `details` names the member and line."""

    code = "template_render_error"
    message = "The template could not be rendered with this data."


class DomainTaken(Conflict):
    """The project already has this sending domain."""

    message = "This project already has this domain."

    def __init__(self) -> None:
        super().__init__(
            issues=[Issue(code="taken", path="name", message="The project has this domain.")]
        )


class CampaignTransitionNotAllowed(Conflict):
    """An action the campaign's status does not allow (submit twice, edit after submit,
    send before approval, anything after `canceled`); nothing was changed."""

    def __init__(self, *, action: str, status: str) -> None:
        hint = _CAMPAIGN_HINTS.get((action, status), "")
        super().__init__(
            f"A campaign that is `{status}` cannot be {_CAMPAIGN_PAST[action]}.{hint}",
        )


_CAMPAIGN_PAST = {
    "edit": "edited",
    "submit": "submitted",
    "withdraw": "withdrawn",
    "approve": "approved",
    "reject": "rejected",
    "send": "sent",
    "cancel": "canceled",
    "delete": "deleted",
}

_CAMPAIGN_HINTS = {
    ("edit", "in_review"): " Withdraw it to draft first.",
    ("send", "draft"): " Submit it for review; staff approve it in the console.",
    ("send", "in_review"): " It waits for approval by staff in the console.",
    ("delete", "sending"): " Cancel it first.",
    ("delete", "scheduled"): " Cancel it first.",
}


class CampaignNotReady(Conflict):
    """What stands between the campaign and review or sending (each issue names the
    member): an unpublished or deleted template, no sender, a deleted audience or topic."""

    message = "The campaign is not ready for this."

    def __init__(self, issues: list[Issue], message: str | None = None) -> None:
        super().__init__(message, issues=issues)

"""Errors of the automations family."""

from config.api.errors import Conflict, Issue


class NoDraftToPublish(Conflict):
    message = "The automation has no draft to publish; edit it (PATCH) or restore a version first."


class TransitionNotAllowed(Conflict):
    """A lifecycle action the automation's status does not allow (resume an active one)."""

    def __init__(self, *, action: str, status: str) -> None:
        super().__init__(f"An automation that is `{status}` cannot be {_PAST[action]}.")


_PAST = {
    "publish": "published",
    "pause": "paused",
    "resume": "resumed",
    "archive": "archived",
    "edit": "edited",
    "restore": "given a restored draft",
}


class AutomationArchived(TransitionNotAllowed):
    def __init__(self, *, action: str) -> None:
        super().__init__(action=action, status="archived")


class DraftNotPublishable(Conflict):
    """The draft refers to templates that are missing, of the wrong channel or unpublished,
    or no longer passes the definition checks; each issue names the member."""

    message = "The draft cannot be published as it stands."

    def __init__(self, issues: list[Issue], message: str | None = None) -> None:
        super().__init__(message, issues=issues)


class PreparedStateChanged(Conflict):
    message = "The automation changed since this action was prepared; prepare it again."


class RunFinished(Conflict):
    message = "The run has already finished."

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

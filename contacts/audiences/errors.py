"""Errors of the audiences family."""

from config.api.errors import Conflict, Issue


class NameTaken(Conflict):
    """Names identify audiences and topics in imports, so each is unique in its project."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"Another {what} of this project already has this name.",
            issues=[Issue(code="taken", path="name", message=f"Another {what} has this name.")],
        )


class PropertyKeyTaken(Conflict):
    def __init__(self) -> None:
        super().__init__(
            "The audience already has a property with this key.",
            issues=[Issue(code="taken", path="key", message="The audience has this key already.")],
        )

"""Errors of the topics family."""

from config.api.errors import Conflict, Issue


class TopicNameTaken(Conflict):
    """Names identify topics in imports, so each is unique in its project (any case)."""

    def __init__(self) -> None:
        super().__init__(
            "Another topic of this project already has this name.",
            issues=[Issue(code="taken", path="name", message="Another topic has this name.")],
        )

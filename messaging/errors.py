"""Errors of the messaging family."""

from config.api.errors import Conflict, Issue


class DomainTaken(Conflict):
    """The project already has this sending domain."""

    message = "This project already has this domain."

    def __init__(self) -> None:
        super().__init__(
            issues=[Issue(code="taken", path="name", message="The project has this domain.")]
        )

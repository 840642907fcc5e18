"""Errors of the contacts family."""

from config.api.errors import Conflict, Issue


class EmailTaken(Conflict):
    """Another active contact of the project already has this (normalised) email."""

    message = "Another contact already has this email."

    def __init__(self) -> None:
        super().__init__(
            issues=[Issue(code="taken", path="email", message="Another contact has this email.")]
        )


class ExternalIdTaken(Conflict):
    """Another active contact of the project already has this external id."""

    message = "Another contact already has this external_id."

    def __init__(self) -> None:
        super().__init__(
            issues=[
                Issue(
                    code="taken",
                    path="external_id",
                    message="Another contact has this external_id.",
                )
            ]
        )

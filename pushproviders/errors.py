"""Errors of the push providers family."""

from config.api.errors import Conflict, Issue


class ProviderPlatformTaken(Conflict):
    """The app already has a provider for this platform."""

    message = "This app already has a provider for this platform."

    def __init__(self) -> None:
        super().__init__(
            issues=[
                Issue(
                    code="taken",
                    path="platform",
                    message="The app has a provider for this platform; change or delete it.",
                )
            ]
        )

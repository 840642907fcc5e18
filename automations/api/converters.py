from automations.services.lifecycle import ACTIONS


class LifecycleActionConverter:
    """One of the lifecycle actions in a path; any other word is not a route (404)."""

    regex = "|".join(ACTIONS)

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value

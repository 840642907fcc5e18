"""Where families add sections to the staff console's dashboard (campaigns awaiting
review, email deliverability): `fn(request)` returns a DashboardSection, or None to show
nothing (the staff member may not see it). Registered by dotted path in the family's
apps.py; free of models, so apps.py may import it."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from config.registries.hooks import Handlers


@dataclass(frozen=True)
class DashboardRow:
    """One line of a dashboard section: what, where to look, and a short detail."""

    label: str
    url: str | None = None
    detail: str = ""


@dataclass(frozen=True)
class DashboardSection:
    """A titled box of the dashboard: rows, and optionally a chart above them (markup
    already made safe, as `config.console.charts` draws it)."""

    title: str
    rows: list[DashboardRow] = field(default_factory=list)
    empty: str = "Nothing here."
    chart: str = ""


DashboardSource = Callable[[Any], DashboardSection | None]
_sources: Handlers[DashboardSource] = Handlers()


def register_dashboard_section(source: DashboardSource | str) -> DashboardSource | str:
    return _sources.register(source)


def unregister_dashboard_section(source: DashboardSource | str) -> None:
    _sources.unregister(source)


def dashboard_sources() -> tuple[DashboardSource, ...]:
    return _sources.all()

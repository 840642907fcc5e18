"""Where families add figures to GET /metrics that are read at scrape time (automation
runs by status). A callable returning prometheus_client metric families, registered by
dotted path in the family's apps.py; free of models, so apps.py may import it."""

from collections.abc import Callable, Iterable
from typing import Any

from config.registries.hooks import Handlers

MetricsSource = Callable[[], Iterable[Any]]
_sources: Handlers[MetricsSource] = Handlers()


def register_metrics_source(source: MetricsSource | str) -> MetricsSource | str:
    return _sources.register(source)


def unregister_metrics_source(source: MetricsSource | str) -> None:
    _sources.unregister(source)


def metrics_sources() -> tuple[MetricsSource, ...]:
    return _sources.all()

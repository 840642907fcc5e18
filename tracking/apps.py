from django.apps import AppConfig


class TrackingConfig(AppConfig):
    """Segment-compatible ingest: Segment's HTTP Tracking API onto the native services."""

    name = "tracking"
    verbose_name = "Segment-compatible ingest"

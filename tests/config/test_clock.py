"""The one timestamp format of API answers."""

import datetime as dt

from config.runtime.clock import iso_utc


def test_iso_utc_writes_utc_with_z_and_keeps_microseconds():
    paris = dt.timezone(dt.timedelta(hours=2))
    assert iso_utc(dt.datetime(2026, 5, 1, 14, 0, tzinfo=paris)) == "2026-05-01T12:00:00Z"
    assert (
        iso_utc(dt.datetime(2026, 5, 1, 12, 0, 0, 1500, tzinfo=dt.UTC))
        == "2026-05-01T12:00:00.001500Z"
    )

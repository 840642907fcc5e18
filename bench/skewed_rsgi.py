"""The production entry point (config/rsgi.py) with the service's clock moved ahead
first (bench/skewed_clock.py): the bench server of a soak that crosses a partition
boundary (bench/soak_partitions.py). Only the soak runs it."""

from bench.skewed_clock import clock_skew

clock_skew()

from config.rsgi import application  # noqa: E402 - after the clock is moved

__all__ = ["application"]

"""The push benchmark's pieces work (the benchmark itself runs only under `make bench`)."""

from bench.bench_push import (
    baseline_rate,
    prebuilt_requests,
    start_standins,
    stop_standins,
    take_arrivals,
)


def test_the_baseline_posts_prebuilt_requests_to_both_stand_ins():
    fcm, apns = start_standins()
    try:
        rate, latencies = baseline_rate(fcm, apns, prebuilt_requests(10))
        arrivals = take_arrivals(fcm, apns)
    finally:
        stop_standins(fcm, apns)

    assert rate > 0
    assert len(latencies) == 20
    assert len(arrivals) == 20
    assert fcm.problems == []
    assert apns.problems == []
    assert fcm.connections == 2  # the token request, then one connection for every send
    assert apns.connections == 1

"""The email benchmark's pieces work (the benchmark itself runs only under `make bench`)."""

from bench.bench_emails import baseline_rate, prebuilt_messages, start_smtp


def test_the_baseline_sends_prebuilt_messages_over_one_connection():
    controller, handler, port = start_smtp()
    try:
        rate, latencies = baseline_rate(port, prebuilt_messages(20))
    finally:
        controller.stop()

    assert rate > 0
    assert len(latencies) == 20
    assert len(handler.arrivals) == 20

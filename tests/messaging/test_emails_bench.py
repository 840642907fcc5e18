"""The email benchmark's pieces work (the benchmark itself runs only under `make bench`)."""

from bench.bench_emails import baseline_rate, prebuilt_messages, start_smtp


def test_the_baseline_sends_prebuilt_messages_over_one_connection():
    sink = start_smtp()
    try:
        rate, latencies = baseline_rate(sink.port, prebuilt_messages(20))
        arrivals = sink.take()
    finally:
        sink.stop()

    assert rate > 0
    assert len(latencies) == 20
    assert len(arrivals) == 20
    assert arrivals == sorted(arrivals)

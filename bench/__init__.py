"""Benchmarks: `make bench` (all) or `make bench ONLY=<name>` (bench/bench_<name>.py).

Add one as `bench/bench_<name>.py` with `run(ctx)` yielding `ctx.result(...)` dicts: measure
the API with `ctx.http(...)` and the same work in raw psycopg with `ctx.sql(...)`. The
context starts the production server on a fresh database the first time a benchmark needs
it (`ctx.server()`, `ctx.keys()`) and stops it at the end of the run; the lean ceiling
(bench/ceiling.py, `ctx.ceiling()`) likewise, and `ctx.with_ceiling(line, work)` puts a
request line beside it (`ceiling_ratio`).
"""

"""Contact imports: a generated CSV file uploaded (multipart, streamed), previewed and
committed through the production server and worker processes, beside a raw psycopg COPY
of the same rows in the same run. Rows/s for each step, and the peak memory of the commit
workers and of the server at each size (they should not grow with the file).

`BENCH_IMPORT_ROWS` (comma-separated, default 100000,1000000) sets the sizes;
`BENCH_IMPORT_EXISTING` (default 0.2) the share of rows whose contact exists already (with
another value of a field, so they plan as updates); `BENCH_IMPORT_WORKERS` (default 2) the
commit worker processes."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg

from bench.harness import PYTHON, ROOT, Context, log

SIZES = [int(size) for size in os.environ.get("BENCH_IMPORT_ROWS", "100000,1000000").split(",")]
EXISTING_SHARE = float(os.environ.get("BENCH_IMPORT_EXISTING", "0.2"))
WORKERS = int(os.environ.get("BENCH_IMPORT_WORKERS", "2"))
WORKER_BUDGET_SECONDS = float(os.environ.get("BENCH_IMPORT_WORKER_SECONDS", "1800"))
HEADER = "email,first_name,last_name,plan,city"
MAPPING = {
    "email": "email",
    "first_name": "fields.first_name",
    "last_name": "fields.last_name",
    "plan": "fields.plan",
    "city": "fields.city",
}

# Waits until a commit made chunks due, then drains them and reports its peak memory.
WORKER_CODE = """
import json, resource, time
from config.workqueue.models import WorkStatus
from imports.models import ImportChunk
from imports.services.commit import imports_commit_due
idle_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"ready": True}}), flush=True)
deadline = time.monotonic() + {seconds}
while not ImportChunk.objects.filter(
    import_record_id="{import_id}", next_attempt_at__isnull=False
).exclude(status=WorkStatus.PROCESSED).exists():
    if time.monotonic() > deadline:
        break
    time.sleep(0.02)
claimed, more = imports_commit_due(budget_seconds={seconds})
print(json.dumps({{"claimed": claimed, "finished": time.time(), "idle_rss_kb": idle_rss,
                  "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}}))
"""


def _csv_file(directory: Path, size: int, tag: str) -> Path:
    path = directory / f"contacts-{size}.csv"
    with path.open("w", encoding="utf-8", newline="") as out:
        out.write(HEADER + "\r\n")
        for n in range(size):
            out.write(f"{tag}-{n}@example.com,First{n},Last{n},pro,City{n % 100}\r\n")
    return path


def _seed_existing(ctx: Context, project_id: str, size: int, tag: str) -> int:
    """Contacts for every `1 / EXISTING_SHARE`th row, with `plan: free` (the file says pro)."""
    if EXISTING_SHARE <= 0:
        return 0
    step = max(1, round(1 / EXISTING_SHARE))
    with psycopg.connect(ctx.pg_dsn(), autocommit=True) as conn:
        cursor = conn.execute(
            "INSERT INTO contacts_contact (id, project_id, email, external_id, fields, "
            "created_at, updated_at) SELECT gen_random_uuid(), %s, %s || '-' || g || "
            "'@example.com', NULL, '{\"plan\": \"free\"}'::jsonb, now(), now() "
            "FROM generate_series(0, %s - 1, %s) g",
            (project_id, tag, size, step),
        )
        seeded = cursor.rowcount
        conn.execute("ANALYZE contacts_contact")
    return seeded


def _copy_baseline(ctx: Context, path: Path) -> float:
    """Rows/s of a raw COPY of the same file into a plain table, in one transaction."""
    with psycopg.connect(ctx.pg_dsn()) as conn:
        conn.execute(
            "CREATE TEMP TABLE bench_import_copy (email text, first_name text, "
            "last_name text, plan text, city text)"
        )
        started = time.monotonic()
        with conn.cursor() as cursor:
            with (
                cursor.copy(
                    "COPY bench_import_copy FROM STDIN WITH (FORMAT csv, HEADER true)"
                ) as copy,
                path.open("rb") as source,
            ):
                while chunk := source.read(1 << 20):
                    copy.write(chunk)
            rows = cursor.execute("SELECT count(*) FROM bench_import_copy").fetchone()
        conn.commit()
        seconds = time.monotonic() - started
    assert rows is not None
    return float(rows[0]) / seconds


def _request(
    base_url: str,
    method: str,
    path: str,
    *,
    key: str,
    project: str,
    body: Any = None,
    timeout: float = 3600,
) -> tuple[int, Any]:
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    headers = {"Authorization": f"Bearer {key}", "X-Service-Project-Id": project}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    try:
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        connection.close()


def _upload(base_url: str, path: Path, *, key: str, project: str) -> dict[str, Any]:
    """`POST /imports` as multipart, the file streamed from disk."""
    boundary = uuid.uuid4().hex
    head = (
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="mapping"\r\n\r\n'
        f"{json.dumps(MAPPING)}\r\n"
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="file"; filename="{path.name}"\r\n'
        "Content-Type: text/csv\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()

    def body() -> Iterator[bytes]:
        yield head
        with path.open("rb") as source:
            while chunk := source.read(1 << 20):
                yield chunk
        yield tail

    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=3600)
    try:
        connection.request(
            "POST",
            "/imports",
            body=body(),
            headers={
                "Authorization": f"Bearer {key}",
                "X-Service-Project-Id": project,
                "Content-Type": f"multipart/form-data; boundary={boundary}",
                "Content-Length": str(len(head) + path.stat().st_size + len(tail)),
            },
        )
        response = connection.getresponse()
        answer = json.loads(response.read())
    finally:
        connection.close()
    if response.status != 201:
        raise RuntimeError(f"upload failed: {response.status} {answer}")
    return dict(answer["data"])


def _peak_rss_kb(pid: int) -> int:
    """The peak resident size (VmHWM) of a process and its children, the largest."""
    peaks = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            status = (entry / "status").read_text()
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            if int(entry.name) == pid or int(fields.get("PPid", "0").strip()) == pid:
                peaks.append(int(fields.get("VmHWM", "0 kB").split()[0]))
    return max(peaks, default=0)


def _line(name: str, rows: int, seconds: float, baseline: float, **extra: Any) -> dict[str, Any]:
    rate = rows / seconds if seconds else 0.0
    return {
        "name": name,
        "ops_per_s": round(rate, 1),
        "p50_ms": None,
        "p95_ms": None,
        "p99_ms": None,
        "baseline_ops_per_s": round(baseline, 1),
        "ratio": round(rate / baseline, 4) if baseline else None,
        "unit": "rows/s",
        "rows": rows,
        "seconds": round(seconds, 2),
        "concurrency": 1,
        "errors": 0,
        **extra,
    }


def _report(worker: subprocess.Popen[str]) -> dict[str, Any]:
    """The next JSON line a worker prints (other output skipped)."""
    assert worker.stdout is not None
    for line in worker.stdout:
        with contextlib.suppress(ValueError):
            report = json.loads(line)
            if isinstance(report, dict):
                return report
    raise RuntimeError("a commit worker exited without reporting")


def _commit(
    ctx: Context, import_id: str, prepared_action_id: str, *, key: str, project: str
) -> tuple[float, list[dict[str, Any]]]:
    server = ctx.server()
    code = WORKER_CODE.format(seconds=WORKER_BUDGET_SECONDS, import_id=import_id)
    workers = [
        subprocess.Popen(
            [PYTHON, "manage.py", "shell", "--no-imports", "-c", code],
            cwd=ROOT,
            env=server.env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(WORKERS)
    ]
    try:
        for worker in workers:
            _report(worker)  # set up and waiting
        started = time.time()
        status, answer = _request(
            server.base_url,
            "POST",
            f"/imports/{import_id}/actions/commit/execute",
            key=key,
            project=project,
            body={
                "prepared_action_id": prepared_action_id,
                "idempotency_key": f"bench-{import_id}",
            },
        )
        if status != 202:
            raise RuntimeError(f"commit failed: {status} {answer}")
        reports = [_report(worker) for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
            worker.wait(timeout=30)
    claimed = [report["finished"] for report in reports if report["claimed"]]
    finished = max(claimed) if claimed else time.time()
    _, record = _request(server.base_url, "GET", f"/imports/{import_id}", key=key, project=project)
    if record["data"]["status"] != "committed":
        raise RuntimeError(f"the import is {record['data']['status']}: {record['data']}")
    return finished - started, reports


def run(ctx: Context) -> Iterator[dict[str, Any]]:
    keys = ctx.keys()
    server = ctx.server()
    key, project = keys["keys"]["personal"], keys["project_id"]
    memory: dict[int, dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-imports-") as directory:
        for size in SIZES:
            tag = f"imp{size}-{uuid.uuid4().hex[:6]}"
            path = _csv_file(Path(directory), size, tag)
            seeded = _seed_existing(ctx, project, size, tag)
            baseline = _copy_baseline(ctx, path)
            log(
                f"{size} rows ({path.stat().st_size} bytes, {seeded} contacts exist): "
                f"COPY {baseline:.0f} rows/s"
            )

            started = time.monotonic()
            record = _upload(server.base_url, path, key=key, project=project)
            uploaded = time.monotonic() - started
            yield _line(f"imports_upload_{size}", size, uploaded, baseline)

            started = time.monotonic()
            status, answer = _request(
                server.base_url,
                "POST",
                f"/imports/{record['id']}/preview",
                key=key,
                project=project,
                body={},
            )
            previewed = time.monotonic() - started
            if status != 200:
                raise RuntimeError(f"preview failed: {status} {answer}")
            preview = answer["data"]
            server_rss = _peak_rss_kb(server.proc.pid) if server.proc else 0
            yield _line(
                f"imports_preview_{size}",
                size,
                previewed,
                baseline,
                changes=preview["changes"],
                server_peak_rss_mb=round(server_rss / 1024, 1),
            )

            seconds, reports = _commit(
                ctx, record["id"], preview["prepared_action_id"], key=key, project=project
            )
            peak = max(report["peak_rss_kb"] for report in reports)
            idle = min(report["idle_rss_kb"] for report in reports)
            memory[size] = {"worker_peak_kb": peak, "worker_idle_kb": idle}
            yield _line(
                f"imports_commit_{size}",
                size,
                seconds,
                baseline,
                workers=WORKERS,
                concurrency=WORKERS,
                worker_peak_rss_mb=round(peak / 1024, 1),
                worker_idle_rss_mb=round(idle / 1024, 1),
            )
            path.unlink()
    if len(memory) > 1:
        small, large = min(memory), max(memory)
        growth = memory[large]["worker_peak_kb"] / memory[small]["worker_peak_kb"]
        yield {
            "name": "imports_worker_memory",
            "sizes": sorted(memory),
            "worker_peak_rss_mb": {
                str(size): round(values["worker_peak_kb"] / 1024, 1)
                for size, values in sorted(memory.items())
            },
            "growth": round(growth, 3),
            "within_10_percent": growth <= 1.10,
        }

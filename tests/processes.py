"""Helpers of the tests that start real processes (granian, `make run`'s stack): free ports,
bounded waits, HTTP without a client library, and a process's children from /proc."""

import contextlib
import importlib.util
import json
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


# Ports below the range the kernel gives outgoing connections (and `bind(0)`) from, where
# only listeners take them.
_PORTS_BELOW_EPHEMERAL = 10_000


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A port free now on 127.0.0.1 for a server a test starts. Not one the kernel hands
    out (`bind` to port 0): those come from the range of outgoing connections, and a
    client connection made before the server binds (to PostgreSQL, Redis, another server)
    could take it, failing the server with "Address already in use"."""
    start = _ephemeral_start()
    low = max(1024, start - _PORTS_BELOW_EPHEMERAL)
    for _ in range(100):
        port = random.randrange(low, start)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(check: Callable[[], Any], *, timeout: float, what: str) -> Any:
    """Polls `check` until it returns something truthy (returned) or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout:.0f}s: {what}")


def request(
    method: str, url: str, body: Any = None, *, key: str | None = None, timeout: float = 5
) -> tuple[int, Any]:
    """(status, decoded JSON body) of one request; (0, error) when nothing answered."""
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    data = json.dumps(body).encode() if body is not None else None
    outgoing = urllib.request.Request(url, data=data, headers=headers, method=method)  # noqa: S310
    try:
        with urllib.request.urlopen(outgoing, timeout=timeout) as response:  # noqa: S310
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        with contextlib.suppress(ValueError):
            return error.code, json.loads(error.read())
        return error.code, None
    except OSError as error:
        return 0, error


@contextlib.contextmanager
def scratch_dir() -> Iterator[Path]:
    """A temporary directory for a server's data. Not pytest's tmp_path: each pytest session
    takes the other users' access to its base back, which PostgreSQL needs when it runs
    as a user of its own (as root)."""
    with tempfile.TemporaryDirectory(prefix="sendrealm-") as path:
        yield Path(path)


def children_of(pid: int) -> set[int]:
    """The live (not zombie) child processes of `pid`."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        # The command name in parentheses may hold spaces; the fields after it do not.
        state, parent = stat.rpartition(")")[2].split()[:2]
        if int(parent) == pid and state != "Z":
            found.add(int(entry.name))
    return found


def spawn_logged(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """`args` started from the project's root in a session of its own (so its whole group
    can be signalled), with no input, its output and errors appended to `log`."""
    with log.open("ab") as out:
        return subprocess.Popen(
            args,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def reaped(pid: int) -> bool:
    """True once `pid` is gone altogether. A zombie is not enough: its leader thread shows
    `Z` while its other threads, and the sockets they share, may still be open."""
    return not Path(f"/proc/{pid}").exists()


def run_script() -> ModuleType:
    """scripts/run.py (`make run`) as a module, for the commands it starts."""
    # As when it runs as a script: the modules beside it are importable.
    if str(ROOT / "scripts") not in sys.path:
        sys.path.append(str(ROOT / "scripts"))
    spec = importlib.util.spec_from_file_location("sendrealm_run", ROOT / "scripts" / "run.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

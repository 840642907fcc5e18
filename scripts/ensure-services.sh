#!/usr/bin/env bash
# Usage: scripts/ensure-services.sh [COMMAND...]
# Checks that PostgreSQL and Redis answer where DATABASE_URL, CACHE_URL and
# CELERY_BROKER_URL point (default: 127.0.0.1), then runs COMMAND against them. One on
# 127.0.0.1 that does not answer, or refuses us, is replaced for COMMAND's run by the
# embedded server of `make run` (scripts/embedded_services.py: PostgreSQL 18 and Valkey from
# the virtualenv's wheels, no root and no OS package), with its data under
# .run/test-services (TEST_SERVICES_DIR), stopped when COMMAND ends. A service elsewhere must
# answer: tests never skip silently for want of a service. Without COMMAND it only checks.
# With ENSURE_BROWSER=1 (make test) it also installs Debian's chromium and chromium-driver
# for the staff console's browser tests; where it cannot, it says what to install and those
# tests skip saying so. With ENSURE_PGBOUNCER=1 (make test) it installs Debian's pgbouncer
# the same way, for the tests that run the service through it (tests/pgbouncer.py). With
# ENSURE_NODE_CLIENT=1 (make test) it installs Segment's Node client
# (@segment/analytics-node, NODE_CLIENT_VERSION) from the npm registry into
# .run/node-client (SEGMENT_NODE_CLIENT_DIR) for tests/tracking/test_real_clients.py, run
# by Debian's nodejs; without node or npm it says what to install and that test skips.
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PY:-.venv/bin/python}"
DB_URL="${DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/sendrealm}"
REDIS_URLS=("${CACHE_URL:-redis://127.0.0.1:6379/0}" "${CELERY_BROKER_URL:-redis://127.0.0.1:6379/1}")
SERVICES_DIR="${TEST_SERVICES_DIR:-.run/test-services}"

say() { echo "ensure-services: $*"; }
is_root() { [ "$(id -u)" = 0 ]; }
can_apt() { is_root && command -v apt-get >/dev/null 2>&1; }

# probe pg|redis URL -> exit 0 answers and lets us in; 1 otherwise (printing why).
probe() {
    "$PY" - "$1" "$2" <<'PY'
import sys
from urllib.parse import unquote, urlsplit

kind, url = sys.argv[1], sys.argv[2]
parts = urlsplit(url)
try:
    if kind == "pg":
        import psycopg

        # The maintenance database: the project's own may not exist yet.
        conn = psycopg.connect(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or 5432,
            user=unquote(parts.username or "postgres"),
            password=unquote(parts.password or "") or None,
            dbname="postgres",
            connect_timeout=3,
        )
        conn.close()
    else:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=3).ping()
except Exception as exc:
    print(f"  {kind}: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}")
    sys.exit(1)
PY
}

# field URL host|port [default port]
field() {
    "$PY" -c 'import sys; from urllib.parse import urlsplit
p = urlsplit(sys.argv[1])
print({"host": p.hostname or "127.0.0.1", "port": p.port or sys.argv[3]}[sys.argv[2]])' \
        "$1" "$2" "${3:-0}"
}

is_local() { case "$1" in 127.0.0.1 | localhost | ::1) return 0 ;; *) return 1 ;; esac; }

# usable pg|redis URL: 0 when it answers and lets us in; 1 when it is on this machine and
# the embedded server should stand in; exits when it is elsewhere.
usable() {
    local name=Redis default=6379 host port
    if [ "$1" = pg ]; then name=PostgreSQL default=5432; fi
    host=$(field "$2" host)
    port=$(field "$2" port $default)
    if probe "$1" "$2" >/dev/null; then
        return 0
    fi
    if is_local "$host"; then
        say "$name at $host:$port cannot be used:"
        probe "$1" "$2" || true
        return 1
    fi
    say "$name at $host:$port cannot be used:" >&2
    probe "$1" "$2" >&2 || true
    echo "  Start it, or point the URL at a server that answers (or unset it for 127.0.0.1)." >&2
    exit 1
}

ensure_browser() {
    local chromium="${CHROMIUM_BINARY:-/usr/bin/chromium}" driver="${CHROMEDRIVER:-/usr/bin/chromedriver}"
    if [ -x "$chromium" ] && [ -x "$driver" ]; then
        say "chromium and chromedriver are installed"
        return 0
    fi
    if can_apt; then
        say "installing chromium and chromium-driver for the browser tests"
        apt-get update -qq
        if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; then
            return 0
        fi
    fi
    say "the browser tests will skip: install Debian's chromium and chromium-driver"
    echo "    sudo apt-get install -y chromium chromium-driver" >&2
}

ensure_pgbouncer() {
    local pgbouncer="${PGBOUNCER_BINARY:-/usr/sbin/pgbouncer}"
    if [ -x "$pgbouncer" ] || command -v pgbouncer >/dev/null 2>&1; then
        say "pgbouncer is installed"
        return 0
    fi
    if can_apt; then
        say "installing pgbouncer for the tests through PgBouncer"
        apt-get update -qq
        if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer; then
            return 0
        fi
    fi
    say "the tests through PgBouncer will skip: install Debian's pgbouncer"
    echo "    sudo apt-get install -y pgbouncer" >&2
}

ensure_node_client() {
    local dir="${SEGMENT_NODE_CLIENT_DIR:-.run/node-client}" version="${NODE_CLIENT_VERSION:-3.1.0}"
    local installed="$dir/node_modules/@segment/analytics-node/package.json"
    if [ -f "$installed" ] && grep -q "\"version\": \"$version\"" "$installed"; then
        say "@segment/analytics-node $version is installed in $dir"
        return 0
    fi
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        if can_apt; then
            say "installing nodejs and npm for the Segment Node client test"
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm || true
        fi
    fi
    if command -v npm >/dev/null 2>&1; then
        say "installing @segment/analytics-node $version into $dir"
        mkdir -p "$dir"
        if npm install --prefix "$dir" --no-audit --no-fund --silent \
            "@segment/analytics-node@$version"; then
            return 0
        fi
    fi
    say "the Segment Node client test will skip: install Debian's nodejs and npm"
    echo "    sudo apt-get install -y nodejs npm" >&2
}

if [ ! -x "$PY" ]; then
    echo "ensure-services: $PY is missing; run make install first" >&2
    exit 1
fi
if [ "${ENSURE_BROWSER:-0}" = 1 ]; then
    ensure_browser
fi
if [ "${ENSURE_PGBOUNCER:-0}" = 1 ]; then
    ensure_pgbouncer
fi
if [ "${ENSURE_NODE_CLIENT:-0}" = 1 ]; then
    ensure_node_client
fi
embedded=()
if usable pg "$DB_URL"; then
    say "PostgreSQL answers at $(field "$DB_URL" host):$(field "$DB_URL" port 5432)"
else
    embedded+=(--postgres)
fi
redis_ok=1
for url in "${REDIS_URLS[@]}"; do
    usable redis "$url" || redis_ok=0
done
if [ $redis_ok = 1 ]; then
    say "Redis answers at $(field "${REDIS_URLS[0]}" host):$(field "${REDIS_URLS[0]}" port 6379)"
else
    embedded+=(--valkey)
fi
if [ $# -eq 0 ]; then
    if [ ${#embedded[@]} -gt 0 ]; then
        say "make test starts embedded servers in their place for its run"
        exit 1
    fi
    exit 0
fi
if [ ${#embedded[@]} -eq 0 ]; then
    exec "$@"
fi
say "starting the embedded servers in their place (${embedded[*]#--}; data in $SERVICES_DIR)"
# fsync off: the test data is thrown away.
exec "$PY" scripts/embedded_services.py "$SERVICES_DIR" "${embedded[@]}" --fast -- "$@"

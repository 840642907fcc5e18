#!/usr/bin/env bash
# Makes sure PostgreSQL and Redis answer where DATABASE_URL, CACHE_URL and CELERY_BROKER_URL
# point (default: 127.0.0.1). Local services that are installed but stopped are started; on
# Debian, as root, missing ones are installed. Anything still unreachable fails the run:
# tests never skip silently for want of a service. With ENSURE_BROWSER=1 (make test) it
# also installs Debian's chromium and chromium-driver for the staff console's browser
# tests; where it cannot, it says what to install and those tests skip saying so.
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PY:-.venv/bin/python}"
DB_URL="${DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/sendrealm}"
REDIS_URLS=("${CACHE_URL:-redis://127.0.0.1:6379/0}" "${CELERY_BROKER_URL:-redis://127.0.0.1:6379/1}")
INSTALLED_PG=0

say() { echo "ensure-services: $*"; }
is_root() { [ "$(id -u)" = 0 ]; }
can_apt() { is_root && command -v apt-get >/dev/null 2>&1; }

# probe pg|redis URL -> exit 0 answers, 1 no answer, 2 answers but refuses us (e.g. auth).
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
    text = str(exc).lower()
    refused = "authentication" in text or "password" in text or "noauth" in text
    print(f"  {kind}: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}")
    sys.exit(2 if refused else 1)
PY
}

# field URL host|port|user|password
field() {
    "$PY" -c 'import sys; from urllib.parse import urlsplit, unquote
p = urlsplit(sys.argv[1]); f = sys.argv[2]
d = {"host": p.hostname or "127.0.0.1", "port": p.port or sys.argv[3],
     "user": unquote(p.username or "postgres"), "password": unquote(p.password or "")}
print(d[f])' "$1" "$2" "${3:-0}"
}

is_local() { case "$1" in 127.0.0.1 | localhost | ::1) return 0 ;; *) return 1 ;; esac; }

wait_for() { # kind url seconds
    local deadline=$((SECONDS + $3))
    while [ $SECONDS -lt $deadline ]; do
        if probe "$1" "$2" >/dev/null; then return 0; fi
        sleep 1
    done
    return 1
}

print_install_help() {
    cat >&2 <<'TXT'
ensure-services: PostgreSQL and Redis must answer on 127.0.0.1 for the test suite.
Install and start them, then re-run (Debian/Ubuntu):
    sudo apt-get update && sudo apt-get install -y postgresql redis-server
    sudo pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start   # or: sudo service postgresql start
    sudo -u postgres psql -c "ALTER ROLE postgres PASSWORD 'postgres'"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
Or point DATABASE_URL, CACHE_URL and CELERY_BROKER_URL at servers you already run.
TXT
}

start_postgres() { # port
    local started=1 version name port
    if command -v pg_lsclusters >/dev/null 2>&1; then
        # The Debian cluster listening on the wanted port (normally 15/main on 5432).
        while read -r version name port _; do
            if [ "$port" = "$1" ]; then
                say "starting PostgreSQL cluster $version/$name"
                if pg_ctlcluster --skip-systemctl-redirect "$version" "$name" start; then
                    started=0
                fi
            fi
        done < <(pg_lsclusters -h 2>/dev/null || true)
    fi
    if [ $started -ne 0 ] && command -v service >/dev/null 2>&1 && [ -e /etc/init.d/postgresql ]; then
        say "starting PostgreSQL with service"
        service postgresql start && started=0
    fi
    return $started
}

ensure_postgres() {
    local host port status=0
    host=$(field "$DB_URL" host)
    port=$(field "$DB_URL" port 5432)
    probe pg "$DB_URL" >/dev/null || status=$?
    if [ $status -eq 1 ] && is_local "$host"; then
        if ! command -v pg_ctlcluster >/dev/null 2>&1 && ! command -v postgres >/dev/null 2>&1 \
            && ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
            if can_apt; then
                say "PostgreSQL is not installed; installing it"
                apt-get update -qq
                DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql
                INSTALLED_PG=1
            else
                say "PostgreSQL is not installed"
                print_install_help
                return 1
            fi
        fi
        start_postgres "$port" || true
        wait_for pg "$DB_URL" 30 || true
        status=0
        probe pg "$DB_URL" >/dev/null || status=$?
    fi
    if [ $status -eq 2 ] && is_local "$host" && is_root \
        && { [ $INSTALLED_PG = 1 ] || [ "${CI:-}" = true ]; } \
        && [ "$(field "$DB_URL" user)" = postgres ] && [ "$(field "$DB_URL" password)" = postgres ]; then
        # A fresh Debian cluster has no password for postgres; TCP logins need one.
        say "setting the password of the postgres role"
        (cd / && su postgres -s /bin/sh -c "psql -q -p $port -c \"ALTER ROLE postgres PASSWORD 'postgres'\"")
        status=0
        probe pg "$DB_URL" >/dev/null || status=$?
    fi
    if [ $status -ne 0 ]; then
        say "PostgreSQL at $host:$port cannot be used:"
        probe pg "$DB_URL" >&2 || true
        if [ $status -eq 2 ]; then
            echo "  Set the role's password, e.g. sudo -u postgres psql -c \"ALTER ROLE postgres PASSWORD 'postgres'\"," >&2
            echo "  or set DATABASE_URL to credentials that work." >&2
        else
            print_install_help
        fi
        return 1
    fi
    say "PostgreSQL answers at $host:$port"
}

ensure_redis() {
    local url=$1 host port
    host=$(field "$url" host)
    port=$(field "$url" port 6379)
    if probe redis "$url" >/dev/null; then
        return 0
    fi
    if is_local "$host"; then
        if ! command -v redis-server >/dev/null 2>&1; then
            if can_apt; then
                say "Redis is not installed; installing it"
                apt-get update -qq
                DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server
            else
                say "Redis is not installed"
                print_install_help
                return 1
            fi
        fi
        if ! probe redis "$url" >/dev/null; then
            say "starting Redis on port $port"
            # "-::1": bind IPv6 loopback too when the machine has it.
            redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$port" \
                --save "" --appendonly no >/dev/null || true
            wait_for redis "$url" 15 || true
        fi
    fi
    if ! probe redis "$url" >/dev/null; then
        say "Redis at $host:$port cannot be used:"
        probe redis "$url" >&2 || true
        print_install_help
        return 1
    fi
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

if [ ! -x "$PY" ]; then
    echo "ensure-services: $PY is missing; run make install first" >&2
    exit 1
fi
ensure_postgres
for url in "${REDIS_URLS[@]}"; do
    ensure_redis "$url"
done
say "Redis answers at $(field "${REDIS_URLS[0]}" host):$(field "${REDIS_URLS[0]}" port 6379)"
if [ "${ENSURE_BROWSER:-0}" = 1 ]; then
    ensure_browser
fi

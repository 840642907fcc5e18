#!/usr/bin/env bash
# Creates the virtualenv (installing python3-venv on Debian when it is missing and we are
# root) and installs the pinned development requirements into it.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"

if ! command -v "$PYTHON" >/dev/null 2>&1; then
    echo "error: $PYTHON not found; install Python 3.11 or newer (Debian: apt-get install python3)" >&2
    exit 1
fi
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "error: $("$PYTHON" --version) is too old; Python 3.11 or newer is needed" >&2
    exit 1
fi

if [ ! -x "$VENV/bin/python" ]; then
    echo "Creating $VENV with $("$PYTHON" --version)"
    if ! "$PYTHON" -m venv "$VENV" 2>/tmp/venv-error.$$; then
        rm -rf "$VENV"
        # Debian ships venv and ensurepip in a separate package.
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            echo "venv or ensurepip is missing; installing python3-venv"
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
            "$PYTHON" -m venv "$VENV"
        else
            cat /tmp/venv-error.$$ >&2
            rm -f /tmp/venv-error.$$
            echo "error: cannot create a virtualenv; install python3-venv" \
                "(Debian: sudo apt-get install python3-venv) and re-run make install" >&2
            exit 1
        fi
    fi
    rm -f /tmp/venv-error.$$
fi

"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements/dev.txt
echo "Installed requirements/dev.txt into $VENV"

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

# uv installs the same pins from PyPI in a fraction of pip's time: it downloads and unpacks
# in parallel and leaves compiling to bytecode to the first import of each module. It trusts
# the system's certificate store, where the CA of a TLS proxy in between is installed. Where
# uv cannot be installed (no wheel for the machine) or fails, pip installs the requirements.
UV_VERSION=0.13.9
if ! { "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION" &&
    "$VENV/bin/uv" pip install --quiet --system-certs --python "$VENV/bin/python" \
        -r requirements/dev.txt; }; then
    echo "uv could not install requirements/dev.txt; installing it with pip"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements/dev.txt
fi
echo "Installed requirements/dev.txt into $VENV"

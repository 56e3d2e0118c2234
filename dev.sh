#!/bin/sh
# DenseHMM Studio developer entry point (the "Makefile or equivalent").
#   sh dev.sh app   [FILES...]  set up .venv (if needed) and launch the app
#   sh dev.sh test  [PYTEST ARGS] set up .venv (if needed), run the lint checks, then the whole test suite
#   sh dev.sh lint              set up .venv (if needed) and run only the lint checks: ruff, import-linter
#                               (layer and Qt-free contracts), mypy; configured in pyproject.toml
#   sh dev.sh setup             only set up .venv
# Idempotent: the install step is skipped while pyproject.toml is unchanged.
set -eu
cd "$(dirname "$0")"
VENV=.venv
PY="$VENV/bin/python"
STAMP="$VENV/.installed-stamp"

need_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else
        echo "dev.sh: please run as root: $*" >&2; exit 1; fi
}

system_packages() {
    # Debian/Ubuntu: python3-venv (ensurepip) and the shared libraries Qt needs.
    missing=""
    python3 -c "import ensurepip, venv" 2>/dev/null || missing="$missing python3-venv"
    if command -v dpkg >/dev/null 2>&1; then
        for p in libegl1 libgl1 libxkbcommon0 libfontconfig1 libdbus-1-3 libglib2.0-0 libxkbcommon-x11-0 \
                 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxcb-cursor0 libxcb-shape0 libxcb-xkb1 libxcb-randr0; do
            dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
        done
    fi
    if [ -n "$missing" ]; then
        if command -v apt-get >/dev/null 2>&1; then
            echo "dev.sh: installing system packages:$missing" >&2
            need_root apt-get update -qq
            # shellcheck disable=SC2086
            need_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
        else
            echo "dev.sh: please install:$missing" >&2
        fi
    fi
}

setup() {
    if [ -x "$PY" ] && [ -f "$STAMP" ] && [ "$STAMP" -nt pyproject.toml ]; then
        return 0
    fi
    system_packages
    [ -x "$PY" ] || python3 -m venv "$VENV"
    "$PY" -m pip install -q --disable-pip-version-check -e ".[test]"
    touch "$STAMP"
}

lint() {
    echo "dev.sh lint: ruff" >&2
    "$PY" -m ruff check .
    echo "dev.sh lint: import-linter" >&2
    "$VENV/bin/lint-imports" --no-cache
    echo "dev.sh lint: mypy" >&2
    "$PY" -m mypy
}

cmd="${1:-app}"
[ $# -gt 0 ] && shift
case "$cmd" in
    setup) setup ;;
    app)   setup; exec "$PY" main.py "$@" ;;
    lint)  setup; lint ;;
    test)  setup; lint; exec "$PY" -m pytest -q "$@" ;;
    *) echo "usage: sh dev.sh app|test|lint|setup" >&2; exit 2 ;;
esac

#!/bin/sh
# Build the DenseHMM Studio desktop bundle (PyInstaller, one folder, windowed):
#
#     sh packaging/build.sh [--clean]
#
# produces dist/DenseHMM-Studio/ with the executable dist/DenseHMM-Studio/DenseHMM-Studio
# (run it, or install it for your user with: sh packaging/install-desktop.sh).
#   --clean   throw away PyInstaller's analysis cache in build/ first (slower, from scratch)
#
# Uses the project's .venv (set up with `sh dev.sh setup` if it is missing) and installs
# PyInstaller and pyinstaller-hooks-contrib into it when they are not there yet. The TensorFlow
# installed in that .venv is what gets bundled: tensorflow-cpu (the default) gives a CPU bundle;
# for a GPU-capable bundle see docs/PACKAGING.md. Prints the bundle size and the build time.
#   DENSEHMM_BUILD_PYTHON=/path/to/venv/bin/python   build with another environment (e.g. a GPU one)
set -eu
cd "$(dirname "$0")/.."
PY=${DENSEHMM_BUILD_PYTHON:-.venv/bin/python}
NAME=DenseHMM-Studio

clean=""
for arg in "$@"; do
    case "$arg" in
        --clean) clean="--clean" ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "build.sh: unknown option $arg (see --help)" >&2; exit 2 ;;
    esac
done

if [ ! -x "$PY" ] && [ -n "${DENSEHMM_BUILD_PYTHON:-}" ]; then
    echo "build.sh: no Python at $PY" >&2; exit 1
fi
if [ ! -x "$PY" ]; then
    echo "build.sh: no .venv yet, setting it up (sh dev.sh setup)" >&2
    sh dev.sh setup
fi
if ! "$PY" -c "import PyInstaller, _pyinstaller_hooks_contrib" >/dev/null 2>&1; then
    echo "build.sh: installing PyInstaller into $(dirname "$(dirname "$PY")")" >&2
    "$PY" -m pip install -q --disable-pip-version-check "pyinstaller>=6.6" "pyinstaller-hooks-contrib>=2024.6"
fi
# the PNG icons are committed; render them only if some are missing
"$PY" packaging/render_icons.py --check 2>/dev/null || "$PY" packaging/render_icons.py >/dev/null

start=$(date +%s)
"$PY" -m PyInstaller --noconfirm $clean --log-level WARN \
    --distpath dist --workpath build/pyinstaller packaging/densehmm-studio.spec
end=$(date +%s)

exe="dist/$NAME/$NAME"
[ -x "$exe" ] || { echo "build.sh: the build did not produce $exe" >&2; exit 1; }
size=$(du -sh "dist/$NAME" | cut -f1)
files=$(find "dist/$NAME" -type f | wc -l)
# when the sources were read: the bundle test (tests/test_packaging.py) skips a bundle older than them
{
    echo "build_started_epoch=$start"
    echo "build_seconds=$((end - start))"
    echo "size=$size"
    echo "files=$files"
    echo "python=$("$PY" -c 'import platform; print(platform.python_version())')"
    echo "tensorflow=$("$PY" -c 'from importlib.metadata import version as v
for d in ("tensorflow-cpu", "tensorflow"):
    try:
        print(d, v(d)); break
    except Exception:
        pass')"
} > "dist/$NAME/BUILD-INFO.txt"
echo "build.sh: built $exe"
# PyInstaller compiles the sources early and copies the .py files (for TensorFlow's AutoGraph) late:
# a file edited in between makes the two disagree. Say so instead of leaving a subtly broken bundle.
changed=$(find main.py app densehmm_core packaging/densehmm-studio.spec -name '*.py' -newermt "@$start" \
          2>/dev/null | head -5)
if [ -n "$changed" ]; then
    echo "build.sh: WARNING: sources changed during the build (e.g. $(echo $changed | cut -c1-200));" \
         "run sh packaging/build.sh again once they are stable" >&2
fi
echo "build.sh: bundle dist/$NAME: $size in $files files; build time $((end - start)) s"

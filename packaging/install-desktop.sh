#!/bin/sh
# Install DenseHMM Studio for the current user (no root): the program, its icon, its desktop entry
# and its file types, so that it appears in the application menu and double-clicking a FASTA file
# (or a DenseHMM .h5 model file) in a file manager opens it in the app.
#
# Usage: sh packaging/install-desktop.sh [--bundle DIR | --venv] [--python PY] [--no-default] [--quiet]
#
#   (default)      install the PyInstaller bundle dist/DenseHMM-Studio if it was built
#                  (sh packaging/build.sh), else a launcher that runs this checkout's .venv
#   --bundle DIR   install the one-folder bundle DIR (must contain the DenseHMM-Studio executable)
#   --venv         install a launcher for this source checkout: PY main.py FILES...
#   --python PY    the Python of that launcher (default: <checkout>/.venv/bin/python)
#   --no-default   register the file types but do not make DenseHMM Studio their default application
#   --quiet        print nothing but errors
#
# Where things go (XDG base directories; set XDG_DATA_HOME / XDG_CONFIG_HOME to install elsewhere):
#   $XDG_DATA_HOME/densehmm-studio/                  launcher script (+ bundle/ when a bundle is installed)
#   $XDG_DATA_HOME/applications/densehmm-studio.desktop   desktop entry, Exec= the launcher above
#   $XDG_DATA_HOME/icons/hicolor/{NxN,scalable}/apps/densehmm-studio.{png,svg}
#   $XDG_DATA_HOME/mime/packages/densehmm-studio.xml     FASTA and model file types (update-mime-database)
#   $XDG_CONFIG_HOME/mimeapps.list                   default application (xdg-mime default, else edited here)
#   ~/.local/bin/densehmm-studio                     symlink to the launcher, only if ~/.local/bin exists
# Undo everything with: sh packaging/uninstall-desktop.sh
set -eu

APP_ID=densehmm-studio
DESKTOP_ID="$APP_ID.desktop"
BUNDLE_NAME=DenseHMM-Studio

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
RES="$REPO/resources"
if [ -z "${HOME:-}" ]; then echo "install-desktop.sh: HOME is not set" >&2; exit 1; fi
DATA="${XDG_DATA_HOME:-$HOME/.local/share}"
CONFIG="${XDG_CONFIG_HOME:-$HOME/.config}"
APPDIR="$DATA/$APP_ID"
LAUNCHER="$APPDIR/$APP_ID"
BIN_DIR="${DENSEHMM_BIN_DIR:-$HOME/.local/bin}"

mode=auto
bundle=""
python="$REPO/.venv/bin/python"
set_default=1
quiet=0
while [ $# -gt 0 ]; do
    case "$1" in
        --bundle) [ $# -ge 2 ] || { echo "install-desktop.sh: --bundle needs a folder" >&2; exit 2; }
                  mode=bundle; bundle="$2"; shift ;;
        --venv) mode=venv ;;
        --python) [ $# -ge 2 ] || { echo "install-desktop.sh: --python needs a path" >&2; exit 2; }
                  python="$2"; shift ;;
        --no-default) set_default=0 ;;
        --quiet|-q) quiet=1 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "install-desktop.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

say() { [ "$quiet" = 1 ] || printf '%s\n' "$*"; }
die() { printf 'install-desktop.sh: %s\n' "$*" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }
# run a helper tool quietly; show its output only when it fails (it is never fatal)
quietly() {
    out=$("$@" 2>&1) || { printf 'install-desktop.sh: warning: %s failed:\n%s\n' "$1" "$out" >&2; return 0; }
}
# single-quote a string for /bin/sh
shquote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
# one argument of a desktop entry Exec key (Desktop Entry Specification, "The Exec key"):
# quote when it has a reserved character, escape \ " ` $ inside the quotes, double every %,
# then escape backslashes once more because the value is a string.
desktop_arg() {
    a=$(printf '%s' "$1" | sed 's/%/%%/g')
    case "$a" in
        *[[:space:]\"\'\\\>\<~\|\&\;\$\*\?\#\(\)\`]*)
            a="\"$(printf '%s' "$a" | sed 's/[\\"`$]/\\&/g')\"" ;;
    esac
    printf '%s' "$a" | sed 's/\\/\\\\/g'
}
# atomic copy: temp file in the target folder, then rename
install_file() {  # SRC DEST MODE
    mkdir -p "$(dirname "$2")"
    cp "$1" "$2.tmp.$$"
    chmod "$3" "$2.tmp.$$"
    mv -f "$2.tmp.$$" "$2"
}

# ---- what to install -------------------------------------------------------------------------
if [ "$mode" = auto ]; then
    if [ -x "$REPO/dist/$BUNDLE_NAME/$BUNDLE_NAME" ]; then
        mode=bundle; bundle="$REPO/dist/$BUNDLE_NAME"
    else
        mode=venv
    fi
fi
if [ "$mode" = bundle ]; then
    [ -d "$bundle" ] || die "no bundle folder $bundle (build it with: sh packaging/build.sh)"
    bundle=$(cd "$bundle" && pwd)
    [ -x "$bundle/$BUNDLE_NAME" ] || die "$bundle has no executable $BUNDLE_NAME"
else
    [ -x "$python" ] || die "no Python at $python (set up the checkout first: sh dev.sh setup, or pass --python)"
    [ -f "$REPO/main.py" ] || die "no main.py in $REPO"
fi
for f in "$RES/$DESKTOP_ID" "$RES/mime/$APP_ID.xml" "$RES/icons/$APP_ID.svg"; do
    [ -f "$f" ] || die "missing $f (incomplete checkout?)"
done

# ---- the program and its launcher -----------------------------------------------------------
mkdir -p "$APPDIR"
if [ "$mode" = bundle ]; then
    case "$APPDIR/bundle/" in "$bundle"/*) die "refusing to install the bundle onto itself ($bundle)" ;; esac
    say "installing the bundle $bundle -> $APPDIR/bundle"
    rm -rf "$APPDIR/bundle.new.$$"
    cp -R "$bundle" "$APPDIR/bundle.new.$$"
    rm -rf "$APPDIR/bundle"
    mv "$APPDIR/bundle.new.$$" "$APPDIR/bundle"
    target="$APPDIR/bundle/$BUNDLE_NAME"
    exec_line="exec $(shquote "$target") \"\$@\""
else
    say "installing a launcher for $REPO (Python: $python)"
    rm -rf "$APPDIR/bundle"
    exec_line="exec $(shquote "$python") $(shquote "$REPO/main.py") \"\$@\""
fi
{
    echo '#!/bin/sh'
    echo "# DenseHMM Studio launcher written by packaging/install-desktop.sh ($mode install)."
    echo '# Remove with packaging/uninstall-desktop.sh.'
    echo "$exec_line"
} > "$LAUNCHER.tmp.$$"
chmod 755 "$LAUNCHER.tmp.$$"
mv -f "$LAUNCHER.tmp.$$" "$LAUNCHER"
printf 'mode=%s\nsource=%s\n' "$mode" "${bundle:-$REPO}" > "$APPDIR/install-info.txt"

if [ -d "$BIN_DIR" ]; then
    link="$BIN_DIR/$APP_ID"
    if [ -L "$link" ] || [ ! -e "$link" ]; then
        ln -sf "$LAUNCHER" "$link"
        say "linked $link -> $LAUNCHER"
    else
        say "leaving $link alone (it is not a symlink)"
    fi
fi

# ---- icons ------------------------------------------------------------------------------------
for png in "$RES"/icons/hicolor/*/apps/"$APP_ID".png; do
    [ -f "$png" ] || die "no rendered PNG icons in $RES/icons/hicolor (run packaging/render_icons.py)"
    size=$(basename "$(dirname "$(dirname "$png")")")
    install_file "$png" "$DATA/icons/hicolor/$size/apps/$APP_ID.png" 644
done
install_file "$RES/icons/$APP_ID.svg" "$DATA/icons/hicolor/scalable/apps/$APP_ID.svg" 644
touch "$DATA/icons/hicolor"   # icon loaders rescan a theme folder whose mtime changed

# ---- desktop entry ----------------------------------------------------------------------------
desktop="$DATA/applications/$DESKTOP_ID"
mkdir -p "$DATA/applications"
exec_value="$(desktop_arg "$LAUNCHER") %F"
tryexec_value=$(printf '%s' "$LAUNCHER" | sed 's/\\/\\\\/g')
# Exec/TryExec: the installed launcher; everything else as in resources/densehmm-studio.desktop.
# (awk -v would interpret backslash escapes in the values, so they travel through the environment.)
EXEC_VALUE="$exec_value" TRYEXEC_VALUE="$tryexec_value" awk '
    /^Exec=/    { print "Exec=" ENVIRON["EXEC_VALUE"]; print "TryExec=" ENVIRON["TRYEXEC_VALUE"]; next }
    /^TryExec=/ { next }
    { print }
' "$RES/$DESKTOP_ID" > "$desktop.tmp.$$"
chmod 644 "$desktop.tmp.$$"
mv -f "$desktop.tmp.$$" "$desktop"
if have desktop-file-validate; then
    quietly desktop-file-validate "$desktop"
fi
if have update-desktop-database; then
    quietly update-desktop-database "$DATA/applications"
fi
say "desktop entry: $desktop"

# ---- file types -------------------------------------------------------------------------------
install_file "$RES/mime/$APP_ID.xml" "$DATA/mime/packages/$APP_ID.xml" 644
if have update-mime-database; then
    quietly update-mime-database "$DATA/mime"
    say "file types registered in $DATA/mime"
else
    say "note: update-mime-database not found (install shared-mime-info); the file types are copied to" \
        "$DATA/mime/packages but only take effect once it runs"
fi

# default application for our types (the MimeType list of the desktop entry)
types=$(sed -n 's/^MimeType=//p' "$RES/$DESKTOP_ID" | tr ';' ' ')
set_default_here() {  # TYPE: put TYPE=densehmm-studio.desktop; into [Default Applications]
    list="$CONFIG/mimeapps.list"
    mkdir -p "$CONFIG"
    [ -f "$list" ] || : > "$list"
    KEY="$1" VAL="$DESKTOP_ID;" awk '
        BEGIN { key = ENVIRON["KEY"]; val = ENVIRON["VAL"]; done = 0; insec = 0 }
        /^\[/ {
            if (insec && !done) { print key "=" val; done = 1 }
            insec = ($0 == "[Default Applications]"); print; next
        }
        insec && index($0, key "=") == 1 { if (!done) { print key "=" val; done = 1 }; next }
        { print }
        END { if (!done) { if (!insec) print "[Default Applications]"; print key "=" val } }
    ' "$list" > "$list.tmp.$$"
    mv -f "$list.tmp.$$" "$list"
}
if [ "$set_default" = 1 ]; then
    for t in $types; do
        if have xdg-mime && xdg-mime default "$DESKTOP_ID" "$t" >/dev/null 2>&1; then :; else
            set_default_here "$t"
        fi
    done
    say "default application for: $types"
fi

say "DenseHMM Studio installed ($mode). Start it from the application menu, with $LAUNCHER, or by"
say "double-clicking a FASTA file. Uninstall: sh packaging/uninstall-desktop.sh"

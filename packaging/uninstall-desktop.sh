#!/bin/sh
# Undo packaging/install-desktop.sh for the current user: remove the installed program/launcher,
# the desktop entry, the icons, the file types and the default-application entries that name
# densehmm-studio.desktop. Honours XDG_DATA_HOME / XDG_CONFIG_HOME like the installer.
# The app's own settings, logs and caches (~/.config/DenseHMM, ~/.local/{share,state}/DenseHMM,
# ~/.cache/DenseHMM) are kept unless --purge is given.
#
# Usage: sh packaging/uninstall-desktop.sh [--purge] [--quiet]
set -eu

APP_ID=densehmm-studio
DESKTOP_ID="$APP_ID.desktop"
ICON_SIZES="16 24 32 48 64 128 256 512"
MIME_TYPES="chemical/x-fasta chemical/x-fasta-gzip application/x-densehmm-model"

if [ -z "${HOME:-}" ]; then echo "uninstall-desktop.sh: HOME is not set" >&2; exit 1; fi
DATA="${XDG_DATA_HOME:-$HOME/.local/share}"
CONFIG="${XDG_CONFIG_HOME:-$HOME/.config}"
APPDIR="$DATA/$APP_ID"
LAUNCHER="$APPDIR/$APP_ID"
BIN_DIR="${DENSEHMM_BIN_DIR:-$HOME/.local/bin}"

purge=0
quiet=0
while [ $# -gt 0 ]; do
    case "$1" in
        --purge) purge=1 ;;
        --quiet|-q) quiet=1 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "uninstall-desktop.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
say() { [ "$quiet" = 1 ] || printf '%s\n' "$*"; }
have() { command -v "$1" >/dev/null 2>&1; }
quietly() {
    out=$("$@" 2>&1) || { printf 'uninstall-desktop.sh: warning: %s failed:\n%s\n' "$1" "$out" >&2; return 0; }
}
# remove now-empty folders from $2 (relative to $1) upwards, never $1 itself
prune() { ( cd "$1" 2>/dev/null && rmdir -p "$2" 2>/dev/null ) || true; }

# program, launcher, PATH symlink
link="$BIN_DIR/$APP_ID"
if [ -L "$link" ] && [ "$(readlink "$link")" = "$LAUNCHER" ]; then rm -f "$link"; fi
rm -rf "$APPDIR"

# desktop entry
rm -f "$DATA/applications/$DESKTOP_ID"
if [ -d "$DATA/applications" ] && have update-desktop-database; then
    quietly update-desktop-database "$DATA/applications"
fi

# icons
for s in $ICON_SIZES; do
    rm -f "$DATA/icons/hicolor/${s}x$s/apps/$APP_ID.png"
    prune "$DATA" "icons/hicolor/${s}x$s/apps"
done
rm -f "$DATA/icons/hicolor/scalable/apps/$APP_ID.svg"
prune "$DATA" icons/hicolor/scalable/apps
[ -d "$DATA/icons/hicolor" ] && touch "$DATA/icons/hicolor"

# file types: drop our package, rebuild the user database, delete the per-type files that
# update-mime-database leaves behind for types no other package declares any more
rm -f "$DATA/mime/packages/$APP_ID.xml"
if [ -d "$DATA/mime" ]; then
    if have update-mime-database; then
        quietly update-mime-database "$DATA/mime"
    fi
    for t in $MIME_TYPES; do
        if ! grep -qx "$t" "$DATA/mime/types" 2>/dev/null; then
            rm -f "$DATA/mime/$t.xml"
            prune "$DATA" "mime/${t%%/*}"
        fi
    done
fi

# default-application entries naming our desktop file (both the current and the legacy location)
for list in "$CONFIG/mimeapps.list" "$DATA/applications/mimeapps.list"; do
    [ -f "$list" ] || continue
    grep -q "$DESKTOP_ID" "$list" || continue
    ID="$DESKTOP_ID" awk '
        BEGIN { id = ENVIRON["ID"] }
        /^[^#[][^=]*=/ && index($0, id) {
            k = index($0, "="); key = substr($0, 1, k - 1); n = split(substr($0, k + 1), v, ";")
            out = ""
            for (i = 1; i <= n; i++) if (v[i] != "" && v[i] != id) out = out v[i] ";"
            if (out != "") print key "=" out
            next
        }
        { print }
    ' "$list" > "$list.tmp.$$"
    mv -f "$list.tmp.$$" "$list"
done

if [ "$purge" = 1 ]; then
    # what the app itself writes (QSettings("DenseHMM", "DenseHMM Studio") and the QStandardPaths
    # AppData/State/Cache folders of that organisation/application name)
    rm -f "$CONFIG/DenseHMM/DenseHMM Studio.conf"
    for base in "$CONFIG" "$DATA" "${XDG_STATE_HOME:-$HOME/.local/state}" "${XDG_CACHE_HOME:-$HOME/.cache}"; do
        rm -rf "$base/DenseHMM/DenseHMM Studio"
        rmdir "$base/DenseHMM" 2>/dev/null || true
    done
    say "settings, logs and caches of the app removed"
fi
say "DenseHMM Studio uninstalled from $DATA"

"""Packaging and desktop integration (issue 8).

Checks the freedesktop desktop entry, the shared-mime-info XML, the rendered icons, the user-level
install/uninstall scripts (run into temporary XDG folders) and - only when a bundle has been built
with ``sh packaging/build.sh`` - the PyInstaller bundle itself.

External tools (desktop-file-validate, update-mime-database, xdg-mime) are used when present; the
tests that need them skip otherwise, and a Python parser covers the desktop entry without them.
"""
from __future__ import annotations

import configparser
import os
import pathlib
import re
import shutil
import signal
import struct
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
import zlib

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
RES = REPO / "resources"
DESKTOP = RES / "densehmm-studio.desktop"
MIME_XML = RES / "mime" / "densehmm-studio.xml"
SVG = RES / "icons" / "densehmm-studio.svg"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
INSTALL = REPO / "packaging" / "install-desktop.sh"
UNINSTALL = REPO / "packaging" / "uninstall-desktop.sh"
BUNDLE = REPO / "dist" / "DenseHMM-Studio"
BUNDLE_EXE = BUNDLE / "DenseHMM-Studio"
NS = "{http://www.freedesktop.org/standards/shared-mime-info}"
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"

FASTA_GLOBS = {"*.fasta", "*.fa", "*.faa", "*.fna", "*.ffn", "*.fas"}


# ----------------------------------------------------------------------------- helpers
def read_desktop(path):
    """Parse a desktop entry into {group: {key: value}} (keys case-sensitive, no interpolation)."""
    parser = configparser.ConfigParser(interpolation=None, delimiters=("=",), comment_prefixes=("#",),
                                       strict=True)
    parser.optionxform = str
    parser.read(path, encoding="utf-8")
    return {s: dict(parser[s]) for s in parser.sections()}


def unescape_string(value):
    r"""Desktop entry 'string' unescaping: \s \n \t \r \\ ."""
    return re.sub(r"\\(.)", lambda m: {"s": " ", "n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)),
                  value)


def split_exec(value):
    """Split an Exec value into arguments per the Desktop Entry Specification ("The Exec key")."""
    s = unescape_string(value)
    args, cur, i, have = [], [], 0, False
    while i < len(s):
        c = s[i]
        if c == '"':
            have = True
            i += 1
            while s[i] != '"':
                if s[i] == "\\" and s[i + 1] in '"`$\\':
                    i += 1
                cur.append(s[i])
                i += 1
        elif c == " ":
            if have:
                args.append("".join(cur))
                cur, have = [], False
        else:
            assert c not in "\"'`$\\><~|&;*?#()", f"reserved character {c!r} outside quotes in Exec={value!r}"
            cur.append(c)
            have = True
        i += 1
    if have:
        args.append("".join(cur))
    return args


def expand_field_codes(args, files):
    out = []
    for a in args:
        if a == "%F":
            out.extend(files)
        else:
            out.append(a.replace("%%", "%"))
    return out


def mime_types():
    """{type: element} of the MIME XML."""
    root = ET.parse(MIME_XML).getroot()
    assert root.tag == NS + "mime-info"
    return {el.get("type"): el for el in root.findall(NS + "mime-type")}


def decode_magic(value):
    """shared-mime-info string values use C escapes (\\ooo octal, \\r, \\n, \\xhh)."""
    return value.encode("latin-1").decode("unicode_escape").encode("latin-1")


def png_info(path):
    """(width, height, bit depth, colour type) from a PNG's IHDR, checking signature and CRC."""
    data = pathlib.Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    length, ctype = struct.unpack(">I4s", data[8:16])
    assert ctype == b"IHDR" and length == 13
    ihdr = data[16:29]
    (crc,) = struct.unpack(">I", data[29:33])
    assert zlib.crc32(b"IHDR" + ihdr) == crc, f"{path}: bad IHDR CRC"
    w, h, depth, colour = struct.unpack(">IIBB", ihdr[:10])
    return w, h, depth, colour


def xdg_env(tmp_path):
    home = tmp_path / "home dir"  # a space on purpose: every path must survive quoting
    env = dict(os.environ)
    env.update(HOME=str(home), XDG_DATA_HOME=str(tmp_path / "da$ta (x)"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    for k in ("XDG_CURRENT_DESKTOP", "DESKTOP_SESSION", "KDE_FULL_SESSION", "GNOME_DESKTOP_SESSION_ID"):
        env.pop(k, None)  # xdg-mime: use its generic (mimeapps.list) code path
    home.mkdir()
    return env


def run_sh(script, *args, env, check=True):
    proc = subprocess.run(["sh", str(script), *args], env=env, capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, f"{script.name} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def all_files(*folders):
    return sorted(p for f in folders if f.exists() for p in f.rglob("*") if p.is_file() or p.is_symlink())


# ----------------------------------------------------------------------------- desktop entry
def test_desktop_entry_keys_and_field_codes():
    entry = read_desktop(DESKTOP)
    assert list(entry) == ["Desktop Entry"]
    d = entry["Desktop Entry"]
    assert d["Type"] == "Application"
    assert d["Name"] == "DenseHMM Studio"
    assert d["Icon"] == "densehmm-studio"
    assert d["Terminal"] == "false"
    args = split_exec(d["Exec"])
    assert args[-1] == "%F" and args.count("%F") == 1
    assert not any(re.search(r"%[fuUdDnNickvm]", a) for a in args), "only %F may be used"
    cats = d["Categories"]
    assert cats.endswith(";")
    assert cats.split(";")[:-1] == ["Science", "Biology", "DataVisualization"]
    for key in ("MimeType", "Keywords"):
        assert d[key].endswith(";"), key


def test_desktop_mimetypes_match_mime_xml():
    d = read_desktop(DESKTOP)["Desktop Entry"]
    listed = d["MimeType"].split(";")[:-1]
    assert len(listed) == len(set(listed))
    assert all(re.fullmatch(r"[a-z]+/[a-z0-9.+-]+", t) for t in listed), listed
    assert set(listed) == set(mime_types())


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None, reason="desktop-file-validate not installed")
def test_desktop_file_validate():
    proc = subprocess.run(["desktop-file-validate", str(DESKTOP)], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "", proc.stdout + proc.stderr


# ----------------------------------------------------------------------------- MIME XML
def test_mime_xml_declares_fasta_and_model_types():
    types = mime_types()
    assert set(types) == {"chemical/x-fasta", "chemical/x-fasta-gzip", "application/x-densehmm-model"}

    def globs(t):
        return {g.get("pattern") for g in types[t].findall(NS + "glob")}

    def parents(t):
        return {g.get("type") for g in types[t].findall(NS + "sub-class-of")}

    for el in types.values():
        assert el.find(NS + "comment").text.strip()
    assert FASTA_GLOBS <= globs("chemical/x-fasta")
    assert parents("chemical/x-fasta") == {"text/plain"}
    assert {a.get("type") for a in types["chemical/x-fasta"].findall(NS + "alias")} >= {"application/x-fasta"}
    assert globs("chemical/x-fasta-gzip") == {g + ".gz" for g in globs("chemical/x-fasta")}
    assert parents("chemical/x-fasta-gzip") == {"application/gzip"}

    model = types["application/x-densehmm-model"]
    assert globs("application/x-densehmm-model") == {"*.h5"}
    assert parents("application/x-densehmm-model") == {"application/x-hdf"}
    (outer,) = model.find(NS + "magic").findall(NS + "match")
    assert outer.get("offset") == "0" and decode_magic(outer.get("value")) == HDF5_SIGNATURE
    (inner,) = outer.findall(NS + "match")
    from densehmm_core.modelfile import FORMAT_NAME
    assert inner.get("value") == FORMAT_NAME


def _model_file(path, n_models=1):
    """A real model file written by densehmm_core.modelfile.save_model."""
    from densehmm_core.modelfile import save_model
    from densehmm_core.standard import StandardHMM
    for k in range(n_models):
        save_model(path, StandardHMM(4 + k, 20, seed=k).init_params(), name=f"m{k}")
    return path


def test_model_magic_string_lies_where_the_xml_looks(tmp_path):
    """The MIME magic looks for the format name in bytes 8..65536: true for files the writer makes."""
    inner = mime_types()["application/x-densehmm-model"].find(f"{NS}magic/{NS}match/{NS}match")
    lo, hi = map(int, inner.get("offset").split(":"))
    needle = inner.get("value").encode()
    for n_models in (1, 6):
        data = _model_file(tmp_path / f"models{n_models}.h5", n_models).read_bytes()
        assert data.startswith(HDF5_SIGNATURE)
        pos = data.find(needle)
        assert lo <= pos and pos + len(needle) <= hi + len(needle), (n_models, pos)


# ----------------------------------------------------------------------------- icons
def test_icon_svg_is_well_formed_and_square():
    root = ET.parse(SVG).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.get("viewBox") == "0 0 512 512"


@pytest.mark.parametrize("size", SIZES)
def test_icon_png_sizes(size):
    path = RES / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "densehmm-studio.png"
    assert png_info(path) == (size, size, 8, 6)  # 8-bit RGBA


def test_icon_pngs_are_renderings_of_the_svg():
    """Re-render the SVG with Qt and compare with the committed PNGs (stale PNGs fail)."""
    sys.path.insert(0, str(REPO / "packaging"))
    try:
        import render_icons
    finally:
        sys.path.pop(0)
    from PySide6.QtGui import QImage
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        for p in render_icons.render(sizes=(32, 128), root=pathlib.Path(tmp)):
            size = int(p.parent.parent.name.split("x")[0])
            committed = RES / "icons" / "hicolor" / p.parent.parent.name / "apps" / p.name

            def pixels(f):
                img = QImage(str(f)).convertToFormat(QImage.Format.Format_RGBA8888)
                return np.frombuffer(img.constBits(), np.uint8).reshape(size, img.bytesPerLine())[:, :size * 4].copy()

            fresh, old = pixels(p).astype(int), pixels(committed).astype(int)
            assert np.abs(fresh - old).mean() < 2.0, f"{committed} is not a rendering of {SVG.name}"
            alpha = fresh.reshape(size, size, 4)[..., 3]
            assert (alpha == 255).mean() > 0.6 and alpha[0, 0] == 0  # opaque tile, transparent corners


# ----------------------------------------------------------------------------- install / uninstall
def _fake_bundle(tmp_path):
    """A stand-in for dist/DenseHMM-Studio whose executable records its arguments."""
    b = tmp_path / "fake bundle"
    b.mkdir()
    exe = b / "DenseHMM-Studio"
    exe.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\0" "$a"; done > "$ARGS_OUT"\n')
    exe.chmod(0o755)
    (b / "_internal").mkdir()
    (b / "_internal" / "payload.bin").write_bytes(b"x" * 100)
    return b


def _qt_mime_names(env, files):
    code = textwrap.dedent("""
        import sys
        from PySide6.QtCore import QMimeDatabase
        db = QMimeDatabase()
        print("\\n".join(db.mimeTypeForFile(f).name() for f in sys.argv[1:]))
    """)
    out = subprocess.run([sys.executable, "-c", code, *map(str, files)], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    return out.split()


def test_install_bundle_then_uninstall_removes_everything(tmp_path):
    env = xdg_env(tmp_path)
    data, config, home = (pathlib.Path(env[k]) for k in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "HOME"))
    (home / ".local" / "bin").mkdir(parents=True)
    # the user's own things that must survive
    config.mkdir()
    (config / "mimeapps.list").write_text("[Default Applications]\ntext/plain=org.gnome.TextEditor.desktop;\n"
                                          "[Added Associations]\nchemical/x-fasta=jalview.desktop;\n")
    other_icon = data / "icons" / "hicolor" / "48x48" / "apps" / "other.png"
    other_icon.parent.mkdir(parents=True)
    other_icon.write_bytes(b"other")
    bundle = _fake_bundle(tmp_path)

    run_sh(INSTALL, "--bundle", str(bundle), env=env)

    app_dir = data / "densehmm-studio"
    assert (app_dir / "bundle" / "_internal" / "payload.bin").read_bytes() == b"x" * 100
    for s in SIZES:
        assert png_info(data / "icons" / "hicolor" / f"{s}x{s}" / "apps" / "densehmm-studio.png")[:2] == (s, s)
    assert (data / "icons/hicolor/scalable/apps/densehmm-studio.svg").read_bytes() == SVG.read_bytes()
    assert (data / "mime/packages/densehmm-studio.xml").read_bytes() == MIME_XML.read_bytes()
    assert os.readlink(home / ".local/bin/densehmm-studio") == str(app_dir / "densehmm-studio")

    installed = data / "applications" / "densehmm-studio.desktop"
    d = read_desktop(installed)["Desktop Entry"]
    source = read_desktop(DESKTOP)["Desktop Entry"]
    assert {k: v for k, v in d.items() if k not in ("Exec", "TryExec")} == \
        {k: v for k, v in source.items() if k != "Exec"}
    argv = split_exec(d["Exec"])
    assert argv == [str(app_dir / "densehmm-studio"), "%F"]
    assert unescape_string(d["TryExec"]) == argv[0]
    if shutil.which("desktop-file-validate"):
        proc = subprocess.run(["desktop-file-validate", str(installed)], capture_output=True, text=True)
        assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout

    # what a file manager does on double-click: expand %F and run Exec
    files = [str(tmp_path / "my proteins.fasta"), str(tmp_path / "b$`x'.fa")]
    args_out = tmp_path / "args.bin"
    subprocess.run(expand_field_codes(argv, files), env={**env, "ARGS_OUT": str(args_out)}, check=True,
                   timeout=30)
    assert args_out.read_bytes().split(b"\0")[:-1] == [f.encode() for f in files]

    # default application, the user's other associations kept
    mimeapps = (config / "mimeapps.list").read_text()
    for t in mime_types():
        assert re.search(rf"^{re.escape(t)}=densehmm-studio\.desktop;?$", mimeapps, re.M), mimeapps
    assert "text/plain=org.gnome.TextEditor.desktop;" in mimeapps

    if shutil.which("update-mime-database"):
        # the registered types, as Qt (and so the app and file managers) sees them
        (tmp_path / "a.fasta").write_text(">x\nACDE\n")
        (tmp_path / "c.faa.gz").write_bytes(__import__("gzip").compress(b">x\nAC\n"))
        import h5py
        with h5py.File(tmp_path / "foreign.h5", "w") as f:
            f["x"] = np.arange(3)
        model = _model_file(tmp_path / "model.h5", 3)
        names = _qt_mime_names(env, [tmp_path / "a.fasta", tmp_path / "c.faa.gz", model, tmp_path / "foreign.h5"])
        assert names == ["chemical/x-fasta", "chemical/x-fasta-gzip", "application/x-densehmm-model",
                         "application/x-hdf"]

        if shutil.which("gio"):
            # a GNOME-style double click: GIO detects the type and starts the default application
            for f in (tmp_path / "a.fasta", model):
                args_out.unlink()
                subprocess.run(["gio", "open", str(f)], env={**env, "ARGS_OUT": str(args_out)}, check=True,
                               timeout=30, capture_output=True)
                for _ in range(100):
                    if args_out.exists() and args_out.read_bytes().endswith(b"\0"):
                        break
                    time.sleep(0.1)
                assert args_out.read_bytes().split(b"\0")[:-1] == [str(f).encode()]

    run_sh(UNINSTALL, env=env)

    left = all_files(data, config, home)
    assert left == [p for p in left if "densehmm" not in str(p.relative_to(tmp_path))], left
    for p in left:
        if p.is_file():
            assert b"densehmm" not in p.read_bytes(), f"{p} still mentions densehmm"
    assert other_icon.read_bytes() == b"other"
    mimeapps = (config / "mimeapps.list").read_text()
    assert "text/plain=org.gnome.TextEditor.desktop;" in mimeapps
    assert "chemical/x-fasta=jalview.desktop;" in mimeapps
    assert not (home / ".local/bin/densehmm-studio").exists()
    assert not (data / "icons/hicolor/scalable").exists()  # our empty folders pruned
    if shutil.which("update-mime-database"):
        assert _qt_mime_names(env, [tmp_path / "a.fasta"]) == ["text/plain"]
    # uninstalling twice is harmless
    run_sh(UNINSTALL, env=env)


def test_install_venv_launcher(tmp_path):
    env = xdg_env(tmp_path)
    data = pathlib.Path(env["XDG_DATA_HOME"])
    fake_python = tmp_path / "py thon"
    fake_python.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\0" "$a"; done > "$ARGS_OUT"\n')
    fake_python.chmod(0o755)
    run_sh(INSTALL, "--venv", "--python", str(fake_python), "--no-default", "--quiet", env=env)
    assert not (data / "densehmm-studio" / "bundle").exists()
    assert not (pathlib.Path(env["XDG_CONFIG_HOME"]) / "mimeapps.list").exists() or \
        "densehmm" not in (pathlib.Path(env["XDG_CONFIG_HOME"]) / "mimeapps.list").read_text()
    d = read_desktop(data / "applications" / "densehmm-studio.desktop")["Desktop Entry"]
    args_out = tmp_path / "args.bin"
    subprocess.run(expand_field_codes(split_exec(d["Exec"]), ["x y.fasta"]),
                   env={**env, "ARGS_OUT": str(args_out)}, check=True, timeout=30)
    assert args_out.read_bytes().split(b"\0")[:-1] == [str(REPO / "main.py").encode(), b"x y.fasta"]
    # the app's own files (QSettings, AppData/State folders): kept by a plain uninstall, gone with --purge
    config = pathlib.Path(env["XDG_CONFIG_HOME"])
    own = [config / "DenseHMM" / "DenseHMM Studio.conf", data / "DenseHMM" / "DenseHMM Studio" / "x.log"]
    for p in own:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x")
    (config / "DenseHMM" / "Other.conf").write_text("another app of the same organisation")
    run_sh(UNINSTALL, "--quiet", env=env)
    assert not any("densehmm" in str(p) for p in all_files(data))
    assert all(p.exists() for p in own)
    run_sh(UNINSTALL, "--quiet", "--purge", env=env)
    assert not any(p.exists() for p in own) and not (data / "DenseHMM").exists()
    assert (config / "DenseHMM" / "Other.conf").exists()


def test_install_refuses_a_missing_bundle(tmp_path):
    env = xdg_env(tmp_path)
    proc = run_sh(INSTALL, "--bundle", str(tmp_path / "nope"), env=env, check=False)
    assert proc.returncode != 0 and "nope" in proc.stderr
    assert not pathlib.Path(env["XDG_DATA_HOME"]).exists()


def test_packaging_files_are_syntactically_valid():
    for script in (INSTALL, UNINSTALL, REPO / "packaging" / "build.sh"):
        subprocess.run(["sh", "-n", str(script)], check=True)
    compile((REPO / "packaging" / "densehmm-studio.spec").read_text(), "densehmm-studio.spec", "exec")


# ----------------------------------------------------------------------------- the built bundle
def _bundle_state():
    """Why the bundle tests cannot run (None when they can): no bundle, or a stale one."""
    if not BUNDLE_EXE.exists():
        return "no bundle: build it with sh packaging/build.sh"
    built = BUNDLE_EXE.stat().st_mtime
    info = BUNDLE / "BUILD-INFO.txt"  # written by packaging/build.sh: when the sources were read
    if info.exists():
        m = re.search(r"^build_started_epoch=(\d+)$", info.read_text(), re.M)
        built = float(m.group(1)) if m else built
    sources = [REPO / "main.py", REPO / "packaging" / "densehmm-studio.spec",
               *(REPO / "app").rglob("*.py"), *(REPO / "densehmm_core").rglob("*.py")]
    newer = [p for p in sources if p.stat().st_mtime > built]
    if newer and os.environ.get("DENSEHMM_TEST_STALE_BUNDLE") != "1":  # "1": test it anyway
        return (f"the bundle is older than {len(newer)} source file(s) (e.g. {newer[0].relative_to(REPO)}): "
                "rebuild it with sh packaging/build.sh")
    return None


needs_bundle = pytest.mark.skipif(_bundle_state() is not None, reason=str(_bundle_state()))


@needs_bundle
def test_bundle_has_resources_and_no_unused_qt():
    internal = BUNDLE / "_internal"
    assert (internal / "resources" / "icons" / "densehmm-studio.svg").read_bytes() == SVG.read_bytes()
    assert (internal / "resources" / "densehmm-studio.desktop").exists()
    names = {p.name for p in internal.rglob("*")}
    for unused in ("libQt6WebEngineCore.so.6", "libQt6Quick.so.6", "libQt6Qml.so.6", "libQt6Multimedia.so.6",
                   "libQt63DCore.so.6", "QtWebEngineCore.abi3.so", "QtQuick.abi3.so"):
        assert unused not in names, unused
    assert any(n.startswith("_pywrap_tensorflow") for n in names)
    # importlib.metadata must find the versions the About box and model files report
    for dist in ("hmmlearn", "numpy", "h5py", "pyqtgraph"):
        assert list(internal.glob(f"{dist}-*.dist-info")), dist


@needs_bundle
def test_bundle_selftest_tensorflow_hmmlearn_h5py(tmp_path):
    """The bundle's opt-in self-test (packaging/pyi_rth_densehmm_selftest.py): TensorFlow with a Keras
    Adam loop in a tf.function, hmmlearn, h5py and the package metadata work inside the bundle."""
    env = dict(os.environ, DENSEHMM_BUNDLE_SELFTEST="1", HOME=str(tmp_path), TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([str(BUNDLE_EXE)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    for name in ("resources", "hmmlearn", "model file", "tensorflow", "worker process"):
        assert any(line.startswith(f"selftest ok   {name}:") for line in lines), proc.stdout
    assert lines[-1] == "selftest passed"
    assert re.search(r"TensorFlow 2\.\d+", proc.stdout)


@needs_bundle
def test_bundle_opens_a_fasta_file_offscreen_and_exits(tmp_path):
    """Start the bundle as a file manager would (FASTA path as argument), offscreen, with the app's
    --quit-after timer; it must load the file (it lands in the recent files that QSettings writes
    to $XDG_CONFIG_HOME), let TensorFlow load in the background (in a spawned worker process, i.e.
    the bundle's executable started again by multiprocessing), and exit with status 0."""
    fasta = tmp_path / "tiny proteins.fasta"
    fasta.write_text(">p1 first\nMKVLAAGIVGLLA\n>p2 second\nMSTNPKPQRK\n")
    xdg = {k: str(tmp_path / k.lower()) for k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
                                                   "XDG_STATE_HOME")}
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", HOME=str(tmp_path / "home"), **xdg)
    (tmp_path / "home").mkdir()
    proc = subprocess.Popen([str(BUNDLE_EXE), str(fasta), "--quit-after", "25"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=150)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"the bundle did not exit on its --quit-after timer:\n{out[-3000:]}")
    assert proc.returncode == 0, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    conf = pathlib.Path(xdg["XDG_CONFIG_HOME"]) / "DenseHMM" / "DenseHMM Studio.conf"
    assert conf.exists(), f"no settings written to {conf}:\n{out[-3000:]}"
    assert "tiny proteins.fasta" in conf.read_text(), conf.read_text()
    # a log file, wherever the app keeps it in the per-user folders, must tell the same story
    logs = [p for k in xdg.values() for p in pathlib.Path(k).rglob("*.log")]
    for log in logs:
        text = log.read_text(errors="replace")
        assert "tiny proteins.fasta" in text, log
        assert not re.search(r"TensorFlow could not be loaded", text), text[-3000:]
        # TensorFlow is loaded by a training worker process: the frozen bundle can spawn workers
        assert re.search(r"TensorFlow 2\.\d+\S* loaded in [\d.]+ s in a training worker process", text), \
            text[-3000:]
    assert logs, "no log file written"


def _free_display():
    """An X display nobody serves here (no socket, no lock file); xvfb-run itself uses :99."""
    for n in range(150, 400):
        if not os.path.exists(f"/tmp/.X11-unix/X{n}") and not os.path.exists(f"/tmp/.X{n}-lock"):
            return f":{n}"
    pytest.skip("no free X display number")


@needs_bundle
@pytest.mark.parametrize("display", [None, "unreachable"], ids=["DISPLAY unset", "DISPLAY unreachable"])
def test_bundle_without_display_says_so(tmp_path, display):
    """No usable display: a clear message on stderr and a non-zero exit, never Qt's abort (134)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"),
               XDG_RUNTIME_DIR=str(tmp_path))
    if display:
        env["DISPLAY"] = _free_display()  # e.g. a stale DISPLAY after the X session ended, or ssh without -X
    proc = subprocess.run([str(BUNDLE_EXE), "--no-tensorflow"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode not in (0, -signal.SIGABRT, 134), (proc.returncode, proc.stderr[-2000:])
    assert re.search(r"display", proc.stderr, re.I), proc.stderr[-2000:]
    assert "Aborted" not in proc.stderr and "core dumped" not in proc.stderr

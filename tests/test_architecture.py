"""The science core must stay Qt-free (static inspection of the source)."""
import ast
import pathlib

CORE = pathlib.Path(__file__).resolve().parent.parent / "densehmm_core"
FORBIDDEN = {"PySide6", "shiboken6", "pyqtgraph", "PyQt5", "PyQt6", "qtpy"}


def qt_imports(source: str):
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            names = [str(node.args[0].value)]
        else:
            continue
        found += [n for n in names if n.split(".")[0] in FORBIDDEN]
    return found


def test_checker_detects_qt_imports():
    assert qt_imports("import PySide6.QtCore") == ["PySide6.QtCore"]
    assert qt_imports("from pyqtgraph import PlotWidget") == ["pyqtgraph"]
    assert qt_imports("import importlib\nimportlib.import_module('shiboken6')") == ["shiboken6"]
    assert qt_imports("import numpy") == []


def test_core_never_imports_qt():
    files = sorted(CORE.rglob("*.py"))
    assert files, "densehmm_core has no source files"
    offenders = {str(f.relative_to(CORE)): qt_imports(f.read_text(encoding="utf-8")) for f in files}
    offenders = {k: v for k, v in offenders.items() if v}
    assert not offenders, f"densehmm_core must not import Qt: {offenders}"


def test_core_import_does_not_pull_tensorflow():
    import subprocess
    import sys
    code = "import sys, densehmm_core; densehmm_core.StandardHMM; print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=CORE.parent, check=True).stdout.strip()
    assert out == "False"

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


# ------------------------------------------------------------------ the app uses the core's public names
# import-linter (pyproject.toml, `sh dev.sh lint`) checks modules: the core's private modules are
# used only inside their package, and the app never imports the command line or the experiments.
# It cannot see names, so this test checks them: every name the app imports from the core is
# listed in the __all__ of the core module it comes from (or is a public submodule), and no
# attribute starting with "_" is read from a core module.
APP = CORE.parent / "app"


def _core_module_file(dotted: str):
    path = CORE.parent.joinpath(*dotted.split("."))
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return None


def _declared_all(dotted: str):
    """The names in a core module's literal ``__all__`` (None when it has none)."""
    tree = ast.parse(_core_module_file(dotted).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            names = set()
            for sub in ast.walk(node.value):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                    names.add(sub.value)
            if isinstance(node.value, ast.BinOp):  # sorted(_EXPORTS) + [...]: the keys of _EXPORTS
                for other in tree.body:
                    if (isinstance(other, ast.Assign) and isinstance(other.value, ast.Dict)
                            and any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in other.targets)):
                        names |= {k.value for k in other.value.keys if isinstance(k, ast.Constant)}
            return names
    return None


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_core_uses(source: str):
    """Names the source takes from ``densehmm_core`` that are not public there."""
    problems = []
    tree = ast.parse(source)
    core_aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "densehmm_core":
                    if any(_private(part) for part in a.name.split(".")):
                        problems.append(a.name)
                    core_aliases.add((a.asname or a.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == "densehmm_core":
            if any(_private(part) for part in node.module.split(".")):
                problems.append(node.module)
                continue
            public = _declared_all(node.module) if _core_module_file(node.module) else None
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                if not _private(a.name) and _core_module_file(sub) is not None:
                    core_aliases.add(a.asname or a.name)  # a public submodule
                elif _private(a.name) or public is None or a.name not in public:
                    problems.append(sub)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr)
                and isinstance(node.value, ast.Name) and node.value.id in core_aliases):
            problems.append(f"{node.value.id}.{node.attr}")
    return problems


def test_public_name_checker():
    assert private_core_uses("from densehmm_core.modelfile import load_model") == []
    assert private_core_uses("from densehmm_core import modelfile\nmodelfile.save_model") == []
    assert private_core_uses("from densehmm_core.modelfile.schema import _check_name") == [
        "densehmm_core.modelfile.schema._check_name"]
    assert private_core_uses("from densehmm_core.dense import FIT_METHODS") == ["densehmm_core.dense.FIT_METHODS"]
    assert private_core_uses("from densehmm_core import _cooc_np") == ["densehmm_core._cooc_np"]
    assert private_core_uses("import densehmm_core.modelfile as mf\nmf._guard") == ["mf._guard"]
    assert private_core_uses("from densehmm_core import StandardHMM, __version__") == []


def test_app_uses_only_the_cores_public_names():
    files = sorted(APP.rglob("*.py"))
    assert files
    offenders = {str(f.relative_to(APP.parent)): private_core_uses(f.read_text(encoding="utf-8")) for f in files}
    offenders = {k: v for k, v in offenders.items() if v}
    assert not offenders, f"the app must use only the core's public names (its modules' __all__): {offenders}"


def dashboard_view_reaches(source: str):
    """``dashboard.<view>.<member>`` in a controller's source: a view inside the dashboard reached past the
    Dashboard's own methods (docs/ARCHITECTURE.md: controllers talk to the Dashboard, never to its views)."""
    import re
    return re.findall(r"\bdashboard\.\w+\.\w+", source)


def test_window_controllers_talk_to_the_dashboard_never_to_a_view_inside_it():
    assert dashboard_view_reaches("self.window.dashboard.sweep.add_rows(r)") == ["dashboard.sweep.add_rows"]
    assert dashboard_view_reaches("self.window.dashboard.add_sweep_rows(r)\nd = self.window.dashboard") == []
    window = pathlib.Path(__file__).resolve().parent.parent / "app" / "window"
    offenders = {f.name: dashboard_view_reaches(f.read_text(encoding="utf-8")) for f in sorted(window.glob("*.py"))}
    assert not {k: v for k, v in offenders.items() if v}, offenders


def test_every_app_module_has_a_layer():
    """The app's layers contract (pyproject.toml) constrains only the modules it names: a new module left
    out of it (app/sweeps.py and app/print_figure.py were) could import any layer above it unchecked."""
    import tomllib
    root = CORE.parent
    contracts = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c.get("containers") == ["app"] and c["type"] == "layers")
    named = {m.strip() for layer in layers for m in layer.replace("|", ":").split(":")}
    modules = {p.stem for p in (root / "app").glob("*.py") if p.stem != "__init__"}
    modules |= {p.name for p in (root / "app").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert modules - named == set(), sorted(modules - named)

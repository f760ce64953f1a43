"""Public names only across the package boundary (issue 20).

Operators, DAGs, benchmarks and scripts use what ``astrid_airflow`` (and its public
subpackages ``astrid_airflow.io``, ``astrid_airflow.engine``, ...,
``astrid_airflow.operators.*``) export; inside the library no module imports another
module's ``_``-prefixed name. That no module imports another subpackage's private
modules is import-linter's ``private-modules`` contract (``make lint``,
``tests/project/test_architecture.py``); these tests cover what no contract expresses: private
*names*, code strings run in subprocesses, documentation examples and the lazy export
lists. Tests may import private modules (white-box checks).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = ("operators", "dags", "benchmarks", "scripts")
# "astrid_airflow._x" inside code strings (subprocess one-liners) counts too
PRIVATE_PATH = re.compile(r"\bastrid_airflow(?:\.[A-Za-z0-9]\w*)*\._\w")


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def _outside_violations(path: Path) -> list[str]:
    """Private ``astrid_airflow`` paths or names imported by a file outside the library.

    Relative imports inside ``operators/`` (the provider's own ``._common``) are the
    provider's business and allowed.
    """
    return [f"{path.name}: {v}" for v in _private_imports(path.read_text(encoding="utf-8"))]


def _private_imports(text: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out += [f"import {a.name}" for a in node.names
                    if a.name.split(".")[0] == "astrid_airflow"
                    and any(_private(p) for p in a.name.split(".")[1:])]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.split(".")[0] == "astrid_airflow":
            parts = node.module.split(".")[1:]
            if any(_private(p) for p in parts):
                out.append(f"from {node.module} import ...")
            out += [f"from {node.module} import {a.name}" for a in node.names
                    if _private(a.name)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                "import" in node.value and PRIVATE_PATH.search(node.value):
            out.append(f"code string: {PRIVATE_PATH.search(node.value).group(0)}")
    return out


def _library_violations(path: Path) -> list[str]:
    """``_``-prefixed names a library module imports from another library module."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        # ``from . import _fits`` imports a sibling module (the package's business)
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.level > 0 or node.module.split(".")[0] == "astrid_airflow"):
            out += [f"{path.relative_to(ROOT)}:{node.lineno}: {'.' * node.level}"
                    f"{node.module or ''} import {a.name}"
                    for a in node.names if _private(a.name)]
    return out


@pytest.mark.parametrize("folder", OUTSIDE)
def test_outside_the_library_only_public_names(folder):
    # not hidden folders: a benchmark's throw-away venv (benchmarks/.venv-anonymeter)
    files = sorted(f for f in (ROOT / folder).rglob("*.py")
                   if not any(part.startswith(".") for part in f.relative_to(ROOT).parts))
    assert files, folder
    bad = [v for f in files for v in _outside_violations(f)]
    assert not bad, "private astrid_airflow imports:\n" + "\n".join(bad)


def test_library_modules_import_no_private_names_of_each_other():
    bad = [v for f in sorted((ROOT / "astrid_airflow").rglob("*.py"))
           for v in _library_violations(f)]
    assert not bad, "private cross-module imports:\n" + "\n".join(bad)


DOC_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def test_docs_examples_only_public_names():
    # the docs' code examples are what users copy: public names only (issue 20)
    bad = [f"{md.relative_to(ROOT)}: {v}"
           for md in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
           for block in DOC_BLOCK.findall(md.read_text(encoding="utf-8"))
           for v in _block_imports(block)]
    assert not bad, "private astrid_airflow imports in docs:\n" + "\n".join(bad)


def _block_imports(block: str) -> list[str]:
    try:
        return _private_imports(block)
    except SyntaxError:  # a sketch such as ``Operator(task_id="x", ...)``: its import lines
        return [line.strip() for line in block.splitlines()
                if re.match(r"\s*(from|import)\s", line) and PRIVATE_PATH.search(line)]


def test_the_guard_sees_a_private_import(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from astrid_airflow.release._store import ArtefactStore\n"
                     "from astrid_airflow import _EXPORTS, GatePolicy\n"
                     "import astrid_airflow.gate._gate\n"
                     "from astrid_airflow.io import load_json\n"
                     "CODE = 'import astrid_airflow.release._metrics'\n")
    assert len(_outside_violations(probe)) == 4


# ----------------------------------------------------- subpackages keep their modules

LIBRARY = ROOT / "astrid_airflow"
#: subpackages with lazy public exports (cli and operators export nothing)
EXPORTING = sorted(p.parent.name for p in LIBRARY.glob("*/__init__.py")
                   if "lazy_exports(__name__)" in p.read_text(encoding="utf-8"))


def _dotted(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("sub", EXPORTING)
def test_subpackage_exports_are_lazy_and_complete(sub):
    """``_EXPORTS``, ``__all__`` and the ``TYPE_CHECKING`` imports name the same names,
    and every name resolves."""
    init = LIBRARY / sub / "__init__.py"
    tree = ast.parse(init.read_text(encoding="utf-8"))
    typed = set()
    runtime = []
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            typed |= {a.asname or a.name for n in node.body for a in n.names}
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            runtime.append(node.module)
    assert runtime == ["typing", "astrid_airflow._lazy"], runtime  # nothing eager
    module = importlib.import_module(f"astrid_airflow.{sub}")
    assert set(module.__all__) == set(module._EXPORTS) == typed
    for name in module.__all__:
        getattr(module, name)
    assert set(dir(module)) >= set(module.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        module.nope  # noqa: B018

"""The import contracts of ``pyproject.toml`` hold, and none of them ignores an import.

``make lint`` runs ``lint-imports``; running the same contracts here makes the layers
part of every test run too, and the probes show that each contract can fail.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
LAYERS = ["cli", "pipeline", "scale", "report", "gate", "privacy", "release", "engine",
          "io"]


def _lint(root: Path) -> subprocess.CompletedProcess:
    lint = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(lint), "--no-cache", "--config", str(root / "pyproject.toml")],
                          cwd=root, capture_output=True, text=True, timeout=300)


def test_contracts_are_kept():
    out = _lint(ROOT)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_no_contract_ignores_an_import():
    assert not [c["id"] for c in CONFIG["contracts"] if c.get("ignore_imports")]


def test_the_acyclic_contract_reaches_every_subpackage():
    """The acyclicity contract looks inside every package of both roots, skipping none."""
    (acyclic,) = [c for c in CONFIG["contracts"] if c["type"] == "acyclic_siblings"]
    assert set(acyclic["ancestors"]) == set(CONFIG["root_packages"])
    assert not acyclic.get("skip_descendants")
    packages = [p.parent.relative_to(ROOT) for root in CONFIG["root_packages"]
                for p in (ROOT / root).rglob("__init__.py")]
    assert acyclic["depth"] >= max(len(p.parts) for p in packages) - 1


def test_the_layers_are_the_documented_ones():
    (layers,) = [c for c in CONFIG["contracts"] if c["type"] == "layers"]
    assert layers["layers"][:-1] == LAYERS
    assert set(layers["layers"][-1].replace(" ", "").split(":")) == {
        "_html", "_validation", "_lazy", "_version", "_errors"}


@pytest.mark.parametrize(("where", "line", "broken"), [
    ("astrid_airflow/io/_fs.py", "from astrid_airflow.engine import Grouping", "layered"),
    ("astrid_airflow/io/_fs.py", "from astrid_airflow import Grouping", "layered"),
    ("astrid_airflow/engine/_split.py", "import airflow.sdk", "never imports Airflow"),
    ("astrid_airflow/gate/_kit.py", "from astrid_airflow.privacy._risk import x",
     "private module"),
    ("operators/_lineage.py", "from . import publish", "cycles"),
    # a cycle between two modules of one subpackage, then of a sub-subpackage
    ("astrid_airflow/io/_fs.py", "from ._atomic import atomic_path",
     "No cycles are allowed in astrid_airflow.io."),
    ("astrid_airflow/gate/metrics/_base.py", "from .attack_risks import x",
     "No cycles are allowed in astrid_airflow.gate.metrics."),
])
def test_each_contract_can_fail(tmp_path, where, line, broken):
    copy = tmp_path / "tree"
    for part in ("astrid_airflow", "operators"):
        shutil.copytree(ROOT / part, copy / part,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    with (copy / where).open("a") as fh:
        fh.write(f"\n{line}  # noqa\n")
    out = _lint(copy)
    assert out.returncode != 0
    assert broken in out.stdout.split("Broken contracts", 1)[1]

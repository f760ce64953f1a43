"""The core library never imports Airflow (nor GX/scikit-learn on a bare import).

The core is the ``astrid_airflow/`` tree. The provider lives apart in ``operators/``
(installed as ``astrid_airflow.operators``): the one place besides the DAGs where Airflow
is imported. Statically that is import-linter's ``no-airflow-in-core`` contract (and
ruff's TID251); these tests check it at run time.
"""

import subprocess
import sys
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[2] / "astrid_airflow"
SUBPACKAGES = sorted(p.parent.name for p in LIBRARY.glob("*/__init__.py"))


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\n"
                          "print('\\n'.join(sorted(sys.modules)))"],
                         check=True, capture_output=True, text=True).stdout
    return set(out.split())


def test_import_is_light_and_airflow_free():
    mods = _modules_after("import astrid_airflow")
    for heavy in ("airflow", "great_expectations", "sklearn"):
        assert heavy not in mods, heavy


def test_engine_does_not_import_airflow():
    mods = _modules_after(
        "import astrid_airflow as a\n"
        "a.astrid; a.test_grouping; a.read_table; a.goldeneye_permute; a.make_synthetic\n"
        "from astrid_airflow.cli import build_parser; build_parser()")
    assert "airflow" not in mods
    assert not any(m.startswith("airflow.") for m in mods)


def test_version_from_metadata():
    import astrid_airflow

    assert astrid_airflow.__version__ != "0+unknown"


def test_every_core_module_imports_without_airflow():
    """Dynamically: importing every core module (scale-out backends too) loads no Airflow."""
    mods = _modules_after(
        "import importlib, pkgutil, astrid_airflow\n"
        "for m in pkgutil.walk_packages(astrid_airflow.__path__, 'astrid_airflow.'):\n"
        "    if not m.name.startswith('astrid_airflow.operators') "
        "and not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)")
    assert "astrid_airflow.gate._gate" in mods and "astrid_airflow.cli._learn" in mods
    assert not {m for m in mods if m.split(".")[0] == "airflow"}


def test_subpackages_import_light():
    """A subpackage's ``__init__`` exports lazily: importing it loads none of its modules."""
    assert "engine" in SUBPACKAGES and "operators" not in SUBPACKAGES
    mods = _modules_after("\n".join(f"import astrid_airflow.{s}" for s in SUBPACKAGES
                                     if s != "cli"))
    for heavy in ("airflow", "great_expectations", "sklearn", "pandas", "numpy"):
        assert heavy not in mods, heavy
    assert not [m for m in mods if m.startswith("astrid_airflow.") and "._" in m
                and m != "astrid_airflow._lazy"]


def test_gate_classes_import_without_great_expectations():
    """The expectation and metric modules take GX from ``gx_kit()`` when registered."""
    mods = _modules_after("import astrid_airflow.gate._registry")
    assert "great_expectations" not in mods
    assert "astrid_airflow.gate.expectations.expect_surrogate_schema_to_match_original" in mods
    assert "astrid_airflow.gate.metrics.multiset_differences" in mods

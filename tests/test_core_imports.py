"""The core library never imports Airflow (nor GX/scikit-learn on a bare import)."""

import subprocess
import sys


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

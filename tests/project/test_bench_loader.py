"""benchmarks/uci.py: the paper's cleaning of the UCI files gives the README's counts."""

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_uci", ROOT / "benchmarks" / "uci.py")
uci = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(uci)

pytestmark = pytest.mark.skipif(not (uci.data_dir() / "diabetes.arff").exists(),
                                reason="UCI benchmark files not available")


@pytest.mark.parametrize("name", list(uci.COUNTS))
def test_cleaned_counts_match_the_readme(name):
    table, target = uci.load(name)
    rows, classes, attrs = uci.COUNTS[name]
    assert target == "class" and table.columns[-1] == "class"
    assert (len(table), table[target].nunique(), table.shape[1] - 1) == (rows, classes, attrs)
    assert not table.isna().any().any()
    assert all(table[c].nunique() > 1 for c in table.columns if c != target)


def test_soybean_readings_differ_as_documented():
    paper, _ = uci.load("soybean")
    clean, _ = uci.load("soybean-clean")
    # the paper's reading keeps " ?" as a category and loses only the date-missing row
    assert int((paper.drop(columns="class") == "?").sum().sum()) > 2000
    assert (clean.drop(columns="class").astype(str) == "?").sum().sum() == 0
    assert "2-4-d-injury" in set(paper["class"]) and "2-4-d-injury" not in set(clean["class"])


def test_unknown_dataset_is_rejected():
    with pytest.raises(ValueError, match="Unknown dataset"):
        uci.load("iris")

"""`astrid shuffle`: the JSON contract, artefact references, loud warnings, bad input."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from astrid_airflow import ArtefactStore, make_surrogate
from astrid_airflow.cli import main
from astrid_airflow.release._artefact import GroupingArtefact

CONTRACT = ("intact_row_proportion", "expected_intact_row_proportion",
            "largest_group_unique_share", "accuracy_original", "accuracy_surrogate", "rows",
            "out")


def table(n_per_class: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 2 * n_per_class
    y = np.repeat(["neg", "pos"], n_per_class)
    return pd.DataFrame({
        "a1": rng.normal(size=n) + (y == "pos"),
        "a2": rng.normal(size=n),
        "a3": pd.Categorical(rng.choice(["u", "v", "w"], n)),
        "a4": rng.integers(0, 5, n),
        "class": y,
    })


def save_artefact(root, grouping, data: pd.DataFrame, name: str = "demo") -> str:
    result = {"grouping": grouping, "k": len(grouping), "table": [], "target": "class",
              "classifier": {"preset": "svm"}, "scoring": "accuracy", "alpha": 0.05,
              "n_search": 10, "n_test": 20, "random_state": 0}
    art = GroupingArtefact.from_result(result, data)
    return ArtefactStore(root).save(name, art)


@pytest.fixture
def setup(tmp_path):
    data = table()
    src = tmp_path / "data.parquet"
    data.to_parquet(src)
    root = tmp_path / "store"
    save_artefact(root, [["a1", "a2"], ["a3"], ["a4"]], data)
    return data, src, root, tmp_path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_contract_and_output(setup, capsys):
    data, src, root, tmp = setup
    out_file = tmp / "surr.parquet"
    code, out, err = run(capsys, "shuffle", src, "--artefact", f"{root}/demo", "--out",
                         out_file, "--seed", 3, "--json")
    assert code == 0, err
    d = json.loads(out)
    for key in CONTRACT:
        assert key in d, key
    assert d["out"] == str(out_file) and d["rows"] == len(data) and d["seed"] == 3
    assert 0 <= d["intact_row_proportion"] <= 1
    assert 0 < d["expected_intact_row_proportion"] < 0.2
    assert isinstance(d["accuracy_original"], float)
    assert isinstance(d["accuracy_surrogate"], float)
    assert d["protects_nothing"] is False
    got = pd.read_parquet(out_file)
    art = ArtefactStore(root).load("demo")
    pd.testing.assert_frame_equal(got, make_surrogate(data, art, random_state=3))
    assert "WARNING" not in err


def test_version_ref_csv_output_copies_and_no_utility(setup, capsys):
    data, src, root, tmp = setup
    save_artefact(root, [["a1"], ["a2"], ["a3", "a4"]], data)  # v0002
    code, out, err = run(capsys, "shuffle", src, "--artefact", f"{root}/demo@v0001", "--out",
                         tmp / "s.csv", "--seed", 0, "--n-copies", 2, "--no-utility",
                         "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["out"] == [str(tmp / "s-1.csv"), str(tmp / "s-2.csv")]
    assert all(os.path.exists(p) for p in d["out"])
    assert d["accuracy_original"] is None and d["accuracy_surrogate"] is None
    assert d["artefact"].endswith(os.path.join("v0001", "artefact.json"))
    assert [c["out"] for c in d["copies"]] == d["out"]
    assert d["largest_group"] == ["a1", "a2"]


def test_human_output(setup, capsys):
    _, src, root, tmp = setup
    code, out, _ = run(capsys, "shuffle", src, "--artefact", f"{root}/demo", "--out",
                       tmp / "h.parquet", "--seed", 1)
    assert code == 0
    assert "intact-row proportion" in out and "accuracy" in out


def test_one_group_artefact_is_flagged_loudly(tmp_path, capsys):
    data = table()
    src = tmp_path / "d.csv"
    data.to_csv(src, index=False)
    save_artefact(tmp_path / "store", [["a1", "a2", "a3", "a4"]], data, name="one")
    code, out, err = run(capsys, "shuffle", src, "--artefact", f"{tmp_path}/store/one",
                         "--out", tmp_path / "s.parquet", "--seed", 0, "--no-utility",
                         "--json")
    assert code == 0
    d = json.loads(out)
    assert d["protects_nothing"] is True and d["intact_row_proportion"] == 1.0
    assert "PROTECTS NOTHING" in err


def test_schema_mismatch_exits_2_and_writes_nothing(setup, capsys):
    data, _, root, tmp = setup
    bad = tmp / "bad.parquet"
    data.assign(a4=data["a4"].astype(str)).to_parquet(bad)
    out_file = tmp / "never.parquet"
    code, out, err = run(capsys, "shuffle", bad, "--artefact", f"{root}/demo", "--out",
                         out_file, "--json")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "a4" in err
    assert not out_file.exists()
    assert not [f for f in os.listdir(tmp) if f.startswith(".never")]


@pytest.mark.parametrize("case", ["no-artefact", "exists", "bad-suffix", "no-data",
                                  "bad-copies"])
def test_bad_input_exits_2(setup, capsys, case):
    _, src, root, tmp = setup
    out_file = tmp / "o.parquet"
    args = ["shuffle", src, "--artefact", f"{root}/demo", "--out", out_file]
    if case == "no-artefact":
        args[3] = f"{root}/missing"
    elif case == "exists":
        out_file.write_bytes(b"old")
    elif case == "bad-suffix":
        args[5] = tmp / "o.xlsx"
    elif case == "no-data":
        args[1] = tmp / "absent.parquet"
    else:
        args += ["--n-copies", "0"]
    code, _, err = run(capsys, *args)
    assert code == 2, err
    assert err.startswith("astrid shuffle: error:") and err.count("\n") == 1
    if case == "exists":
        assert out_file.read_bytes() == b"old"
    else:
        assert not out_file.exists()

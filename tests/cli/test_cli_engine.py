"""`astrid learn`, `astrid test`, `astrid synth`: outputs and bad-input behaviour."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from astrid_airflow.cli import main


@pytest.fixture(scope="module")
def synth_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "synthetic.csv"
    assert main(["synth", "--out", str(path), "--seed", "0"]) == 0
    return path


def test_synth_writes_the_running_example(synth_csv):
    t = pd.read_csv(synth_csv)
    assert list(t.columns) == ["a1", "a2", "a3", "a4", "class"]
    assert t["class"].value_counts().to_dict() == {0: 500, 1: 500}
    c0, c1 = t[t["class"] == 0], t[t["class"] == 1]
    assert c0[["a1", "a2"]].corr().iloc[0, 1] > 0.9
    assert c1[["a1", "a2"]].corr().iloc[0, 1] < -0.9
    assert c0["a3"].mean() > 0.4 and c1["a3"].mean() < -0.4
    assert t["a4"].between(0, 1).all()


def test_synth_refuses_to_overwrite(synth_csv, capsys):
    assert main(["synth", "--out", str(synth_csv)]) == 2
    assert "exists" in capsys.readouterr().err


def test_learn_json_contract(synth_csv, capsys):
    code = main(["learn", str(synth_csv), "--target", "class", "--r-search", "4",
                 "--r-test", "6", "--seed", "1", "--json", "--quiet"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    for key in ["grouping", "k", "table", "baseline_accuracy", "p_og", "n_fits", "seconds"]:
        assert key in out
    assert len(out["table"]) == 4
    for row in out["table"]:
        assert set(row) >= {"k", "acc_ave", "acc_min", "acc_max", "sd", "p", "grouping"}
    assert sorted(c for g in out["grouping"] for c in g) == ["a1", "a2", "a3", "a4"]


def test_learn_prints_the_paper_table(synth_csv, capsys):
    assert main(["learn", str(synth_csv), "--target", "class", "--r-search", "3",
                 "--r-test", "4", "--seed", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "acc_ave" in out and "(A" in out and "chosen grouping" in out


def test_test_json_contract(synth_csv, capsys):
    assert main(["test", str(synth_csv), "--target", "class", "--grouping", "a1,a2;a3;a4",
                 "--r-test", "7", "--seed", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"p_value", "accuracy", "null_accuracies"}
    assert len(out["null_accuracies"]) == 7


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["learn", "{csv}", "--target", "nope"], "Target column 'nope'",
                     id="unknown target"),
        pytest.param(["test", "{csv}", "--target", "class", "--grouping", "a1,a2;a3"],
                     "not a partition", id="not a partition"),
        pytest.param(["test", "{csv}", "--target", "class", "--grouping", "a1,zz;a2;a3;a4"],
                     "unknown column", id="unknown column"),
        pytest.param(["learn", "/no/such.csv", "--target", "class"], "Unreadable file",
                     id="missing file"),
        pytest.param(["learn", "{txt}", "--target", "class"], "Unreadable file",
                     id="unreadable suffix"),
        pytest.param(["learn", "{one_class}", "--target", "class"], "single class",
                     id="one class"),
        pytest.param(["learn", "{tiny_class}", "--target", "class"], "fewer than 4 rows",
                     id="too few rows"),
        pytest.param(["learn", "{empty}", "--target", "class"], "empty", id="empty table"),
        pytest.param(["learn", "{csv}", "--target", "class", "--alpha", "2"], "alpha",
                     id="alpha"),
        pytest.param(["learn", "{csv}", "--target", "class", "--r-test", "0"], "n_test",
                     id="zero R"),
        pytest.param(["learn", "{csv}", "--target", "class", "--store", "x"], "--name",
                     id="store without name"),
    ],
)
def test_bad_input_one_line_exit_2(argv, message, synth_csv, tmp_path, capsys):
    t = pd.read_csv(synth_csv)
    files = {"csv": synth_csv, "txt": tmp_path / "t.txt",
             "one_class": tmp_path / "one.csv", "tiny_class": tmp_path / "tiny.csv",
             "empty": tmp_path / "empty.csv"}
    files["txt"].write_text("x")
    t.assign(**{"class": 0}).to_csv(files["one_class"], index=False)
    pd.concat([t, t.iloc[:3].assign(**{"class": 7})]).to_csv(files["tiny_class"], index=False)
    t.iloc[:0].to_csv(files["empty"], index=False)
    argv = [a.format(**files) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err
    assert len(err.splitlines()) == 1
    assert "Traceback" not in err


def test_console_script_runs(synth_csv):
    proc = subprocess.run([sys.executable, "-m", "astrid_airflow.cli", "test", str(synth_csv),
                           "--target", "class", "--grouping", "a1;a2;a3;a4", "--r-test", "3",
                           "--json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "p_value" in json.loads(proc.stdout)
    bad = subprocess.run([sys.executable, "-m", "astrid_airflow.cli", "learn", "/nope.csv",
                          "--target", "x"], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr

"""Large tables: progress lines for logs, the cost estimate and budget, SIGTERM, the
hgb preset, stratified samples (issue 19). Small and not timed against thresholds,
except the estimate's 2x band over a run of a few seconds."""

import json
import logging

import numpy as np
import pytest

import astrid_airflow.engine._cost as cost
import astrid_airflow.engine._progress as progress
import astrid_airflow.engine._search as search
from astrid_airflow import BudgetError, ParameterError, astrid, make_synthetic
from astrid_airflow.cli import main


@pytest.fixture(scope="module")
def synthetic():
    return make_synthetic(random_state=0)


def test_progress_lines_without_a_terminal(synthetic, caplog, monkeypatch):
    monkeypatch.setattr(progress, "INTERVAL", 0.05)
    with caplog.at_level(logging.INFO, logger="astrid_airflow"):
        r = astrid(synthetic, target="class", n_search=10, n_test=20, random_state=0)
    lines = [m for m in caplog.messages if m.startswith("astrid progress:")]
    assert lines, caplog.messages  # pytest's stderr is not a terminal
    last = lines[-1]
    assert f"/{r.n_fits:,} planned" in last and "time left" in last and "elapsed" in last
    assert any(m.startswith("astrid estimate") for m in caplog.messages)


def test_no_progress_lines_when_off(synthetic, caplog, monkeypatch):
    monkeypatch.setattr(progress, "INTERVAL", 0.01)
    with caplog.at_level(logging.INFO, logger="astrid_airflow"):
        astrid(synthetic, target="class", n_search=3, n_test=5, random_state=0,
               progress=False)
    assert not [m for m in caplog.messages if m.startswith("astrid progress:")]


def test_adaptive_progress_counts_against_the_worst_case(synthetic, caplog, monkeypatch):
    monkeypatch.setattr(progress, "INTERVAL", 0.02)
    with caplog.at_level(logging.INFO, logger="astrid_airflow"):
        r = astrid(synthetic, target="class", n_search=10, n_test=40, random_state=0,
                   adaptive=True)
    e = r.estimate
    assert e["fits_kind"] == "adaptive, expected" and e["fits_worst_case"] >= r.n_fits
    assert any("worst case" in m for m in caplog.messages if m.startswith("astrid progress"))


def test_estimate_is_within_2x_of_the_real_time(synthetic):
    # ~700 svm fits: a run of a few seconds, so one slow fit does not decide the ratio.
    # The machine may be shared: a second try absorbs a load burst that hit only the
    # calibration or only the search.
    for _attempt in range(2):
        r = astrid(synthetic, target="class", n_search=30, n_test=60, random_state=1)
        e = r.to_dict()["estimate"]
        assert e["fits"] == e["fits_run"] == r.n_fits
        assert e["calibration_fits"] >= 1 and e["workers"] == 1
        json.dumps(e)
        if 0.5 <= e["actual_seconds"] / e["seconds"] <= 2.0:
            return
    pytest.fail(f"estimate {e['seconds']:.1f} s, actual {e['actual_seconds']:.1f} s")


def _fixed_fit_cost(monkeypatch, seconds_per_fit):
    def fake(data, seed, n_attributes, **kw):
        return seconds_per_fit, 1, seconds_per_fit
    monkeypatch.setattr(search, "calibrate", fake)  # the hgb advice
    monkeypatch.setattr(cost, "calibrate", fake)  # the growth exponent
    monkeypatch.setattr(search, "calibrate_run", lambda *a, **k: fake(*a))  # the estimate


def _sample_advised(message: str) -> int:
    import re

    return int(re.search(r"--sample (\d+)", message).group(1))


def test_budget_refuses_before_starting_and_says_what_would_fit(synthetic, monkeypatch):
    _fixed_fit_cost(monkeypatch, 0.1)  # 451 fits: 45 s
    with pytest.raises(BudgetError) as info:
        astrid(synthetic, target="class", n_search=20, n_test=50, random_state=0,
               max_seconds=10.0)
    message = str(info.value)
    assert "\n" not in message
    assert "45 s" in message and "max_seconds = 10" in message
    # 1000 rows x (10 s less the time spent before the search) / 45.1 s (linear cost),
    # 2 digits: 220 when under 0.08 s was spent, 210 up to 0.53 s
    assert _sample_advised(message) in (210, 220), message
    assert "--adaptive" in message and "--over-budget sample" in message


def test_budget_adapts_by_sampling_when_asked(synthetic, monkeypatch):
    _fixed_fit_cost(monkeypatch, 0.1)  # the real fits of the sample take far less
    r = astrid(synthetic, target="class", n_search=20, n_test=50, random_state=0,
               max_seconds=10.0, over_budget="sample")
    assert r.sample["rule"] == "budget" and r.sample["rows"] in (210, 220)
    assert r.sample["table_rows"] == 1000 and r.sample["max_seconds"] == 10.0
    assert sum(r.split.values()) == r.sample["rows"]
    assert r.estimate["max_seconds"] == 10.0


def test_cli_budget_refusal_is_one_line_exit_2(tmp_path, capsys, synthetic, monkeypatch):
    _fixed_fit_cost(monkeypatch, 0.01)
    path = tmp_path / "t.csv"
    synthetic.to_csv(path, index=False)
    code = main(["learn", str(path), "--target", "class", "--r-search", "20", "--r-test",
                 "50", "--seed", "0", "--max-seconds", "1", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Would fit" in err


@pytest.mark.parametrize("kwargs, match", [
    (dict(max_seconds=0), "max_seconds"), (dict(max_seconds=True), "max_seconds"),
    (dict(over_budget="adapt"), "over_budget"), (dict(sample=3), "sample"),
    (dict(sample="most"), "sample"),
])
def test_bad_budget_and_sample_parameters(synthetic, kwargs, match):
    with pytest.raises(ParameterError, match=match):
        astrid(synthetic, target="class", n_search=2, n_test=2, **kwargs)


def test_sigterm_stops_workers_cleans_up_and_saves_nothing(tmp_path):
    """A scheduler's task timeout during `astrid learn --jobs 2`: one line, exit 143, no
    leaked-resource warnings, no temporary files, nothing in the store."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40_000, 8))  # training split > 1 MB: memory-mapped for workers
    table = pd.DataFrame(X, columns=[f"x{i}" for i in range(8)])
    table["class"] = ((X[:, 0] * X[:, 1] > 0) ^ (X[:, 2] > 0.5)).astype(int)
    path = tmp_path / "big.csv"
    table.to_csv(path, index=False)
    temp, store = tmp_path / "tmp", tmp_path / "store"
    temp.mkdir()
    env = dict(os.environ, TMPDIR=str(temp), JOBLIB_TEMP_FOLDER=str(temp))
    proc = subprocess.Popen(
        [sys.executable, "-m", "astrid_airflow.cli", "learn", str(path), "--target", "class",
         "--classifier", "nb", "--jobs", "2", "--seed", "0", "--r-search", "20",
         "--r-test", "50", "--quiet", "--store", str(store), "--name", "big"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not any(p.name.startswith("astrid-fits-") for p in temp.iterdir()):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the search never started"
            time.sleep(0.05)
        time.sleep(1.5)  # workers busy with the sorting phase (~15 s in all)
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert err.strip().splitlines() == [
        "astrid learn: terminated (SIGTERM): workers stopped, temporary files removed, "
        "nothing saved"], err
    assert "leaked" not in err and out == ""
    assert list(temp.iterdir()) == []
    assert not store.exists() or not any(store.rglob("*.json"))


def test_memory_mapped_fit_data_gives_the_same_result(synthetic, monkeypatch, tmp_path):
    import astrid_airflow.engine._fits as fits

    monkeypatch.setattr(fits, "_MEMMAP_BYTES", 0)  # map every array, even tiny ones
    monkeypatch.setenv("JOBLIB_TEMP_FOLDER", str(tmp_path))
    kw = dict(target="class", n_search=4, n_test=6, random_state=5)
    a = astrid(synthetic, n_jobs=1, **kw).to_dict()
    b = astrid(synthetic, n_jobs=2, **kw).to_dict()
    for d in (a, b):
        d.pop("seconds"), d.pop("estimate")
    assert a == b
    assert list(tmp_path.iterdir()) == []  # the run's folder is gone


def test_hgb_preset_is_deterministic_for_a_seed_and_n_jobs_invariant(synthetic):
    from astrid_airflow import test_grouping

    kw = dict(target="class", grouping="a1,a2;a3;a4", classifier="hgb", n_permutations=5,
              random_state=7)
    a = test_grouping(synthetic, n_jobs=1, **kw)
    b = test_grouping(synthetic, n_jobs=1, **kw)
    c = test_grouping(synthetic, n_jobs=2, backend="threading", **kw)
    assert a.accuracy == b.accuracy == c.accuracy
    assert list(a.null_accuracies) == list(b.null_accuracies) == list(c.null_accuracies)
    assert a.accuracy > 0.8  # it learns the running example's interaction


def test_hgb_preset_splits_categories_natively():
    import numpy as np
    import pandas as pd
    from threadpoolctl import threadpool_limits

    from astrid_airflow.engine._fits import Task, prepare_fit_data, run_one

    rng = np.random.default_rng(0)
    n = 400
    table = pd.DataFrame({
        "num": rng.normal(size=n),
        "cat": rng.choice(["a", "b", "c", None], size=n),
        "many": [f"id{i % 300}" for i in range(n)],  # > 255 categories: ordered codes
    })
    y = (table["cat"].isin(["a", "c"]).to_numpy() ^ (table["num"] > 0).to_numpy()).astype(int)
    test = table.iloc[300:].copy()
    test.loc[test.index[:5], "cat"] = "unseen"  # code -1: goes with missing values
    data = prepare_fit_data("hgb", table.iloc[:300], y[:300], {"valid": (test, y[300:])},
                            scoring="accuracy", n_classes=2)
    assert list(data.model.get_params()["categorical_features"]) == [False, True, False]
    assert data.X_train.dtype == np.float32
    with threadpool_limits(limits=1):
        from sklearn.utils._openmp_helpers import _openmp_effective_n_threads

        assert _openmp_effective_n_threads() == 1  # one thread per fit, as every preset
        acc = run_one(data, Task("valid", None, np.random.SeedSequence(0)))
    assert acc > 0.8


@pytest.fixture(scope="module")
def larger():
    return make_synthetic(2_000, random_state=3)  # 4,000 rows


def test_fixed_sample_is_stratified_recorded_and_reproducible(larger):
    kw = dict(target="class", classifier="nb", n_search=3, n_test=5, sample=600)
    a = astrid(larger, random_state=4, **kw)
    b = astrid(larger, random_state=4, **kw)
    c = astrid(larger, random_state=5, **kw)
    assert a.sample["rule"] == "fixed" and a.sample["rows"] == 600
    assert a.sample["table_rows"] == 4_000 and a.sample["seed"] == 4
    assert sum(a.split.values()) == 600 and a.split["train"] == 300
    da, db = a.to_dict(), b.to_dict()
    for d in (da, db):
        d.pop("seconds"), d.pop("estimate")
    assert da == db  # the same sample and draws for a seed
    assert c.to_dict()["table"] != da["table"]


def test_sample_without_sampling_keeps_the_unsampled_draws(synthetic):
    kw = dict(target="class", n_search=3, n_test=5, random_state=2)
    a, b = astrid(synthetic, **kw).to_dict(), astrid(synthetic, sample=5_000, **kw).to_dict()
    assert b["sample"]["rows"] == 1000 and a["sample"] is None
    assert a["table"] == b["table"]  # a sample of every row is the table itself


def test_auto_sample_follows_the_learning_curve_rule(larger, monkeypatch):
    import astrid_airflow.engine._sample as sampling

    monkeypatch.setattr(sampling, "AUTO_MIN_ROWS", 1_000)
    monkeypatch.setattr(sampling, "AUTO_START", 100)
    monkeypatch.setattr(sampling, "AUTO_EVAL_ROWS", 1_000)
    kw = dict(target="class", classifier="nb", n_search=2, n_test=3, sample="auto")
    a = astrid(larger, random_state=0, **kw)
    s = a.sample
    assert s["rule"] == "auto" and s["eval_rows"] == 1_000 and s["table_rows"] == 4_000
    curve = s["curve"]
    assert [c["rows"] for c in curve] == [100 * 2 ** i for i in range(len(curve))] or \
        curve[-1]["rows"] == 2 * 3_000  # the rest of the table used up
    if s["stop"].startswith("doubling"):  # the rule: the last doubling gained <= tol
        assert s["rows"] == curve[-2]["rows"]
        assert curve[-1]["accuracy"] - curve[-2]["accuracy"] <= 0.005 + 0.1
    if s["stop"].startswith("two doublings"):  # after a dip: the point before it
        assert curve[-2].get("dip") and s["rows"] == curve[-3]["rows"]
    assert sum(a.split.values()) == s["rows"]
    b = astrid(larger, random_state=0, **kw)
    assert b.sample["rows"] == s["rows"]
    assert [c["accuracy"] for c in b.sample["curve"]] == [c["accuracy"] for c in curve]
    assert b.to_dict()["table"] == a.to_dict()["table"]


def test_auto_sample_keeps_small_tables_whole(synthetic):
    r = astrid(synthetic, target="class", n_search=2, n_test=3, random_state=0,
               sample="auto")
    assert r.sample["rows"] == 1000 and "every row" in r.sample["reason"]


def test_cli_sample_flag(tmp_path, capsys, larger):
    path = tmp_path / "t.csv"
    larger.to_csv(path, index=False)
    assert main(["learn", str(path), "--target", "class", "--classifier", "nb",
                 "--r-search", "2", "--r-test", "3", "--seed", "1", "--sample", "800",
                 "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sample"]["rows"] == 800 and out["sample"]["rule"] == "fixed"
    assert out["estimate"]["fits"] == out["n_fits"]


def test_learn_operator_budget_sample_and_estimate_in_the_artefact(tmp_path, monkeypatch):
    import types

    from astrid_airflow.operators._compat import AirflowFailException
    from astrid_airflow.operators.demo import bundled_table
    from astrid_airflow.operators.learn import AstridLearnOperator

    from astrid_airflow import ArtefactStore

    def ctx():
        ti = types.SimpleNamespace(dag_id="d", run_id="r", task_id="learn", map_index=-1)
        return {"ti": ti, "run_id": "r"}

    kw = dict(task_id="learn", reference=bundled_table("synthetic.csv"),
              store=str(tmp_path / "store"), name="syn", n_search=3, n_test=5,
              random_state=0)
    op = AstridLearnOperator(**kw)
    assert op.max_seconds == 4 * 3600 and op.sample == "auto"
    assert {"max_seconds", "sample"} <= set(op.template_fields)
    op.execute(ctx())
    result = ArtefactStore(tmp_path / "store").load("syn", "v0001").result
    assert result["estimate"]["fits"] == result["n_fits"]
    assert result["sample"]["rows"] == 1000  # "auto" keeps a small table whole
    _fixed_fit_cost(monkeypatch, 10.0)  # a run of hours: refused, not retried
    with pytest.raises(AirflowFailException, match="Would fit"):
        AstridLearnOperator(**kw, max_seconds="60", force=True).execute(ctx())
    assert sorted(p.name for p in (tmp_path / "store" / "syn").iterdir()) == ["v0001"]


def test_screen_finds_the_planted_blocks_and_only_them():
    from astrid_airflow.engine._screen import blocks_of, screen_pairs
    from astrid_airflow.engine._synthetic import make_planted

    table, planted = make_planted(4_000, 20, random_state=0)
    X = table.drop(columns="class")
    blocks = [[X.columns[i] for i in b] for b in blocks_of(
        screen_pairs(X, table["class"].to_numpy()))]
    assert [b for b in blocks if len(b) > 1] == planted  # 3 pairs (one categorical), a triple
    assert all(len(b) == 1 for b in blocks if b[0][0] in "sn")  # signals and noise: free


def test_astrid_with_the_screen_sorts_only_the_dependent_attributes():
    from astrid_airflow.engine._synthetic import make_planted

    table, planted = make_planted(1_000, 12, n_pairs=2, random_state=1)
    r = astrid(table, target="class", n_search=3, n_test=4, random_state=0, screen=True)
    s = r.screen
    assert s["blocks"] == planted and s["rows"] == 750  # training + search rows only
    assert list(r.order[:len(s["free"])]) == s["free"]  # detached first, column order
    m, m_sorted = 12, 12 - len(s["free"])
    # sorting: block after block (sum of b(b+1)/2 - 1); 2-splits: only the cuts after
    # the free prefix (those inside it break nothing the screen sees); acc_search and
    # the p-values: every k
    sizes = [len(b) for b in s["blocks"]]
    assert r.n_fits == r.n_fits_exact == (3 * sum(b * (b + 1) // 2 - 1 for b in sizes)
                                          + 3 * (m_sorted - 1) + 3 * (m - 1)
                                          + 4 * (m - 1) + 1)
    # evaluated steps only: a block's last attribute is detached without evaluation
    assert len(r.search_scores["sorting"]) == m_sorted - len(sizes)
    # the blocks stay contiguous in the order, in the screen's order
    assert [set(r.order[len(s["free"]):][i:i + len(b)]) for i, b in zip(
        np.cumsum([0, *sizes[:-1]]), s["blocks"])] == [set(b) for b in s["blocks"]]
    f = len(s["free"])
    splits = r.search_scores["splits"]
    assert splits[:f] == [None] * f and None not in splits[f:]
    # the free cuts rank first: k <= f + 1 only splits off free attributes, one by one
    for k in range(2, f + 2):
        assert [set(g) for g in r.table[k - 1].grouping.groups][:k - 1] == [
            {a} for a in s["free"][:k - 1]]
    fast = astrid(table, target="class", n_search=3, n_test=4, random_state=0, screen=True,
                  adaptive=True)
    assert fast.search_scores["splits"][:f] == [None] * f
    assert fast.adaptive["splits"]["free_cuts"] == f
    off = astrid(table, target="class", n_search=3, n_test=4, random_state=0, screen=False)
    assert off.screen is None and off.n_fits > r.n_fits
    auto = astrid(table, target="class", n_search=3, n_test=4, random_state=0)
    assert auto.screen is None  # "auto": only above 40 attributes


def test_cli_defaults_take_the_scalable_path_above_the_row_threshold(
        tmp_path, capsys, caplog, synthetic, monkeypatch):
    import astrid_airflow.engine._sample as sampling

    path = tmp_path / "t.csv"
    synthetic.to_csv(path, index=False)  # 1,000 rows
    run = ["learn", str(path), "--target", "class", "--r-search", "3", "--r-test", "5",
           "--seed", "0", "--json"]
    assert main([*run, "--quiet"]) == 0  # small: the paper's run, unchanged
    small = json.loads(capsys.readouterr().out)
    assert small["classifier"]["preset"] == "svm" and small["adaptive"] is None
    assert small["sample"] is None
    monkeypatch.setattr(sampling, "LARGE_TABLE_ROWS", 999)
    with caplog.at_level(logging.INFO, logger="astrid_airflow"):
        assert main(run) == 0
    large = json.loads(capsys.readouterr().out)
    assert large["classifier"]["preset"] == "hgb" and large["adaptive"] is not None
    assert large["sample"]["rule"] == "auto"
    # the learn stage's rule (the operator's too), said in the settings' names
    assert any("large-table defaults classifier=hgb sample=auto adaptive=True" in m
               for m in caplog.messages)
    # a flag given wins over the large-table default
    assert main([*run, "--quiet", "--classifier", "nb", "--exact", "--sample", "none"]) == 0
    chosen = json.loads(capsys.readouterr().out)
    assert chosen["classifier"]["preset"] == "nb" and chosen["adaptive"] is None
    assert chosen["sample"] is None
    assert main([*run, "--quiet", "--adaptive", "--exact"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_dip_of_the_learning_curve_is_not_a_plateau():
    # issue 33: 1,000,000 x 30 planted went 0.969 -> 0.943 from 10,000 to 20,000 rows and
    # the curve stopped at 10,000; a significant drop now gets one more doubling
    from astrid_airflow.engine._sample import curve_step

    assert curve_step(+0.02, 0.005, dipped=False) == "improved"
    assert curve_step(+0.002, 0.005, dipped=False) == "stop"  # a plateau
    assert curve_step(-0.002, 0.005, dipped=False) == "stop"  # within noise: a plateau
    assert curve_step(-0.026, 0.005, dipped=False) == "dip"
    assert curve_step(-0.026, 0.005, dipped=True) == "stop"  # two in a row: stop
    assert curve_step(+0.001, 0.005, dipped=True) == "stop"
    assert curve_step(+0.02, 0.005, dipped=True) == "improved"

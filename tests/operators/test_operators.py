"""The ASTRID operators' ``execute`` without a metadata DB (no scheduler, no dag.test)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pandas as pd
import pytest
from airflow.sdk import Asset, AssetAlias
from airflow.sdk.execution_time.context import OutletEventAccessors
from astrid_airflow.operators import _common
from astrid_airflow.operators._compat import AirflowFailException
from astrid_airflow.operators.assets import artefact_alias, artefact_asset
from astrid_airflow.operators.demo import bundled_table
from astrid_airflow.operators.gate import SurrogateGateOperator, failure_message
from astrid_airflow.operators.learn import AstridLearnOperator
from astrid_airflow.operators.publish import PublishSurrogateOperator, release_id_from_run
from astrid_airflow.operators.shuffle import GoldenEyeShuffleOperator, split_ref

pytestmark = pytest.mark.filterwarnings("ignore:.*cannot be called outside of the Task Runner")

REFERENCE = bundled_table("synthetic.csv")
BATCH = bundled_table("synthetic_batch.csv")
MAX_XCOM_BYTES = 4096


def ctx(run_id: str = "manual__2026-01-01T00:00:00+00:00", task_id: str = "t",
        dag_id: str = "d", **extra) -> dict:
    """The part of an Airflow context the operators read."""
    ti = types.SimpleNamespace(dag_id=dag_id, run_id=run_id, task_id=task_id, map_index=-1)
    return {"ti": ti, "run_id": run_id, **extra}


def small_json(payload: dict) -> dict:
    text = json.dumps(payload, allow_nan=False)
    assert len(text) < MAX_XCOM_BYTES, len(text)
    return json.loads(text)


@pytest.fixture(scope="module", autouse=True)
def signing_key():
    """Gate and publish share a signing key (issue 29: only signed receipts are
    trusted); the store is signed with it too."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ASTRID_SIGNING_KEY", "operators-test-key-0123456789")
        yield


#: the learn of the module's artefact (its seed apart)
SYN_LEARN = dict(n_search=20, n_test=50,
                 gate_policy={"max_intact": "0.01", "max_accuracy_drop": 0.03,
                              # raw release: per-group checks reported only
                              "max_share_below_k": 1, "max_class_disclosure_share": 1,
                              "max_largest_group_unique_share": "1.0",
                              # and the attack checks' views of raw values
                              "max_singling_out_risk": 1,
                              "max_inference_risk": "1.0",
                              "max_class_from_one_column_risk": 1},
                 allow_weaker_policy=True,  # a raw release on purpose
                 remedies=False)


@pytest.fixture(scope="module")
def learned(tmp_path_factory):
    """One artefact learned on the bundled reference table (seed 0 finds {a1,a2},{a3},{a4})."""
    root = tmp_path_factory.mktemp("ops")
    store = root / "store"
    op = AstridLearnOperator(task_id="learn", reference=REFERENCE, store=str(store),
                             name="syn", random_state=0, **SYN_LEARN)
    out = op.execute(ctx(task_id="learn"))
    return types.SimpleNamespace(root=root, store=store, xcom=out, op=op)


@pytest.fixture(scope="module")
def staged(learned):
    """A shuffled batch staged under the module's root, and the gate's result on it."""
    out = learned.root / "staging" / "run1" / "surrogate.parquet"
    shuffle = GoldenEyeShuffleOperator(task_id="shuffle", table=BATCH, store=str(learned.store),
                                       artefact=learned.xcom["artefact"], out=str(out),
                                       random_state=1)
    s = shuffle.execute(ctx(task_id="shuffle"))
    gate = SurrogateGateOperator(task_id="gate", original=s["original"], surrogate=s["surrogate"],
                                 allow_weaker_policy=True,  # SYN_LEARN: a raw release
                                 store=str(learned.store), artefact=s["artefact"],
                                 random_state=1)
    g = gate.execute(ctx(task_id="gate"))
    return types.SimpleNamespace(path=out, shuffle=s, gate=g, shuffle_op=shuffle, gate_op=gate)


# ---------------------------------------------------------------------- helpers

class TestSeeds:
    def test_derived_seed_is_stable_and_ignores_the_try_number(self):
        a = _common.derive_seed(ctx())
        b = _common.derive_seed({**ctx(), "ti": types.SimpleNamespace(
            dag_id="d", run_id=ctx()["run_id"], task_id="t", map_index=-1, try_number=2)})
        assert a == b
        assert 0 <= a < 2**63

    @pytest.mark.parametrize("change", [
        pytest.param({"run_id": "scheduled__2026-01-02T00:00:00+00:00"}, id="other run"),
        pytest.param({"task_id": "other"}, id="other task"),
        pytest.param({"dag_id": "other"}, id="other dag"),
    ])
    def test_derived_seed_differs_between_task_instances(self, change):
        assert _common.derive_seed(ctx()) != _common.derive_seed(ctx(**change))

    @pytest.mark.parametrize("value", [None, "", "None", "run"])
    def test_unset_random_state_derives_from_the_run(self, value):
        assert _common.resolve_seed(value, ctx()) == _common.derive_seed(ctx())

    def test_templated_random_state_is_converted(self):
        assert _common.resolve_seed("7", ctx()) == 7
        assert _common.resolve_seed(7, ctx()) == 7

    @pytest.mark.parametrize("bad", ["-1", "seven", 1.5, True])
    def test_bad_random_state_fails_without_retry(self, bad):
        with pytest.raises(AirflowFailException, match="random_state"):
            _common.resolve_seed(bad, ctx())


class TestConversions:
    def test_policy_overrides_from_templates(self):
        got = _common.policy_overrides({"max_intact": "0.005", "max_accuracy_drop": "None",
                                        "classifier": "rf"})
        assert got == {"max_intact": 0.005, "classifier": "rf"}
        assert _common.policy_overrides('{"max_intact": 0.1}') == {"max_intact": 0.1}
        assert _common.policy_overrides(None) == {}
        with pytest.raises(AirflowFailException, match="max_intact"):
            _common.policy_overrides({"max_intact": "lots"})

    @pytest.mark.parametrize(("value", "expected"), [("True", True), ("false", False),
                                                     (True, True), (0, False)])
    def test_to_bool(self, value, expected):
        assert _common.to_bool(value, "force") is expected

    def test_to_bool_rejects_other_text(self):
        with pytest.raises(AirflowFailException, match="force"):
            _common.to_bool("maybe", "force")

    def test_json_small_cleans_numpy_and_nan(self):
        import numpy as np

        got = _common.json_small({"a": np.float64(0.5), "b": np.int64(3), "c": float("nan"),
                                  "d": (np.bool_(True), Path("/x"))})
        assert json.dumps(got, allow_nan=False)
        assert got == {"a": 0.5, "b": 3, "c": None, "d": [True, "/x"]}

    @pytest.mark.parametrize(("ref", "expected"), [
        ("syn@v0002", ("syn", "v0002")), ("syn", ("syn", "latest")),
        ("syn@latest", ("syn", "latest")), ("latest", (None, "latest")),
    ])
    def test_split_ref(self, ref, expected):
        assert split_ref(ref) == expected

    def test_release_id_is_path_safe(self):
        assert release_id_from_run("manual__2026-01-01T00:00:00+00:00") == \
            "manual__2026-01-01T00_00_00_00_00"


def test_failure_message_names_each_failed_expectation_and_observed_value():
    msg = failure_message("s.parquet", [
        {"name": "expect_a", "success": True, "observed_value": 0.0, "threshold": 0.01},
        {"name": "expect_b", "success": False, "observed_value": 0.5, "threshold": 0.01},
        {"name": "expect_c", "success": False, "observed_value": {"x": 1}, "threshold": None},
    ])
    assert "expect_a" not in msg
    assert "expect_b: observed 0.5 (threshold 0.01)" in msg
    assert 'expect_c: observed {"x": 1}' in msg


def test_constructors_store_arguments_unchanged_and_import_nothing_heavy():
    code = """
import sys
from astrid_airflow.operators.learn import AstridLearnOperator
from astrid_airflow.operators.shuffle import GoldenEyeShuffleOperator
from astrid_airflow.operators.gate import SurrogateGateOperator
from astrid_airflow.operators.publish import PublishSurrogateOperator
op = AstridLearnOperator(task_id="l", reference="{{ params.r }}", store="s", name="n",
                         n_search="{{ params.n }}", force="{{ params.f }}")
assert op.n_search == "{{ params.n }}" and op.force == "{{ params.f }}"
GoldenEyeShuffleOperator(task_id="s", table="t", store="s", artefact="n@v0001", out="o")
SurrogateGateOperator(task_id="g", original="o", surrogate="s", store="s", artefact="n",
                      policy={"max_intact": "{{ params.m }}"})
PublishSurrogateOperator(task_id="p", surrogate="s", destination="d")
heavy = [m for m in ("sklearn", "great_expectations", "scipy", "astrid_airflow.engine._search",
                     "astrid_airflow.gate._gate", "astrid_airflow.release._surrogate")
         if m in sys.modules]
assert not heavy, heavy
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_template_fields_are_attributes():
    ops = [
        AstridLearnOperator(task_id="l", reference="r", store="s", name="n"),
        GoldenEyeShuffleOperator(task_id="s", table="t", store="s", artefact="a", out="o"),
        SurrogateGateOperator(task_id="g", original="o", surrogate="s", store="s", artefact="a"),
        PublishSurrogateOperator(task_id="p", surrogate="s", destination="d"),
    ]
    for op in ops:
        for field in op.template_fields:
            assert hasattr(op, field), (type(op).__name__, field)
        assert op.multiple_outputs  # so op.output["key"] works downstream


# ------------------------------------------------------------------------ learn

class TestLearn:
    def test_learns_a_version_with_its_gate_suite(self, learned):
        x = small_json(learned.xcom)
        assert x["learned"] is True
        assert x["artefact"] == "syn@v0001"
        groups = {frozenset(g.split(",")) for g in x["grouping"].split(";")}
        assert x["k"] == 3
        assert groups == {frozenset({"a1", "a2"}), frozenset({"a3"}), frozenset({"a4"})}
        version_dir = learned.store / "syn" / "v0001"
        assert (version_dir / "artefact.json").is_file()
        suite = json.loads((version_dir / "suite.json").read_text())
        assert suite["meta"]["astrid"]["policy"]["max_accuracy_drop"] == 0.03

    def test_unchanged_reference_is_not_learned_again(self, learned, tmp_path):
        events = OutletEventAccessors()
        alias = artefact_alias("syn")
        # the same learn, its seed derived from another run: nothing to learn again
        op = AstridLearnOperator(task_id="learn", reference=REFERENCE, store=str(learned.store),
                                 name="syn", outlets=[alias], **SYN_LEARN)
        out = small_json(op.execute(ctx(run_id="manual__2", task_id="learn",
                                        outlet_events=events)))
        assert out["learned"] is False and out["version"] == "v0001"
        assert sorted(p.name for p in (learned.store / "syn").iterdir()) == ["v0001"]
        assert events[alias].asset_alias_events == []  # no artefact event without a change

    def test_adaptive_mode_records_its_fits_in_the_artefact(self, tmp_path):
        op = AstridLearnOperator(task_id="learn", reference=REFERENCE,
                                 store=str(tmp_path / "store"), name="syn", n_search=20,
                                 n_test=60, random_state=0, adaptive="{{ params.a }}",
                                 remedies=False)  # the search's record, not the choice
        op.adaptive = "True"  # as rendered from the template
        out = small_json(op.execute(ctx(task_id="learn")))
        result = json.loads(Path(out["path"]).read_text())["result"]
        assert result["adaptive"] is not None
        assert result["n_fits"] < result["n_fits_exact"]
        op.adaptive, op.force = "maybe", True
        with pytest.raises(AirflowFailException, match="adaptive"):
            op.execute(ctx(task_id="learn"))

    def test_search_settings_as_one_parameter_object(self, tmp_path):
        """``search=`` is the search's parameter object, as ``astrid(settings=)``: a
        SearchSettings or a dict of its fields, reaching what no keyword sets (scoring)."""
        from astrid_airflow import SearchSettings

        def learn(name, search):
            op = AstridLearnOperator(task_id="learn", reference=REFERENCE,
                                     store=str(tmp_path / "store"), name=name,
                                     random_state=0, remedies=False, search=search)
            out = small_json(op.execute(ctx(task_id="learn")))
            return json.loads(Path(out["path"]).read_text())["result"]

        by_object = learn("obj", SearchSettings(n_search=20, n_test=50,
                                                scoring="balanced_accuracy"))
        by_dict = learn("dict", {"n_search": 20, "n_test": 50, "scoring": "balanced_accuracy"})
        for result in (by_object, by_dict):
            assert (result["scoring"], result["n_search"], result["n_test"]) == \
                ("balanced_accuracy", 20, 50)
        assert (by_object["grouping"], by_object["table"]) == \
            (by_dict["grouping"], by_dict["table"])

    @pytest.mark.parametrize(("kwargs", "match"), [
        ({"search": {"n_search": 20}, "n_search": 30}, "n_search set both"),
        ({"search": {"n_jobs": 2}}, "n_jobs set both"),
        ({"search": {"n_serch": 20}}, r"unknown field\(s\) \['n_serch'\]"),
        ({"search": {"alpha": 2.0}}, "alpha"),
        ({"search": "fast"}, "Must be a SearchSettings"),
    ])
    def test_a_bad_search_fails_without_retry_and_writes_nothing(self, tmp_path, kwargs,
                                                                 match):
        op = AstridLearnOperator(task_id="learn", reference=REFERENCE, store=str(tmp_path),
                                 name="syn", **kwargs)
        with pytest.raises(AirflowFailException, match=match):
            op.execute(ctx())
        assert not (tmp_path / "syn").exists()

    def test_changed_reference_or_force_learns_a_new_version(self, tmp_path):
        store = tmp_path / "store"
        changed = tmp_path / "changed.csv"
        pd.read_csv(REFERENCE).iloc[:-1].to_csv(changed, index=False)
        shutil.copy(REFERENCE, tmp_path / "ref.csv")
        events = OutletEventAccessors()
        alias = AssetAlias(name="a")

        def learn(path, **kw):
            op = AstridLearnOperator(task_id="learn", reference=str(path), store=str(store),
                                     name="syn", n_search=5, n_test=9, random_state=0,
                                     outlets=[alias], remedies=False, **kw)  # versions only
            return op.execute(ctx(task_id="learn", outlet_events=events))

        assert learn(tmp_path / "ref.csv")["version"] == "v0001"
        second = learn(changed)
        assert second["learned"] is True and second["version"] == "v0002"
        assert second["rows"] == 999
        assert learn(changed)["learned"] is False
        forced = learn(changed, force="True")
        assert forced["learned"] is True and forced["version"] == "v0003"
        emitted = events[alias].asset_alias_events
        assert len(emitted) == 3  # one per new version
        assert emitted[-1].dest_asset_key.uri == artefact_asset(str(store), "syn").uri

    def test_bad_input_fails_without_retry(self, tmp_path):
        op = AstridLearnOperator(task_id="learn", reference=REFERENCE, store=str(tmp_path),
                                 name="syn", target="no_such_column")
        with pytest.raises(AirflowFailException, match="no_such_column"):
            op.execute(ctx())
        missing = AstridLearnOperator(task_id="learn", reference=str(tmp_path / "nope.csv"),
                                      store=str(tmp_path), name="syn")
        with pytest.raises(AirflowFailException, match="does not exist"):
            missing.execute(ctx())
        assert not (tmp_path / "syn").exists()


# ---------------------------------------------------------------------- shuffle

class TestShuffle:
    def test_stages_a_surrogate_with_metrics(self, staged):
        s = small_json(staged.shuffle)
        assert staged.path.is_file()
        assert s["artefact"] == "syn@v0001" and s["rows"] == 1000 and s["seed"] == 1
        m = s["metrics"]
        assert m["intact_row_proportion"] < 0.01
        assert set(m) >= {"expected_intact_row_proportion", "largest_group_unique_share",
                          "accuracy_original", "accuracy_surrogate"}
        original = pd.read_csv(BATCH)
        surrogate = pd.read_parquet(staged.path)
        # rows are published in a random order: the class keeps its multiset only
        assert sorted(surrogate["class"]) == sorted(original["class"])
        assert list(surrogate["class"]) != list(original["class"])
        assert not surrogate.equals(original)
        assert json.loads((staged.path.parent / "surrogate.metrics.json").read_text()) == s

    def test_a_retry_reproduces_the_surrogate_byte_for_byte(self, learned, tmp_path):
        def run(context, out):
            op = GoldenEyeShuffleOperator(task_id="shuffle", table=BATCH,
                                          store=str(learned.store), artefact="latest",
                                          name="syn", out=str(out), utility=False)
            return op.execute(context)

        first = run(ctx(task_id="shuffle"), tmp_path / "a.parquet")
        retry = run(ctx(task_id="shuffle"), tmp_path / "a.parquet")  # same task instance
        assert first["seed"] == retry["seed"] == _common.derive_seed(ctx(task_id="shuffle"))
        other = run(ctx(task_id="shuffle", run_id="scheduled__2026-01-02"),
                    tmp_path / "b.parquet")
        a = (tmp_path / "a.parquet").read_bytes()
        run(ctx(task_id="shuffle"), tmp_path / "c.parquet")
        assert (tmp_path / "c.parquet").read_bytes() == a
        assert (tmp_path / "b.parquet").read_bytes() != a
        assert other["seed"] != first["seed"]

    def test_schema_mismatch_fails_and_stages_nothing(self, learned, tmp_path):
        bad = tmp_path / "bad.csv"
        pd.read_csv(BATCH).rename(columns={"a3": "z3"}).to_csv(bad, index=False)
        out = tmp_path / "s.parquet"
        op = GoldenEyeShuffleOperator(task_id="shuffle", table=str(bad), store=str(learned.store),
                                      artefact="syn@v0001", out=str(out))
        with pytest.raises(AirflowFailException, match="SchemaMismatchError"):
            op.execute(ctx())
        assert list(tmp_path.iterdir()) == [bad]  # no surrogate, no metrics

    @pytest.mark.parametrize("ref", ["syn@v0009", "nobody@latest", "latest"])
    def test_unknown_artefact_fails(self, learned, tmp_path, ref):
        op = GoldenEyeShuffleOperator(task_id="shuffle", table=BATCH, store=str(learned.store),
                                      artefact=ref, out=str(tmp_path / "s.parquet"))
        with pytest.raises(AirflowFailException):
            op.execute(ctx())


# ------------------------------------------------------------------------- gate

class TestGate:
    def test_pass_writes_results_and_receipt_beside_the_surrogate(self, staged):
        g = small_json(staged.gate)
        assert g["success"] is True
        base = staged.path.parent
        assert (base / "surrogate.validation.json").is_file()
        assert (base / "surrogate.validation.html").is_file()
        receipt = json.loads((base / "surrogate.gate.json").read_text())
        assert receipt["success"] is True and receipt["failed"] == []
        assert receipt["sha256"] == g["sha256"] == _common.sha256_of(
            _common.as_path(str(staged.path), "p"))
        assert receipt["artefact"] == "syn@v0001"

    def test_original_passed_off_as_surrogate_fails_naming_the_expectation(self, learned,
                                                                           tmp_path):
        fake = tmp_path / "surrogate.parquet"
        pd.read_csv(BATCH).to_parquet(fake, index=False)
        op = SurrogateGateOperator(task_id="gate", original=BATCH, surrogate=str(fake),
                                   allow_weaker_policy=True,  # SYN_LEARN: a raw release
                                   store=str(learned.store), artefact="syn@latest",
                                   random_state=0)
        with pytest.raises(AirflowFailException) as info:
            op.execute(ctx())
        assert "expect_surrogate_intact_row_proportion_to_be_at_most: observed 1.0" in \
            str(info.value)
        receipt = json.loads((tmp_path / "surrogate.gate.json").read_text())
        assert receipt["success"] is False
        assert "expect_surrogate_intact_row_proportion_to_be_at_most" in receipt["failed"]

    def test_run_time_threshold_override(self, learned, staged, tmp_path):
        op = SurrogateGateOperator(task_id="gate", original=BATCH, surrogate=str(staged.path),
                                   allow_weaker_policy=True,  # SYN_LEARN: a raw release
                                   store=str(learned.store), artefact="syn",
                                   policy={"max_largest_group_unique_share": "0.0"},
                                   out_dir=str(tmp_path), random_state=1)
        with pytest.raises(AirflowFailException,
                           match="expect_surrogate_largest_group_unique_share_to_be_at_most"):
            op.execute(ctx())
        assert json.loads((tmp_path / "surrogate.gate.json").read_text())["success"] is False


    def test_receipt_names_the_bytes_judged_and_a_file_swapped_meanwhile_fails(
            self, learned, staged, tmp_path, monkeypatch):
        import astrid_airflow
        import astrid_airflow.gate._gate as gate

        path = tmp_path / "surrogate.parquet"
        path.write_bytes(staged.path.read_bytes())
        real = gate.validate_surrogate

        def judge_then_swap(*args, **kwargs):
            result = real(*args, **kwargs)
            pd.read_csv(BATCH).to_parquet(path, index=False)  # the original, after judging
            return result

        monkeypatch.setattr(gate, "validate_surrogate", judge_then_swap)
        # the operator imports the public name (issue 20): patch it there too
        monkeypatch.setattr(astrid_airflow, "validate_surrogate", judge_then_swap)
        op = SurrogateGateOperator(task_id="gate", original=BATCH, surrogate=str(path),
                                   allow_weaker_policy=True,  # SYN_LEARN: a raw release
                                   store=str(learned.store), artefact="syn", random_state=1)
        with pytest.raises(AirflowFailException, match="changed while it was judged"):
            op.execute(ctx())
        assert not (tmp_path / "surrogate.gate.json").exists()  # nothing to publish from


# ---------------------------------------------------------------------- publish

class TestPublish:
    def _publish(self, surrogate, destination, run_id, **kw):
        events = OutletEventAccessors()
        asset = Asset(name="rel", uri="file://" + str(destination))
        op = PublishSurrogateOperator(task_id="publish", surrogate=str(surrogate),
                                      destination=str(destination), outlets=[asset], **kw)
        out = op.execute(ctx(task_id="publish", run_id=run_id, outlet_events=events))
        return out, events[asset].extra

    def test_publishes_atomically_with_archive_manifest_and_asset_event(self, staged, tmp_path):
        dest = tmp_path / "pub" / "surrogate.parquet"
        out, extra = self._publish(staged.path, dest, "manual__1")
        small_json(out)
        # the canonical form of the judged values, never the staged bytes (issue 29)
        key = list(pd.read_parquet(staged.path).columns)
        pd.testing.assert_frame_equal(
            pd.read_parquet(dest).sort_values(key).reset_index(drop=True),
            pd.read_parquet(staged.path).sort_values(key).reset_index(drop=True),
            check_dtype=False)
        archived = tmp_path / "pub" / "releases" / "manual__1"
        assert (archived / "surrogate.parquet").read_bytes() == dest.read_bytes()
        # only files the gate wrote (the shuffle's metrics are not the gate's)
        assert {p.name for p in archived.iterdir()} == {
            "surrogate.parquet", "surrogate.gate.json", "surrogate.validation.json",
            "surrogate.validation.html", "surrogate.source_rows.parquet",
            "surrogate.report"}
        assert (archived / "surrogate.report" / "index.html").is_file()
        manifest = json.loads((tmp_path / "pub" / "surrogate.release.json").read_text())
        assert manifest["report"].endswith("releases/manual__1/surrogate.report/index.html")
        assert manifest["sha256"] == out["sha256"] == extra["sha256"]
        assert extra["archived"].endswith("releases/manual__1/surrogate.parquet")
        assert not [p for p in (tmp_path / "pub").iterdir() if ".tmp" in p.name]

    def test_failed_gate_never_publishes_nor_touches_the_last_release(self, staged, tmp_path):
        dest = tmp_path / "pub" / "surrogate.parquet"
        self._publish(staged.path, dest, "good")
        before = {p: p.read_bytes() for p in (tmp_path / "pub").rglob("*") if p.is_file()}
        failed_dir = tmp_path / "failed"
        failed_dir.mkdir()
        failed = failed_dir / "surrogate.parquet"
        pd.read_csv(BATCH).to_parquet(failed, index=False)
        receipt = {"success": False, "failed": ["expect_x"], "surrogate": "file://" + str(failed),
                   "sha256": _common.sha256_of(_common.as_path(str(failed), "f"))}
        (failed_dir / "surrogate.gate.json").write_text(json.dumps(receipt))
        with pytest.raises(AirflowFailException, match="FAILED the release gate"):
            self._publish(failed, dest, "bad")
        (failed_dir / "surrogate.gate.json").unlink()
        with pytest.raises(AirflowFailException, match="no gate receipt"):
            self._publish(failed, dest, "bad")
        after = {p: p.read_bytes() for p in (tmp_path / "pub").rglob("*") if p.is_file()}
        assert after == before

    def test_a_file_changed_after_the_gate_is_not_published(self, staged, tmp_path):
        copy_dir = tmp_path / "stage"
        copy_dir.mkdir()
        for p in staged.path.parent.iterdir():
            if p.is_file():
                shutil.copy(p, copy_dir / p.name)
        receipt = json.loads((copy_dir / "surrogate.gate.json").read_text())
        receipt["surrogate"] = "file://" + str(copy_dir / "surrogate.parquet")
        (copy_dir / "surrogate.gate.json").write_text(json.dumps(receipt))
        frame = pd.read_parquet(copy_dir / "surrogate.parquet")
        frame.loc[0, "a1"] += 1.0  # tampering between gate and publish
        frame.to_parquet(copy_dir / "surrogate.parquet", index=False)
        dest = tmp_path / "pub" / "surrogate.parquet"
        with pytest.raises(AirflowFailException, match="not the file the gate passed"):
            self._publish(copy_dir / "surrogate.parquet", dest, "r")
        assert not dest.exists()


class TestReleaseProtocol:
    """Clearing an old run's publish, or re-running the current one, changes nothing."""

    DAY1 = "2026-01-02T00:00:00+00:00"   # the scheduled run of 2026-01-01, due at midnight
    DAY2 = "2026-01-02T10:00:00+00:00"   # a manual run later that day

    def _run(self, surrogate, destination, run_id, run_after, **kw):
        """One publish attempt as the task of run ``run_id``; (xcom or None, events)."""
        import datetime as dt

        from astrid_airflow.operators._compat import AirflowSkipException

        events = OutletEventAccessors()
        asset = Asset(name="rel", uri="file://" + str(destination))
        op = PublishSurrogateOperator(task_id="publish", surrogate=str(surrogate),
                                      destination=str(destination), outlets=[asset], **kw)
        run = types.SimpleNamespace(run_after=dt.datetime.fromisoformat(run_after))
        context = ctx(task_id="publish", run_id=run_id, outlet_events=events, dag_run=run)
        try:
            out = op.execute(context)
        except AirflowSkipException:
            out = None
        # what the task runner would send as this task's outlet events
        return out, {str(k): v.extra for k, v in events._dict.items()}

    @staticmethod
    def _state(directory):
        """Every file's bytes and mtime: a rewrite with equal bytes still shows."""
        return {str(p.relative_to(directory)): (p.read_bytes(), p.stat().st_mtime_ns)
                for p in sorted(directory.rglob("*")) if p.is_file()}

    def test_clearing_an_old_runs_publish_keeps_the_current_release_and_emits_no_event(
            self, staged, tmp_path):
        dest = tmp_path / "pub" / "surrogate.parquet"
        old, new = "scheduled__2026-01-01T00:00:00+00:00", "manual__2026-01-02T10:00:00+00:00"
        out_old, ev_old = self._run(staged.path, dest, old, self.DAY1)
        out_new, ev_new = self._run(staged.path, dest, new, self.DAY2)
        assert out_old and out_new and len(ev_old) == len(ev_new) == 1
        manifest_path = tmp_path / "pub" / "surrogate.release.json"
        manifest = json.loads(manifest_path.read_text())
        assert manifest["release_id"] == release_id_from_run(new)
        assert manifest["run_after"] == "2026-01-02T10:00:00.000000+00:00"
        before = self._state(tmp_path / "pub")
        out, events = self._run(staged.path, dest, old, self.DAY1)  # the clear
        assert out is None and events == {}
        assert self._state(tmp_path / "pub") == before
        assert json.loads(manifest_path.read_text())["release_id"] == release_id_from_run(new)

    def test_rerunning_the_current_release_rewrites_nothing_and_emits_no_event(
            self, staged, tmp_path):
        dest = tmp_path / "pub" / "surrogate.parquet"
        self._run(staged.path, dest, "manual__1", self.DAY2)
        before = self._state(tmp_path / "pub")
        for _ in range(2):
            out, events = self._run(staged.path, dest, "manual__1", self.DAY2)
            assert out is None and events == {}
        assert self._state(tmp_path / "pub") == before  # archive, manifest: same mtimes

    def test_force_rolls_back_without_rewriting_the_archive(self, staged, tmp_path):
        dest = tmp_path / "pub" / "surrogate.parquet"
        self._run(staged.path, dest, "old", self.DAY1)
        self._run(staged.path, dest, "new", self.DAY2)
        archive = tmp_path / "pub" / "releases" / "old"
        archived_before = self._state(archive)
        out, events = self._run(staged.path, dest, "old", self.DAY1, force="True")
        assert out["release_id"] == "old" and len(events) == 1
        manifest = json.loads((tmp_path / "pub" / "surrogate.release.json").read_text())
        assert manifest["release_id"] == "old"
        assert self._state(archive) == archived_before  # immutable, not rewritten

    def test_an_archived_release_is_never_overwritten_with_other_bytes(self, staged, tmp_path):
        dest = tmp_path / "pub" / "surrogate.parquet"
        self._run(staged.path, dest, "r1", self.DAY1)
        archived = tmp_path / "pub" / "releases" / "r1" / "surrogate.parquet"
        archived.write_bytes(b"something else")
        before = self._state(tmp_path / "pub")
        for force in (False, True):
            with pytest.raises(AirflowFailException, match="archived releases are immutable"):
                self._run(staged.path, dest, "r1", self.DAY2, force=force)
        assert self._state(tmp_path / "pub") == before

    def test_a_retry_after_a_partial_publication_completes_it(self, staged, tmp_path):
        dest = tmp_path / "pub" / "surrogate.parquet"
        self._run(staged.path, dest, "r1", self.DAY1)
        # r2 archived, then the worker died before the current file and manifest moved
        self._run(staged.path, dest, "r2", self.DAY2)
        archive = tmp_path / "pub" / "releases" / "r2"
        archived_before = self._state(archive)
        manifest_path = tmp_path / "pub" / "surrogate.release.json"
        self._run(staged.path, dest, "r1", self.DAY1, force=True)  # back to r1's manifest
        out, events = self._run(staged.path, dest, "r2", self.DAY2)
        assert out["release_id"] == "r2" and len(events) == 1
        assert json.loads(manifest_path.read_text())["release_id"] == "r2"
        assert self._state(archive) == archived_before

    def test_a_corrupt_manifest_refuses_and_changes_nothing(self, staged, tmp_path):
        dest = tmp_path / "pub" / "surrogate.parquet"
        self._run(staged.path, dest, "r1", self.DAY1)
        (tmp_path / "pub" / "surrogate.release.json").write_text("{not json")
        before = self._state(tmp_path / "pub")
        with pytest.raises(AirflowFailException, match=r"manifest .* is corrupt"):
            self._run(staged.path, dest, "r2", self.DAY2)
        assert self._state(tmp_path / "pub") == before

    def test_a_manifest_from_before_the_protocol_does_not_block_publishing(self, staged,
                                                                           tmp_path):
        dest = tmp_path / "pub" / "surrogate.parquet"
        self._run(staged.path, dest, "r1", self.DAY2)
        manifest_path = tmp_path / "pub" / "surrogate.release.json"
        legacy = json.loads(manifest_path.read_text())
        del legacy["run_after"]
        manifest_path.write_text(json.dumps(legacy))
        out, _ = self._run(staged.path, dest, "r0", self.DAY1)
        assert out["release_id"] == "r0"


# ------------------------------------------------------------------- extra links

class RecordingTI(types.SimpleNamespace):
    """A task instance that keeps what the operator pushes to XCom."""

    def xcom_push(self, key, value):
        self.pushed[key] = value


def linked_ctx(run_id="manual__1", task_id="t"):
    ti = RecordingTI(dag_id="d", run_id=run_id, task_id=task_id, map_index=-1, pushed={})
    return {**ctx(run_id=run_id, task_id=task_id), "ti": ti}, ti.pushed


class TestLinks:
    def test_a_failed_gate_records_and_logs_both_locations(self, learned, tmp_path, capfd):
        from astrid_airflow.operators.links import LINKS_XCOM_KEY

        fake = tmp_path / "surrogate.parquet"
        pd.read_csv(BATCH).to_parquet(fake, index=False)
        op = SurrogateGateOperator(task_id="gate", original=BATCH, surrogate=str(fake),
                                   allow_weaker_policy=True,  # SYN_LEARN: a raw release
                                   store=str(learned.store), artefact="syn@latest",
                                   random_state=0)
        context, pushed = linked_ctx()
        with pytest.raises(AirflowFailException):
            op.execute(context)
        links = pushed[LINKS_XCOM_KEY]
        assert links["data_docs"].endswith("surrogate.validation.html")
        assert links["report"].endswith("surrogate.report/index.html")
        assert links["artefact"] == str(learned.store / "syn" / "v0001" / "artefact.json")
        for key in ("data_docs", "report"):
            assert Path(links[key].removeprefix("file://")).is_file()
        text = "".join(capfd.readouterr())  # the task log (structlog writes to stdout)
        assert "Data Docs: file://" in text and "surrogate.validation.html" in text
        assert "release report: file://" in text and "surrogate.report/index.html" in text

    def test_links_open_the_plugin_or_the_configured_base_url(self, staged, tmp_path,
                                                               monkeypatch):
        from astrid_airflow.operators.links import (
            ArtefactLink,
            DataDocsLink,
            ReleaseReportLink,
        )

        dest = tmp_path / "pub" / "surrogate.parquet"
        context, pushed = linked_ctx(task_id="publish")
        op = PublishSurrogateOperator(task_id="publish", surrogate=str(staged.path),
                                      destination=str(dest))
        op.execute(context)
        assert pushed["astrid_links"] == op._astrid_links  # also in XCom, for other readers
        # what the task runner does when the task ends, with the operator that ran
        assert {type(link) for link in op.operator_extra_links} == {
            DataDocsLink, ReleaseReportLink, ArtefactLink}
        urls = {link.name: link.get_link(op, ti_key=context["ti"])
                for link in op.operator_extra_links}
        archive = tmp_path / "pub" / "releases" / "manual__1"
        # by default: the provider plugin's pages, on the UI's own origin
        page = "/astrid/runs/d/manual__1/publish/"
        assert urls == {"Data Docs": page + "data-docs", "Release report": page + "report/",
                        "Artefact": page + "artefact"}
        monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://airflow.example.com/")
        assert ArtefactLink().get_link(op, ti_key=context["ti"]) == \
            "https://airflow.example.com" + page + "artefact"
        # without a task instance (a bare operator): the file itself
        assert DataDocsLink().get_link(op, ti_key=None) == \
            f"file://{archive}/surrogate.validation.html"
        assert pushed["astrid_links"]["artefact"].endswith("/syn/v0001/artefact.json")
        # a static site serving the release directory
        monkeypatch.setenv("AIRFLOW__ASTRID__LINK_BASE_URL",
                           f"{tmp_path}/pub=https://files.example.com/pub")
        assert DataDocsLink().get_link(op, ti_key=context["ti"]) == \
            "https://files.example.com/pub/releases/manual__1/surrogate.validation.html"
        op.link_base_url = {f"file://{archive}": "https://docs.example.com/r"}  # arg wins
        assert ReleaseReportLink().get_link(op, ti_key=context["ti"]) == \
            "https://docs.example.com/r/surrogate.report/index.html"

    def test_learn_links_its_artefact(self, learned):
        op = AstridLearnOperator(task_id="learn", reference=REFERENCE,
                                 store=str(learned.store), name="syn", random_state=0,
                                 **SYN_LEARN)
        context, pushed = linked_ctx(task_id="learn")
        out = op.execute(context)  # the same learn: not learned again, still linked
        assert out["learned"] is False
        assert pushed["astrid_links"] == {"artefact": out["path"]}


# ------------------------------------------------------------------- OpenLineage

def datasets(group) -> dict:
    return {(d.namespace, d.name): d for d in group}


class TestOpenLineage:
    """The facet methods the OpenLineage provider calls when a task ends."""

    def test_gate_carries_every_expectation_and_its_figures_on_the_surrogate(self, staged):
        from openlineage.client.serde import Serde

        lineage = staged.gate_op.get_openlineage_facets_on_complete(None)
        receipt = json.loads((staged.path.parent / "surrogate.gate.json").read_text())
        inputs = datasets(lineage.inputs)
        surrogate = inputs[("file", str(staged.path))]
        assertions = surrogate.inputFacets["dataQualityAssertions"].assertions
        assert [(a.assertion, a.success) for a in assertions] == [
            (e["name"], e["success"]) for e in receipt["expectations"]]
        assert len(assertions) >= 8 and all(a.success for a in assertions)
        first = receipt["expectations"][0]
        assert json.loads(assertions[0].actual) == first["observed_value"]
        assert json.loads(assertions[0].expected) == first["threshold"]
        metrics = surrogate.facets["astrid_metrics"].metrics
        observed = staged.gate["observed"]
        assert metrics["intact_row_proportion"] == \
            observed["expect_surrogate_intact_row_proportion_to_be_at_most"]
        assert metrics["accuracy_drop"] == \
            observed["expect_surrogate_accuracy_drop_to_be_at_most"]
        assert "largest_group_unique_share" in metrics
        assert surrogate.inputFacets["dataQualityMetrics"].rowCount == 1000
        assert ("file", BATCH) in inputs
        (artefact,) = [d for d in lineage.inputs if d.name.endswith("/store/syn")]
        assert artefact.facets["version"].datasetVersion == "v0001"
        outputs = datasets(lineage.outputs)
        assert ("file", str(staged.path.parent / "surrogate.validation.json")) in outputs
        json.dumps(Serde.to_dict(surrogate))  # the custom facet serialises too

    def test_a_failed_gate_reports_the_failed_assertion(self, learned, staged, tmp_path):
        op = SurrogateGateOperator(task_id="gate", original=BATCH, surrogate=str(staged.path),
                                   allow_weaker_policy=True,  # SYN_LEARN: a raw release
                                   store=str(learned.store), artefact="syn",
                                   policy={"max_largest_group_unique_share": "0.0"},
                                   out_dir=str(tmp_path), random_state=1)
        with pytest.raises(AirflowFailException):
            op.execute(ctx())
        (surrogate,) = [d for d in op.get_openlineage_facets_on_complete(None).inputs
                        if d.name == str(staged.path)]
        failed = [a.assertion for a in surrogate.inputFacets["dataQualityAssertions"].assertions
                  if not a.success]
        assert failed == ["expect_surrogate_largest_group_unique_share_to_be_at_most"]

    def test_learn_shuffle_and_publish_datasets(self, learned, staged, tmp_path):
        learn = learned.op.get_openlineage_facets_on_complete(None)
        assert [d.name for d in learn.inputs] == [REFERENCE]
        (artefact,) = learn.outputs
        assert artefact.name == str(learned.store / "syn")
        assert artefact.facets["version"].datasetVersion == "v0001"
        shuffle = staged.shuffle_op.get_openlineage_facets_on_complete(None)
        assert {d.name for d in shuffle.inputs} == {BATCH, str(learned.store / "syn")}
        (out,) = shuffle.outputs
        assert out.name == str(staged.path) and out.outputFacets["outputStatistics"].rowCount
        assert out.facets["astrid_metrics"].metrics["intact_row_proportion"] == \
            staged.shuffle["metrics"]["intact_row_proportion"]
        dest = tmp_path / "pub" / "surrogate.parquet"
        op = PublishSurrogateOperator(task_id="publish", surrogate=str(staged.path),
                                      destination=str(dest))
        op.execute(ctx(run_id="r1"))
        publish = op.get_openlineage_facets_on_complete(None)
        assert [d.name for d in publish.inputs] == [str(staged.path)]
        assert [(d.name, d.facets["version"].datasetVersion) for d in publish.outputs] == [
            (str(dest), "r1"), (str(tmp_path / "pub" / "releases" / "r1" / dest.name), "r1")]

    def test_lineage_costs_nothing_without_openlineage(self):
        code = """
import sys
sys.modules["openlineage"] = None  # as if the OpenLineage client were not installed
from airflow.sdk import BaseOperator  # what Airflow itself loads (provider metadata)
before = {m for m in sys.modules if "openlineage" in m}
from astrid_airflow.operators.learn import AstridLearnOperator
from astrid_airflow.operators.shuffle import GoldenEyeShuffleOperator
from astrid_airflow.operators.gate import SurrogateGateOperator
from astrid_airflow.operators.publish import PublishSurrogateOperator
op = SurrogateGateOperator(task_id="g", original="o", surrogate="s", store="s", artefact="n")
assert hasattr(op, "get_openlineage_facets_on_complete")
assert {m for m in sys.modules if "openlineage" in m} == before
"""
        subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# -------------------------------------------------------------- resource controls

class TestLearnResources:
    def test_pool_slots_follow_a_literal_n_jobs(self):
        def slots(**kw):
            return AstridLearnOperator(task_id="l", reference="r", store="s", name="n",
                                       **kw).pool_slots

        assert slots() == 1 and slots(n_jobs=4) == 4
        assert slots(n_jobs=4, pool_slots=2) == 2  # explicit wins
        # the scheduler assigns slots before templates render; -1 means "the worker's
        # cores", unknown at parse time; on Dask the worker only waits
        assert slots(n_jobs="{{ params.n_jobs }}") == slots(n_jobs=-1) == 1
        assert slots(n_jobs=4, scheduler="tcp://dask:8786") == 1

    def test_execution_timeout_defaults_to_the_documented_constant(self):
        import datetime as dt

        from airflow.sdk import DAG
        from astrid_airflow.operators.learn import LEARN_EXECUTION_TIMEOUT

        op = AstridLearnOperator(task_id="l", reference="r", store="s", name="n")
        assert op.execution_timeout == LEARN_EXECUTION_TIMEOUT == dt.timedelta(hours=6)
        assert AstridLearnOperator(task_id="l", reference="r", store="s", name="n",
                                   execution_timeout=dt.timedelta(minutes=5)
                                   ).execution_timeout == dt.timedelta(minutes=5)
        with DAG("d", schedule=None, default_args={"execution_timeout": dt.timedelta(hours=1),
                                                   "pool_slots": 3}):
            op = AstridLearnOperator(task_id="l", reference="r", store="s", name="n",
                                     n_jobs=2)
        assert op.execution_timeout == dt.timedelta(hours=1) and op.pool_slots == 3

    def test_n_jobs_is_templated_and_converted(self):
        op = AstridLearnOperator(task_id="l", reference="r", store="s", name="n",
                                 n_jobs="{{ params.n_jobs }}")
        assert "n_jobs" in op.template_fields
        assert op.n_jobs == "{{ params.n_jobs }}"  # stored unchanged
        op.render_template_fields({"params": {"n_jobs": 2}})
        assert _common.to_int(op.n_jobs, "n_jobs") == 2


def test_links_of_a_task_that_recorded_nothing_are_empty():
    from astrid_airflow.operators.links import DataDocsLink

    op = SurrogateGateOperator(task_id="g", original="o", surrogate="s", store="s",
                               artefact="a")
    assert DataDocsLink().get_link(op, ti_key=None) == ""  # no XCom look-up either

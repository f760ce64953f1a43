"""Property-based tests (Hypothesis): GoldenEye permutation, artefact round trip, store.

Extends what ``test_permutation.py`` (index-level properties on small code vectors) and
``test_artefact.py`` (``from_json(to_json(a)) == a`` on hand-built artefacts) already
check: here the *tables* are random (mixed dtypes, missing values, categoricals,
arbitrary partitions), the artefacts are built from random tables and go through a real
store, and the store is driven by a random sequence of operations against a model.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from astrid_airflow import (
    ArtefactStore,
    Grouping,
    GroupingArtefact,
    fingerprint_table,
    goldeneye_permute,
    make_surrogate,
)
from astrid_airflow._errors import ParameterError, StoreError

# ------------------------------------------------------------------ random tables

_KINDS = ("float", "int", "str", "cat", "bool")


@st.composite
def tables(draw, min_rows=1, max_rows=30):
    """A random mixed-type table with a class column and a random partition of the rest."""
    n = draw(st.integers(min_rows, max_rows))
    n_cols = draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    cols = {}
    for j in range(n_cols):
        kind = draw(st.sampled_from(_KINDS))
        name = f"c{j}_{kind}"
        if kind == "float":
            v = rng.normal(size=n).round(2)
            v[rng.random(n) < 0.2] = np.nan
            cols[name] = v
        elif kind == "int":
            cols[name] = rng.integers(-3, 4, n)
        elif kind == "str":
            cols[name] = pd.array(rng.choice(["u", "v", "w", None], n), dtype=object)
        elif kind == "cat":
            cols[name] = pd.Categorical(rng.choice(["x", "y", "z"], n),
                                        categories=["z", "y", "x", "unused"])
        else:
            cols[name] = rng.random(n) < 0.5
    n_classes = draw(st.integers(1, 4))
    cols["label"] = rng.choice([f"k{i}" for i in range(n_classes)], n)
    table = pd.DataFrame(cols)
    attrs = [c for c in table.columns if c != "label"]
    order = draw(st.permutations(attrs))
    cuts = draw(st.sets(st.integers(1, max(1, len(attrs) - 1)))) if len(attrs) > 1 else set()
    grouping = Grouping.from_cuts(list(order), sorted(c for c in cuts if c < len(attrs)))
    return table, grouping


def _key(series: pd.Series) -> list[str]:
    return [("<NA>" if pd.isna(v) else repr(v)) for v in series.astype(object)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(0, 2**63 - 1))
def test_goldeneye_permute_invariants_on_random_tables(tg, seed):
    table, grouping = tg
    table.index = pd.RangeIndex(100, 100 + len(table))  # a non-default index survives
    out = goldeneye_permute(table, target="label", grouping=grouping, random_state=seed)
    assert list(out.columns) == list(table.columns)
    assert (out.dtypes == table.dtypes).all()
    assert out.index.equals(table.index)
    assert out["label"].equals(table["label"])
    for _, idx in table.groupby("label").groups.items():
        for group in grouping.groups:
            # the group's rows move together: multiset of row tuples kept within class
            before = sorted(zip(*(_key(table.loc[idx, c]) for c in group)))
            after = sorted(zip(*(_key(out.loc[idx, c]) for c in group)))
            assert before == after
    for c in table.columns:
        if isinstance(table[c].dtype, pd.CategoricalDtype):
            assert list(out[c].cat.categories) == list(table[c].cat.categories)
    again = goldeneye_permute(table, target="label", grouping=grouping, random_state=seed)
    pd.testing.assert_frame_equal(out, again)


@pytest.mark.filterwarnings("ignore:The grouping has a single group")
@settings(max_examples=40, deadline=None)
@given(tables(min_rows=2), st.integers(0, 2**32 - 1))
def test_surrogate_pandas_and_arrow_agree_on_random_tables(tg, seed):
    import pyarrow as pa

    table, grouping = tg
    a = make_surrogate(table, grouping, target="label", random_state=seed)
    b = make_surrogate(pa.Table.from_pandas(table, preserve_index=False), grouping,
                       target="label", random_state=seed)
    back = b.to_pandas()
    for c in table.columns:
        assert _key(a[c]) == _key(back[c]), c


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=2, max_size=12), st.integers(0, 2**32 - 1))
def test_single_group_is_identity_and_all_singletons_move_each_column_alone(codes, seed):
    n = len(codes)
    t = pd.DataFrame({"a": np.arange(n), "b": np.arange(n) * 10, "label": codes})
    with pytest.warns(UserWarning, match="single group"):
        one = make_surrogate(t, [["a", "b"]], target="label", random_state=seed)
    # one group: the rows move together, so every (a, b) pair is an original row
    assert set(zip(one.a, one.b)) == set(zip(t.a, t.b))
    singles = goldeneye_permute(t, target="label", grouping="a;b", random_state=seed)
    for cls in set(codes):
        mask = t.label == cls
        assert sorted(singles.a[mask]) == sorted(t.a[mask])
        assert sorted(singles.b[mask]) == sorted(t.b[mask])


# ---------------------------------------------------------- artefacts from tables

class _Result:
    """Minimal stand-in for AstridResult: what ``from_result`` reads."""

    def __init__(self, grouping: Grouping, attrs: list[str], classes: list, seed: int):
        g = grouping.to_list()
        self._d = {
            "grouping": g, "k": grouping.k,
            "table": [{"k": grouping.k, "acc_ave": 0.5, "acc_min": 0.4, "acc_max": 0.6,
                       "sd": 0.1, "p": 0.5, "grouping": g, "letters": ""}],
            "baseline_accuracy": 0.5, "p_og": 0.5, "n_fits": 3, "seconds": 0.1,
            "order": list(attrs), "target": "label", "classes": classes,
            "columns": list(attrs), "classifier": "svm", "scoring": "accuracy",
            "alpha": 0.05, "n_search": 2, "n_test": 3, "random_state": seed,
            "split": {"train": 1, "search": 1, "test": 1},
        }

    def to_dict(self):
        return dict(self._d)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(tables(), st.integers(0, 2**31 - 1))
def test_artefact_from_random_table_round_trips_through_a_store(tg, seed):
    table, grouping = tg
    attrs = [c for c in table.columns if c != "label"]
    classes = sorted(table["label"].unique().tolist())
    artefact = GroupingArtefact.from_result(_Result(grouping, attrs, classes, seed), table)
    assert GroupingArtefact.from_json(artefact.to_json()) == artefact
    root = f"memory://props-{uuid.uuid4().hex}"
    store = ArtefactStore(root)
    vid = store.save("t", artefact)
    loaded = store.load("t", vid)
    assert loaded == artefact and loaded.to_json() == artefact.to_json()
    # the reference table fits its own artefact, with nothing to report
    assert loaded.check_table(table).notes == []
    # a batch with the columns in another order still fits (columns are used by name)
    loaded.check_table(table[list(reversed(table.columns))])


@settings(max_examples=60, deadline=None)
@given(tables(min_rows=2), st.data())
def test_fingerprint_ignores_the_index_and_sees_every_cell(tg, data):
    table, _ = tg
    fp = fingerprint_table(table)
    assert fingerprint_table(table.set_axis(range(7, 7 + len(table)))) == fp
    row = data.draw(st.integers(0, len(table) - 1))
    col = data.draw(st.sampled_from(list(table.columns)))
    changed = table.copy()
    s = changed[col]
    if isinstance(s.dtype, pd.CategoricalDtype):
        new = "unused"
    elif s.dtype == bool:
        new = not s.iloc[row]
    elif pd.api.types.is_numeric_dtype(s.dtype):
        new = (0 if pd.isna(s.iloc[row]) else s.iloc[row]) + 1
    else:
        new = "changed"
    changed.loc[changed.index[row], col] = new
    assert fingerprint_table(changed) != fp


# ------------------------------------------------------------------------ the store

def _artefact(seed: int) -> GroupingArtefact:
    table = pd.DataFrame({"a": [1, 2, 3, 4], "b": [0.5, 1.5, 2.5, 3.5],
                          "label": ["p", "q", "p", "q"]})
    return GroupingArtefact.from_result(_Result(Grouping([["a"], ["b"]]), ["a", "b"],
                                                ["p", "q"], seed), table,
                                        created_at="2026-01-01T00:00:00Z")


class StoreMachine(RuleBasedStateMachine):
    """Random save/load/add_file sequences against a model, on a local or memory root."""

    names = Bundle("names")

    def __init__(self):
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="store_props_")
        self.root = self.tmp if uuid.uuid4().int % 2 else f"memory://sm-{uuid.uuid4().hex}"
        self.store = ArtefactStore(self.root)
        self.model: dict[str, list[int]] = {}  # name -> seeds saved, in version order
        self.files: dict[tuple[str, str, str], bytes] = {}

    def teardown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    @rule(target=names, name=st.sampled_from(["alpha", "b-2", "c.d_e"]))
    def new_name(self, name):
        return name

    @rule(name=names, seed=st.integers(0, 10**6))
    def save(self, name, seed):
        vid = self.store.save(name, _artefact(seed))
        self.model.setdefault(name, []).append(seed)
        assert vid == f"v{len(self.model[name]):04d}"

    @rule(name=names, data=st.data())
    def load(self, name, data):
        if name not in self.model:
            with pytest.raises(StoreError):
                self.store.load(name)
            return
        i = data.draw(st.integers(1, len(self.model[name])))
        ref = data.draw(st.sampled_from([i, f"v{i:04d}", str(i)]))
        assert self.store.load(name, ref).random_state == self.model[name][i - 1]

    @rule(name=names, fname=st.sampled_from(["suite.json", "notes.txt"]),
          payload=st.binary(max_size=40), overwrite=st.booleans())
    def add_file(self, name, fname, payload, overwrite):
        if name not in self.model:
            return
        vid = self.store.latest(name)
        key = (name, vid, fname)
        if key in self.files and not overwrite:
            with pytest.raises(StoreError):
                self.store.add_file(name, vid, fname, payload)
            return
        self.store.add_file(name, vid, fname, payload, overwrite=overwrite)
        self.files[key] = payload

    @rule(name=names)
    def artefact_json_is_never_replaceable(self, name):
        if name in self.model:
            with pytest.raises(ParameterError):
                self.store.add_file(name, "latest", "artefact.json", b"{}", overwrite=True)

    @invariant()
    def matches_model(self):
        assert self.store.names() == sorted(self.model) if self.model else True
        for name, seeds in self.model.items():
            assert self.store.versions(name) == [f"v{i:04d}" for i in
                                                 range(1, len(seeds) + 1)]
            assert self.store.load(name).random_state == seeds[-1]
            assert all(r["error"] is None for r in self.store.list(name))
        for (name, vid, fname), payload in self.files.items():
            assert self.store.read_file(name, vid, fname) == payload


StoreMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=15,
                                          deadline=None)
test_store_state_machine = StoreMachine.TestCase

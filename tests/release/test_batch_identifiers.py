"""A batch that still carries the declared identifiers (issue 49): they are dropped and
the output says so. The surrogate is the one of the batch without them, byte for byte,
wherever the columns sit and whatever they hold; a surrogate that carries one is refused
by the gate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import astrid_airflow

SYNTHETIC = Path(astrid_airflow.__file__).parent / "data" / "synthetic.csv"


@pytest.fixture(scope="module")
def declared(tmp_path_factory):
    """An artefact learned with ``a1`` declared an identifier (nb, few draws)."""
    from astrid_airflow import LearnRequest, learn_release
    from astrid_airflow.release import ArtefactStore

    reference = pd.read_csv(SYNTHETIC)
    reference.insert(0, "pid", [f"P{i:05d}" for i in range(len(reference))])
    store = ArtefactStore(tmp_path_factory.mktemp("ids") / "store")
    learned = learn_release(LearnRequest(
        table=reference, store=store, name="syn", random_state=0,
        settings=dict(classifier="nb", n_search=5, n_test=10, progress=False),
        policy={"identifiers": ["pid", "a1"], "quasi_identifiers": ["a2", "a3"]}))
    return learned.artefact


def _batch(seed: int) -> pd.DataFrame:
    table = pd.read_csv(SYNTHETIC).drop(columns=["a1"])  # the artefact's columns
    rng = np.random.default_rng(seed)
    return table.sample(n=int(rng.integers(200, len(table))), random_state=seed
                        ).reset_index(drop=True)


def _carrying(batch: pd.DataFrame, seed: int, which: list[str]) -> pd.DataFrame:
    """``batch`` with the identifier columns ``which`` put back at random places."""
    rng = np.random.default_rng(seed)
    out = batch.copy()
    for name in which:
        values = rng.permutation(len(out)).astype(str) if name == "pid" else \
            rng.integers(0, 10**6, len(out))
        out.insert(int(rng.integers(0, out.shape[1] + 1)), name, values)
    return out


def test_the_artefact_names_its_declared_identifiers(declared):
    assert declared.identifiers == ("pid", "a1")
    assert not set(declared.identifiers) & set(declared.columns)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**31 - 1),
       which=st.sampled_from([["pid"], ["a1"], ["pid", "a1"], ["a1", "pid"]]))
def test_a_batch_carrying_identifiers_gets_the_surrogate_without_them(declared, seed,
                                                                      which):
    """Invariant: the surrogate of a batch with any of its declared identifiers, at any
    place, is the surrogate of the batch without them, for the same seed."""
    from astrid_airflow.release import make_surrogate

    batch = _batch(seed)
    alone = make_surrogate(batch, declared, random_state=seed)
    carried = make_surrogate(_carrying(batch, seed, which), declared, random_state=seed)
    assert not set(which) & set(carried.columns)
    pd.testing.assert_frame_equal(carried, alone)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_shuffle_file_drops_them_and_records_it(declared, tmp_path, suffix):
    from astrid_airflow.release import shuffle_file

    batch = _batch(3)
    plain, carrying = tmp_path / f"plain{suffix}", tmp_path / f"carrying{suffix}"
    for path, table in ((plain, batch), (carrying, _carrying(batch, 3, ["pid", "a1"]))):
        table.to_parquet(path, index=False) if suffix == ".parquet" else \
            table.to_csv(path, index=False)
    records: list[dict] = [{}, {}]
    for src, out, record in zip((plain, carrying), ("a.parquet", "b.parquet"), records):
        shuffle_file(src, declared, tmp_path / out, random_state=5, record=record)
    assert records[0]["dropped_identifiers"] == []
    assert records[1]["dropped_identifiers"] == ["pid", "a1"]
    a, b = pq.read_table(tmp_path / "a.parquet"), pq.read_table(tmp_path / "b.parquet")
    assert set(b.column_names) == set(declared.columns)
    assert a.equals(b)


def test_the_stage_and_the_gate_take_a_carrying_batch_and_refuse_a_carrying_surrogate(
        declared, tmp_path):
    """The stage measures the batch without its identifiers and says so in its record;
    the gate judges the same batch; a surrogate with an identifier is not publishable."""
    from astrid_airflow import StageRequest, stage_release
    from astrid_airflow._errors import AstridError
    from astrid_airflow.gate import validate_surrogate

    carrying = tmp_path / "batch.parquet"
    _carrying(_batch(7), 7, ["pid"]).to_parquet(carrying, index=False)
    staged = stage_release(StageRequest(source=carrying, artefact=declared,
                                        destination=tmp_path / "s.parquet",
                                        random_state=1, utility=False))
    assert staged.record["metrics"]["dropped_identifiers"] == ["pid"]
    result = validate_surrogate(carrying, tmp_path / "s.parquet", declared, random_state=2,
                                out_dir=tmp_path / "gate")
    assert result.success, result
    bad = pq.read_table(tmp_path / "s.parquet").to_pandas()
    bad.insert(0, "pid", pd.read_parquet(carrying)["pid"])
    bad.to_parquet(tmp_path / "bad.parquet", index=False)
    with pytest.raises(AstridError, match="pid"):
        validate_surrogate(carrying, tmp_path / "bad.parquet", declared, random_state=2,
                           out_dir=tmp_path / "gate-bad")

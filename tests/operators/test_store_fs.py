"""The artefact store opened through a caller's filesystem (Airflow's ``ObjectStoragePath``).

Library: ``ArtefactStore``, ``load_artefact`` and ``validate_surrogate`` take ``fs=``;
a ``dir://`` URL cannot be opened by fsspec on its own (a ``DirFileSystem`` needs its
base path), so finding the files proves the given filesystem did the work.

Operators: learn, shuffle and gate on a ``memory://`` store given as an
``ObjectStoragePath``, with fsspec's own URL resolution made to fail for ``memory://``:
every store access went through the ``ObjectStoragePath``'s filesystem (the one Airflow
builds from the path's connection).
"""

from __future__ import annotations

import types
import uuid

import fsspec
import pytest
from airflow.sdk import ObjectStoragePath
from astrid_airflow.operators.demo import bundled_table
from astrid_airflow.operators.gate import SurrogateGateOperator
from astrid_airflow.operators.learn import AstridLearnOperator
from astrid_airflow.operators.shuffle import GoldenEyeShuffleOperator
from fsspec.implementations.dirfs import DirFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from astrid_airflow import make_surrogate, make_synthetic
from astrid_airflow._errors import StoreError
from astrid_airflow.gate._gate import validate_surrogate
from astrid_airflow.io._fs import url_to_fs
from astrid_airflow.release._artefact_ref import load_artefact
from astrid_airflow.release._store import ArtefactStore
from tests.gate.test_gate import artefact_for

pytestmark = pytest.mark.filterwarnings("ignore:.*cannot be called outside of the Task Runner")


def ctx(task_id: str) -> dict:
    ti = types.SimpleNamespace(dag_id="d", run_id="manual__1", task_id=task_id, map_index=-1)
    return {"ti": ti, "run_id": "manual__1"}


@pytest.fixture
def dirfs():
    """``dir://`` over a fresh in-memory directory (object-store semantics, no mkdir)."""
    return DirFileSystem(path=f"/astrid-{uuid.uuid4().hex[:8]}", fs=MemoryFileSystem())


def test_fsspec_alone_cannot_open_a_dir_url():
    with pytest.raises((TypeError, ValueError, AttributeError)):  # no base path
        fsspec.core.url_to_fs("dir://store")


def test_store_load_and_gate_use_the_given_filesystem(dirfs):
    data = make_synthetic(300, random_state=0)
    artefact = artefact_for(data, "a1,a2;a3;a4")
    store = ArtefactStore("dir://store", fs=dirfs)
    version = store.save("syn", artefact)
    assert dirfs.fs.isfile(f"{dirfs.path}/store/syn/{version}/artefact.json")
    assert store.load("syn", version) == artefact and store.root == "dir://store"
    loaded, location = load_artefact(f"dir://store/syn@{version}", fs=dirfs)
    assert loaded == artefact and location.version == version
    with pytest.raises((StoreError, AttributeError)):  # without it: fsspec cannot
        ArtefactStore("dir://store")
    surrogate = make_surrogate(data, artefact, random_state=1)
    result = validate_surrogate(data, surrogate, f"dir://store/syn@{version}",
                                random_state=0, fs=dirfs)
    assert result.expectations  # judged (the raw demo data fails the default policy)
    # the suite the gate reads (and would write once) lives beside the artefact
    assert dirfs.fs.isfile(f"{dirfs.path}/store/syn/{version}/suite.json")


def test_a_filesystem_of_another_protocol_is_refused(dirfs):
    with pytest.raises(ValueError, match="cannot open"):
        url_to_fs("memory://x", dirfs)


@pytest.fixture
def memory_store():
    """An ``ObjectStoragePath`` on ``memory://`` (attached: no provider registers it)."""
    from airflow.sdk.io import store as io_store

    attached = io_store.attach("memory", fs=MemoryFileSystem())
    try:
        yield ObjectStoragePath(f"memory://astrid-{uuid.uuid4().hex[:8]}/store")
    finally:
        io_store._STORE_CACHE.pop("memory", None)
        del attached


def test_operators_open_the_store_through_the_object_storage_path(monkeypatch, tmp_path,
                                                                  memory_store):
    store = memory_store
    real = fsspec.core.url_to_fs

    def no_memory(url, *args, **kwargs):  # fsspec's own resolution: not for the store
        if str(url).startswith("memory:"):
            raise AssertionError(f"{url} opened without the ObjectStoragePath's filesystem")
        return real(url, *args, **kwargs)

    monkeypatch.setattr(fsspec.core, "url_to_fs", no_memory)
    learn = AstridLearnOperator(task_id="learn", reference=bundled_table("synthetic.csv"),
                                store=store, name="syn", n_search=10, n_test=20,
                                random_state=0, sample=None, max_seconds=None,
                                gate_policy={"max_share_below_k": 1,
                                             "max_class_disclosure_share": 1,
                                             "max_largest_group_unique_share": 1,
                                             "max_singling_out_risk": 1,
                                             "max_inference_risk": 1,
                                             "max_class_from_one_column_risk": 1,
                                             "max_intact": 1, "max_accuracy_drop": 1},
                                allow_weaker_policy=True)
    out = learn.execute(ctx("learn"))
    assert out["learned"] and out["store"].startswith("memory://")
    assert store.fs.isfile(f"{store.path}/syn/{out['version']}/artefact.json")
    staged = tmp_path / "staging" / "surrogate.parquet"
    s = GoldenEyeShuffleOperator(task_id="shuffle", table=bundled_table("synthetic_batch.csv"),
                                 store=store, artefact=out["artefact"], out=str(staged),
                                 random_state=1).execute(ctx("shuffle"))
    assert staged.is_file() and s["artefact"] == out["artefact"]
    g = SurrogateGateOperator(task_id="gate", original=s["original"], surrogate=s["surrogate"],
                              store=store, artefact=s["artefact"], random_state=1,
                              policy={"max_intact": 1, "max_accuracy_drop": 1},
                              allow_weaker_policy=True).execute(ctx("gate"))
    assert g["success"] is True, g

"""Issue 30: the remote-store paths against a real S3-compatible server (moto's, on
loopback, from ``scripts/ci_s3.sh start``; ``.ci/run`` starts it, and under CI these
tests fail without it).

Store save/load, shuffle, the gate with ``remedies`` true and false (the remote path
once dropped ``remedies``), publish, and publishers racing to one destination.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random

import numpy as np
import pandas as pd
import pytest
from conftest import s3_options
from upath import UPath

from astrid_airflow import ArtefactStore, fit_recipe, make_surrogate
from astrid_airflow.gate import validate_surrogate
from astrid_airflow.io import s3_put
from astrid_airflow.pipeline import PublishRequest, publish_release, stage_surrogate
from tests.pipeline.test_publish_concurrency import race_round
from tests.release.test_remedies import _artefact

pytestmark = [pytest.mark.s3,
              pytest.mark.filterwarnings("ignore::astrid_airflow.ProtectsNothingWarning")]

INTEGRITY = "expect_surrogate_column_values_to_match_original_per_class"


def remedied_table_and_artefact():
    """A table whose stored artefact carries a release recipe (so remedies matter)."""
    rng = np.random.default_rng(4)
    n = 600
    y = rng.integers(0, 2, n)
    cols = {f"x{i}": rng.normal(y * 0.5, 1.0, n).round(4) for i in range(4)}
    t = pd.DataFrame({**cols, "y": y})
    groups = ";".join(cols)
    recipe, _ = fit_recipe(t, target="y", grouping=groups, k=5)
    return t, _artefact(t, groups, release={"status": "given", "recipe": recipe.to_dict()})


def test_store_saves_and_loads_on_s3(s3):
    fs, prefix = s3
    _t, art = remedied_table_and_artefact()
    store = ArtefactStore(f"{prefix}/store", fs=fs)
    version = store.save("syn", art)
    assert fs.isfile(f"{prefix}/store/syn/{version}/artefact.json".removeprefix("s3://"))
    assert store.load("syn", version) == art and store.latest("syn") == version


def test_shuffle_reads_and_writes_s3(s3):
    fs, prefix = s3
    t, art = remedied_table_and_artefact()
    with fs.open(f"{prefix}/original.parquet", "wb") as fh:
        t.to_parquet(fh, index=False)
    staged = stage_surrogate(f"{prefix}/original.parquet", art,
                             f"{prefix}/staging/surrogate.parquet", random_state=1,
                             utility=False)
    with fs.open(staged.paths[0], "rb") as fh:
        out = pd.read_parquet(fh)
    assert len(out) == len(t) and sorted(out["y"]) == sorted(t["y"])
    assert staged.metrics  # measured before it was moved into place


@pytest.mark.parametrize("remedies", [True, False])
def test_the_gate_on_s3_judges_the_release_it_is_asked_about(s3, remedies):
    """Regression (issue 30): with ``fs`` the gate dropped ``remedies`` (a raw release was
    judged against the remedied original, failing integrity)."""
    fs, prefix = s3
    t, art = remedied_table_and_artefact()
    version = ArtefactStore(f"{prefix}/store", fs=fs).save("syn", art)
    surrogate = make_surrogate(t, art, random_state=1, remedies=remedies)
    same = {"accuracy_original": 0.8, "accuracy_surrogate": 0.8}
    result = validate_surrogate(t, surrogate, f"{prefix}/store/syn@{version}", fs=fs,
                                random_state=0, metrics=same, remedies=remedies)
    assert INTEGRITY not in result.failed
    if remedies:  # judged as the remedied release the artefact records
        assert result.artefact["remedies"] == art.release["recipe"]


KEY = "s3-test-signing-key-0123456789"  # receipts are trusted only when signed


@pytest.fixture(autouse=True)
def signing_key(monkeypatch):
    monkeypatch.setenv("ASTRID_SIGNING_KEY", KEY)  # forked publishers inherit it


def published_bytes(data: bytes, release_id: str) -> bytes:
    """What publishing the staged CSV ``data`` as ``release_id`` writes."""
    from astrid_airflow.pipeline._integrity import canonical_of

    return canonical_of(data, ".csv", release_id=release_id, random_state=None,
                        key=KEY.encode()).data


def stage(fs, prefix: str, name: str, payload: str) -> UPath:
    """A staged surrogate on S3 with a passing receipt for exactly its bytes."""
    from astrid_airflow.release import seal_receipt

    path = UPath(f"{prefix}/staging/{name}/surrogate.csv", **s3_options(
        fs.client_kwargs["endpoint_url"]))
    data = f"a,class\n{payload},x\n".encode()
    fs.pipe_file(path.path, data)
    receipt = {"success": True, "surrogate": str(path), "failed": [], "expectations": [],
               "sha256": hashlib.sha256(data).hexdigest(), "artefact": "syn@v0001",
               "policy": {}}
    receipt = seal_receipt(receipt, stem="surrogate", artefact_sha256=None,
                           suite_sha256=None, gate_files={}, key=KEY.encode())
    fs.pipe_file(path.path.replace("surrogate.csv", "surrogate.gate.json"),
                 json.dumps(receipt).encode())
    return path


def test_publish_on_s3_archives_promotes_and_refuses_a_changed_archive(s3):
    fs, prefix = s3
    a = stage(fs, prefix, "a", "1")
    dest = UPath(f"{prefix}/published/surrogate.csv", **a.storage_options)
    done = publish_release(PublishRequest(surrogate=a, destination=dest, release_id="r1"))
    assert done.published
    assert fs.cat_file(dest.path) == published_bytes(fs.cat_file(a.path), "r1")
    manifest = json.loads(fs.cat_file(dest.path.replace("surrogate.csv",
                                                        "surrogate.release.json")))
    assert manifest["sha256"] == done.sha256 and manifest["release_id"] == "r1"
    again = publish_release(PublishRequest(surrogate=a, destination=dest, release_id="r1"))
    assert again.action == "same"
    b = stage(fs, prefix, "b", "2")
    from astrid_airflow import ReleaseError

    for force in (False, True):
        with pytest.raises(ReleaseError, match="immutable"):
            publish_release(PublishRequest(surrogate=b, destination=dest, release_id="r1",
                                           force=force))
    archived = f"{dest.parent.path}/releases/r1/surrogate.csv"
    assert fs.cat_file(archived) == published_bytes(fs.cat_file(a.path), "r1")
    assert not s3_put(fs, archived, b"x", if_none_match=True)  # the server enforces it


# ------------------------------------------------------------------ the race on S3

# Eight rounds of five racing publishers: the local race (test_publish_concurrency) runs
# twenty; on the S3 server each round is a few hundred requests to one process, so more
# rounds cost minutes under load (141 s for twenty in one suite run) and add repetitions,
# not paths
ROUNDS, RELEASES = 8, 4
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _worker(barrier, queue, endpoint, surrogate, destination, rid, when, seed):
    import os
    import time

    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()  # no connection pool shared across fork
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    opts = s3_options(endpoint)
    random.seed(seed)
    barrier.wait()
    time.sleep(random.random() * 0.02)
    try:
        done = publish_release(PublishRequest(
            surrogate=UPath(surrogate, **opts), destination=UPath(destination, **opts),
            release_id=rid, run_after=when))
        queue.put((rid, done.action, None))
    except Exception as exc:
        queue.put((rid, "error", f"{type(exc).__name__}: {exc}"))


def test_racing_publishers_on_s3_leave_the_newest_release_current_every_round(s3):
    fs, prefix = s3
    endpoint = fs.client_kwargs["endpoint_url"]
    destination = f"{prefix}/published/surrogate.csv"
    dkey = destination.removeprefix("s3://")
    archives: dict[str, bytes] = {}
    for rnd in range(ROUNDS):
        publishers, expected = [], {}
        for i in range(RELEASES):
            rid = f"r{rnd:02d}-{i}"
            path = stage(fs, prefix, rid, f"{rnd}.{i}")
            expected[rid] = published_bytes(fs.cat_file(path.path), rid)
            publishers.append((str(path), rid, (T0 + dt.timedelta(minutes=rnd, seconds=i))
                               .isoformat()))
        publishers.append(publishers[-1])  # the newest twice: a cleared/retried task
        random.Random(rnd).shuffle(publishers)
        results = race_round(publishers, destination, rnd, worker=_worker, extra=(endpoint,),
                             timeout=300)
        assert [r for r in results if r[1] == "error"] == []
        newest = f"r{rnd:02d}-{RELEASES - 1}"
        manifest = json.loads(fs.cat_file(dkey.replace("surrogate.csv",
                                                       "surrogate.release.json")))
        assert manifest["release_id"] == newest
        current = fs.cat_file(dkey)
        assert hashlib.sha256(current).hexdigest() == manifest["sha256"]
        assert current == expected[newest]
        published = [rid for rid, action, _ in results if action == "publish"]
        assert published.count(newest) == 1
        assert all(published.count(r) <= 1 for r in set(published))
        for rid in set(published):
            archives[dkey.replace("surrogate.csv", f"releases/{rid}/surrogate.csv")] = \
                expected[rid]
        for key, data in archives.items():
            assert fs.cat_file(key) == data

"""Issue 30: publishers racing to one destination (local filesystem).

Five processes per round, released at the same instant through a barrier: four
releases whose runs were due one second apart, and a second publisher of the newest
one (a cleared or retried task). After every round:

* the newest release is current, and the manifest's sha256 is the current file's;
* every archive holds the bytes of its release and never changes afterwards;
* each release is published (an Asset event) by at most one publisher: exactly one
  for the newest.

The same race against an S3-compatible server is in ``tests/pipeline/test_s3.py``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import multiprocessing
import random
from pathlib import Path

import pytest

from astrid_airflow.io import atomic_path, fs_write_bytes, load_json, plain, split_url
from astrid_airflow.pipeline import PublishRequest, publish_release, release_plan
from astrid_airflow.release import check_receipt, decide_release

# imported here, once: the forked publishers start warm
_WARM = (atomic_path, fs_write_bytes, load_json, plain, split_url, check_receipt,
         decide_release, release_plan)

KEY = "publish-concurrency-key-0123456789"  # receipts are trusted only when signed
ROUNDS = 20
RELEASES = 4
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def signing_key(monkeypatch):
    monkeypatch.setenv("ASTRID_SIGNING_KEY", KEY)  # the forked publishers inherit it


def published_bytes(surrogate: Path, release_id: str) -> bytes:
    """What publishing ``surrogate`` as ``release_id`` writes (its canonical form)."""
    from astrid_airflow.pipeline._integrity import canonical_of

    return canonical_of(surrogate.read_bytes(), surrogate.suffix, release_id=release_id,
                        random_state=None, key=KEY.encode()).data


def stage(root: Path, name: str, payload: str) -> Path:
    """A staged surrogate with a passing receipt for exactly its bytes."""
    from astrid_airflow.release import seal_receipt

    path = root / "staging" / name / "surrogate.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"a,class\n{payload},x\n")
    receipt = {"success": True, "surrogate": str(path), "failed": [],
               "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
               "expectations": [], "artefact": "syn@v0001", "policy": {}}
    receipt = seal_receipt(receipt, stem=path.stem, artefact_sha256=None, suite_sha256=None,
                           gate_files={}, key=KEY.encode())
    (path.parent / "surrogate.gate.json").write_text(json.dumps(receipt))
    return path


def _worker(barrier, queue, surrogate: str, destination: str, release_id: str,
            run_after: str, seed: int) -> None:
    random.seed(seed)
    barrier.wait()
    import time

    time.sleep(random.random() * 0.02)  # a different interleaving every round
    try:
        done = publish_release(PublishRequest(
            surrogate=Path(surrogate), destination=Path(destination),
            release_id=release_id, run_after=run_after))
        queue.put((release_id, done.action, None))
    except Exception as exc:  # reported to the test, which fails on it
        queue.put((release_id, "error", f"{type(exc).__name__}: {exc}"))


def race_round(publishers, destination, rnd: int, worker=_worker, extra: tuple = (),
               timeout: float = 120) -> list[tuple[str, str, str | None]]:
    """Run one round's publishers at once; their ``(release_id, action, error)``.

    ``worker(barrier, queue, *extra, surrogate, destination, release_id, run_after,
    seed)`` publishes one release (``extra``: what a store needs, e.g. an endpoint)."""
    ctx = multiprocessing.get_context("fork")
    barrier, queue = ctx.Barrier(len(publishers)), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(barrier, queue, *extra, str(s), str(destination),
                                              rid, when, rnd * 100 + i))
             for i, (s, rid, when) in enumerate(publishers)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=timeout) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return results


def check_round(destination: Path, results, newest: str, expected: dict[str, bytes],
                archives: dict[Path, bytes]) -> None:
    """The invariants of issue 30 after one round."""
    assert [r for r in results if r[1] == "error"] == []
    manifest = json.loads(destination.with_name(
        f"{destination.stem}.release.json").read_text())
    assert manifest["release_id"] == newest
    current = destination.read_bytes()
    assert hashlib.sha256(current).hexdigest() == manifest["sha256"]
    assert current == expected[newest]
    published = [rid for rid, action, _ in results if action == "publish"]
    assert published.count(newest) == 1
    assert all(published.count(rid) <= 1 for rid in set(published))
    for rid in set(published):
        archived = destination.parent / "releases" / rid / destination.name
        archives[archived] = expected[rid]
    for archived, data in archives.items():  # every archive so far, unchanged
        assert archived.read_bytes() == data


def test_racing_publishers_leave_the_newest_release_current_every_round(tmp_path):
    destination = tmp_path / "published" / "surrogate.csv"
    archives: dict[Path, bytes] = {}
    for rnd in range(ROUNDS):
        publishers, expected = [], {}
        for i in range(RELEASES):
            rid = f"r{rnd:02d}-{i}"
            surrogate = stage(tmp_path, rid, f"{rnd}.{i}")
            expected[rid] = published_bytes(surrogate, rid)
            when = (T0 + dt.timedelta(minutes=rnd, seconds=i)).isoformat()
            publishers.append((surrogate, rid, when))
        publishers.append(publishers[-1])  # the newest twice: a cleared/retried task
        random.Random(rnd).shuffle(publishers)
        results = race_round(publishers, destination, rnd)
        check_round(destination, results, f"r{rnd:02d}-{RELEASES - 1}", expected, archives)


def test_a_publisher_waits_for_the_lock_then_gives_up_changing_nothing(tmp_path):
    from astrid_airflow.io import file_lock

    surrogate = stage(tmp_path, "a", "1")
    destination = tmp_path / "published" / "surrogate.csv"
    with file_lock(str(destination.parent / ".surrogate.release.lock")), \
            pytest.raises(TimeoutError, match="publication lock"):
        publish_release(PublishRequest(surrogate=surrogate, destination=destination,
                                       release_id="a", lock_timeout=0.2))
    assert not destination.exists()
    assert not (destination.parent / "releases").exists()


# ------------------------------------------------- the invariant, as a property
# The lock serialises publications, so the interleavings it allows are the orders of
# whole publications; a publisher may also die between the current file and the
# manifest (then it is retried, as Airflow retries a task).

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.lists(st.integers(0, 3), min_size=1, max_size=8),
       crash_at=st.one_of(st.none(), st.integers(0, 7)))
def test_any_order_of_publications_with_a_crash_keeps_the_invariants(tmp_path_factory, order,
                                                                     crash_at):
    from astrid_airflow.pipeline import _publish

    root = tmp_path_factory.mktemp("prop")
    destination = root / "published" / "surrogate.csv"
    staged = {i: stage(root, f"r{i}", str(i)) for i in set(order)}
    events: list[str] = []
    for step, i in enumerate(order):
        request = PublishRequest(surrogate=staged[i], destination=destination,
                                 release_id=f"r{i}",
                                 run_after=(T0 + dt.timedelta(seconds=i)).isoformat())
        if step == crash_at:  # dies after the current file, before the manifest
            real = _publish.write_text_atomic
            _publish.write_text_atomic = lambda *a, **k: (_ for _ in ()).throw(OSError("kill"))
            try:  # a no-op (same, older) writes nothing, so has nothing to die in
                with contextlib.suppress(OSError):
                    publish_release(request)
            finally:
                _publish.write_text_atomic = real
        done = publish_release(request)  # the retry (or the only attempt)
        if done.published:
            events.append(done.release_id)
    newest = f"r{max(order)}"
    manifest = json.loads(destination.with_name("surrogate.release.json").read_text())
    assert manifest["release_id"] == newest
    assert hashlib.sha256(destination.read_bytes()).hexdigest() == manifest["sha256"]
    assert all(events.count(r) == 1 for r in events)  # one announcement per release
    assert events == sorted(events)  # only forward
    for i, path in staged.items():
        archived = destination.parent / "releases" / f"r{i}" / "surrogate.csv"
        if archived.exists():
            assert archived.read_bytes() == published_bytes(path, f"r{i}")  # canonical

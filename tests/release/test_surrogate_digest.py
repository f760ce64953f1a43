"""Pinned digests of ``make_surrogate`` and ``astrid shuffle`` for a fixed seed.

A restructuring must move code, not bytes: the ``*_IN_PLACE`` digests were taken before
the seed conventions and the two GoldenEye permutations were unified (issue 20), when the
class stayed in place; the surrogate now publishes its rows in a random order
(docs/privacy.md), and putting its rows back in source order (the inverse of
``row_order``) must give those bytes again: the group permutations of a seed did not
change. The other digests pin the published output since the row order (branch
rowperm); any change to them changes every published surrogate.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from astrid_airflow import ArtefactStore, GroupingArtefact, make_surrogate
from astrid_airflow.cli import main
from astrid_airflow.engine import row_order, seed_of_copies

GROUPING = [["a1", "a2"], ["a3"], ["a4"]]


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(20)
    n = 90
    y = rng.choice(["neg", "pos", "mid"], n)
    return pd.DataFrame({
        "a1": np.round(rng.normal(size=n), 6),
        "a2": rng.integers(0, 50, n),
        "a3": rng.choice(["u", "v", "w"], n),
        "a4": np.round(rng.uniform(size=n), 6),
        "class": y,
    })


def _digest(frame: pd.DataFrame) -> str:
    return hashlib.sha256(frame.to_csv(index=False).encode()).hexdigest()[:16]


def _in_source_order(frame: pd.DataFrame, seed: np.random.SeedSequence) -> pd.DataFrame:
    """The surrogate's rows put back where the class came from (class in place)."""
    sigma = row_order(len(frame), len(GROUPING), seed)
    return frame.iloc[np.argsort(sigma)]


def test_make_surrogate_digest_pinned():
    t = _table()
    one = make_surrogate(t, GROUPING, target="class", random_state=12345)
    copies = make_surrogate(t, GROUPING, target="class", random_state=12345, n_copies=2)
    assert _digest(one) == MAKE_SURROGATE
    assert [_digest(c) for c in copies] == [MAKE_SURROGATE, MAKE_SURROGATE_COPY_2]
    seeds = seed_of_copies(12345, 2)
    assert _digest(_in_source_order(one, seed_of_copies(12345, 1)[0])) == \
        MAKE_SURROGATE_IN_PLACE
    assert [_digest(_in_source_order(c, s)) for c, s in zip(copies, seeds)] == \
        [MAKE_SURROGATE_IN_PLACE, MAKE_SURROGATE_COPY_2_IN_PLACE]


def test_astrid_shuffle_digest_pinned(tmp_path, capsys):
    t = _table()
    src = tmp_path / "data.csv"
    t.to_csv(src, index=False)
    result = {"grouping": GROUPING, "k": 3, "table": [], "target": "class",
              "classifier": {"preset": "svm"}, "scoring": "accuracy", "alpha": 0.05,
              "n_search": 10, "n_test": 20, "random_state": 0}
    ArtefactStore(tmp_path / "store").save("pin", GroupingArtefact.from_result(result, t))
    ref = str(tmp_path / "store" / "pin")
    out = tmp_path / "surr.csv"
    assert main(["shuffle", str(src), "--artefact", ref, "--out", str(out), "--seed", "12345",
                 "--no-utility", "--json"]) == 0
    capsys.readouterr()
    assert hashlib.sha256(out.read_bytes()).hexdigest()[:16] == ASTRID_SHUFFLE


MAKE_SURROGATE_IN_PLACE = "5448d091ea51a097"
MAKE_SURROGATE_COPY_2_IN_PLACE = "b3efd0662ad9ad15"
MAKE_SURROGATE = "b060d8c1017185a0"
MAKE_SURROGATE_COPY_2 = "ffcd4264d07f5e30"
ASTRID_SHUFFLE = "265ceefd6139d68e"

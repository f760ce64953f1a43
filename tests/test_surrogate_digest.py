"""Pinned digests of ``make_surrogate`` and ``astrid shuffle`` for a fixed seed.

A restructuring must move code, not bytes: these digests were taken before the seed
conventions and the two GoldenEye permutations were unified (issue 20), and any change
to them changes every published surrogate.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from astrid_airflow import ArtefactStore, GroupingArtefact, make_surrogate
from astrid_airflow.cli import main

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


def test_make_surrogate_digest_pinned():
    t = _table()
    one = make_surrogate(t, GROUPING, target="class", random_state=12345)
    copies = make_surrogate(t, GROUPING, target="class", random_state=12345, n_copies=2)
    assert _digest(one) == MAKE_SURROGATE
    assert [_digest(c) for c in copies] == [MAKE_SURROGATE, MAKE_SURROGATE_COPY_2]


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


MAKE_SURROGATE = "5448d091ea51a097"
MAKE_SURROGATE_COPY_2 = "b3efd0662ad9ad15"
ASTRID_SHUFFLE = "919ce6729b67e015"

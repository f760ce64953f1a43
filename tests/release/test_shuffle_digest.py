"""Pinned output of the GoldenEye shuffle: the speed work must not change a single byte.

``IN_PLACE`` digests were taken from the implementation before the shuffle was optimised
(main at 72cbcfc) with the pinned environment (pyarrow 26.0.1, numpy 2.4.6), when the
class stayed in place. A release now publishes its rows in a random order
(docs/privacy.md); its rows put back in source order (inverse of ``row_order``) must
give those row digests again, so the group permutations of a seed did not change.
``PINNED`` holds the published bytes since the row order (branch rowperm). A new
pyarrow may change the Parquet bytes (its ``created_by``), not the rows, so the row
digests are checked separately from the file digests.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from astrid_airflow import make_surrogate, shuffle_file
from astrid_airflow.engine import _permutation, group_permutations, row_order, seed_of_copies
from astrid_airflow.release import _surrogate

GROUPING = "f0,c0;f1;i0,s0;c1;s1;f2,i1"


def table(n: int = 3000, seed: int = 11) -> pa.Table:
    """Numeric (with NaN and nulls), dictionary and plain string columns, 4 classes."""
    rng = np.random.default_rng(seed)
    f0 = rng.normal(size=n)
    f0[rng.random(n) < 0.05] = np.nan
    words = np.array(["alpha", "beta", "gamma", "delta", "", "epsilon-long-word"])
    s0 = rng.choice(words, n).astype(object)
    s0[rng.random(n) < 0.05] = None
    return pa.table({
        "f0": f0,
        "f1": rng.integers(0, 5, n).astype(float),  # many duplicates
        "f2": rng.normal(size=n),
        "i0": pa.array(rng.integers(-50, 50, n), mask=rng.random(n) < 0.03),
        "i1": rng.integers(0, 10**6, n),
        "c0": pa.DictionaryArray.from_arrays(
            pa.array(rng.integers(0, 4, n).astype(np.int32)),
            pa.array(["lo", "mid", "hi", "top"])),
        "c1": pa.DictionaryArray.from_arrays(
            pa.array(rng.integers(0, 30, n).astype(np.int32)),
            pa.array([f"level_{j}" for j in range(30)])),
        "s0": pa.array(s0, pa.string()),
        "s1": rng.choice(words, n),
        "y": rng.choice(np.array(["a", "b", "c", "d"]), n, p=[.4, .3, .2, .1]),
    })


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def rows_digest(t: pa.Table) -> str:
    return digest(pd.util.hash_pandas_object(t.to_pandas(), index=False).to_numpy()
                  .tobytes())


@pytest.fixture
def src(tmp_path):
    path = tmp_path / "in.parquet"
    pq.write_table(table(), path)
    return path


# Published output since the row order (do not update casually).
PINNED = {
    "parquet": ("7d695a6e9415a2a9", "2f9ecf64e5f40966"),
    "parquet_chunk_700": ("9d4bd1d9e3f1104e", "2f9ecf64e5f40966"),
    "csv": ("fa0040001a879578", "fa0040001a879578"),
    "copy_2_of_2": ("21e12edf04dd71bf", "98e0f5a27c94fe7b"),
    "perms": "95a5c7b0a72f38b1",
    "make_surrogate_arrow": "ccb175a6c4b9cf29",
}

# Row digests pinned from the implementation before the speed work, class in place
# (main at 72cbcfc); the published rows, in source order, must still give them.
IN_PLACE = {
    "parquet": "c784c6cfc032f6db",
    "copy_2_of_2": "6c97fd716ac5e482",
    "make_surrogate_arrow": "5dedc27eca515599",
}


def in_source_order(t: pa.Table, random_state: int, n_copies: int = 1, copy: int = 0
                    ) -> pa.Table:
    """A release's rows put back where their class came from (the inverse row order)."""
    seed = seed_of_copies(random_state, n_copies)[copy]
    sigma = row_order(t.num_rows, len(GROUPING.split(";")), seed)
    return t.take(pa.array(np.argsort(sigma)))


def test_rows_in_source_order_are_the_class_in_place_output(src, tmp_path):
    p = tmp_path / "o.parquet"
    shuffle_file(src, GROUPING, p, target="y", random_state=123)
    paths = shuffle_file(src, GROUPING, tmp_path / "k.parquet", target="y",
                         random_state=7, n_copies=2)
    s = make_surrogate(table(), GROUPING, target="y", random_state=5)
    got = {"parquet": rows_digest(in_source_order(pq.read_table(p), 123)),
           "copy_2_of_2": rows_digest(in_source_order(pq.read_table(paths[1]), 7, 2, 1)),
           "make_surrogate_arrow": rows_digest(in_source_order(s, 5))}
    assert got == IN_PLACE


def _outputs(src, tmp_path, monkeypatch) -> dict:
    out = {}
    p = tmp_path / "o.parquet"
    shuffle_file(src, GROUPING, p, target="y", random_state=123)
    out["parquet"] = (digest(p.read_bytes()), rows_digest(pq.read_table(p)))
    c = tmp_path / "o.csv"
    shuffle_file(src, GROUPING, c, target="y", random_state=123)
    out["csv"] = (digest(c.read_bytes()), digest(c.read_bytes()))
    paths = shuffle_file(src, GROUPING, tmp_path / "k.parquet", target="y",
                         random_state=7, n_copies=2)
    out["copy_2_of_2"] = (digest(open(paths[1], "rb").read()),
                          rows_digest(pq.read_table(paths[1])))
    codes = _surrogate.arrow_class_codes(table().column("y"), "y")
    perms = group_permutations(codes, 6, np.random.SeedSequence(99))
    out["perms"] = digest(perms.astype(np.int64).tobytes())
    s = make_surrogate(table(), GROUPING, target="y", random_state=5)
    out["make_surrogate_arrow"] = rows_digest(s)
    monkeypatch.setattr(_surrogate, "CHUNK_ROWS", 700)
    q = tmp_path / "q.parquet"
    shuffle_file(src, GROUPING, q, target="y", random_state=123)
    out["parquet_chunk_700"] = (digest(q.read_bytes()), rows_digest(pq.read_table(q)))
    return out


def test_shuffle_output_is_pinned(src, tmp_path, monkeypatch):
    got = _outputs(src, tmp_path, monkeypatch)
    assert got == PINNED


@pytest.mark.parametrize("threads", [1, 3])
def test_output_does_not_depend_on_the_thread_count(src, tmp_path, monkeypatch, threads):
    monkeypatch.setattr(_permutation, "THREADS", threads)
    assert _outputs(src, tmp_path, monkeypatch) == PINNED


def test_within_class_permutation_is_goldeneye_indices():
    from astrid_airflow import goldeneye_indices
    from astrid_airflow.engine._permutation import class_blocks, within_class_permutation

    codes = np.random.default_rng(0).integers(0, 5, 999)
    order, bounds = class_blocks(codes)
    for seed in range(5):
        expected = goldeneye_indices(codes, 1, np.random.default_rng(seed))[0]
        got = within_class_permutation(order.astype(np.int32), bounds,
                                       np.random.default_rng(seed),
                                       np.empty(999, np.int32))
        np.testing.assert_array_equal(got, expected)


def test_many_chunk_input_is_pinned(tmp_path):
    # Row groups of 256 rows: the input is read as many chunks per column (dictionary
    # columns with a dictionary per chunk); digests since the row order.
    src = tmp_path / "in.parquet"
    pq.write_table(table(), src, row_group_size=256)
    got = {}
    for fmt in ("parquet", "csv"):
        out = tmp_path / f"o.{fmt}"
        shuffle_file(src, GROUPING, out, target="y", random_state=321)
        got[fmt] = digest(out.read_bytes())
    assert got == {"parquet": "ca689af6bc67f403", "csv": "bcdf5becd8463439"}

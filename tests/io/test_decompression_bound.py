"""Rows per input file are bounded against its size on disk (issue 53, bounds).

A Parquet file of a few kilobytes can claim 10^9 rows of run-length-encoded pages and
exhaust memory when read. The one reader refuses, from the footer and before reading
any page, a file holding more than ``MAX_CELLS_PER_BYTE`` cells per byte on disk once
past ``EXPANSION_FLOOR`` cells.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from astrid_airflow import DataError
from astrid_airflow.cli import main
from astrid_airflow.io import _io, read_arrow


def _bomb(path, rows: int) -> None:
    """Constant columns: a small file claiming many rows."""
    pq.write_table(pa.table({"a": np.zeros(rows, dtype=np.int8),
                             "class": np.zeros(rows, dtype=np.int8)}), path,
                   compression="zstd")


def test_a_file_claiming_far_more_cells_than_its_bytes_is_refused_before_reading(
        tmp_path, monkeypatch, capsys):
    path = tmp_path / "bomb.parquet"
    _bomb(path, 400_000)
    size = path.stat().st_size
    # the rule at a test's scale: pyarrow's writer pages every 20,000 rows or so, so its
    # constant columns reach ~250 cells per byte; a hand-made file of one run-length
    # page reaches millions
    assert 800_000 / size > 100
    monkeypatch.setattr(_io, "EXPANSION_FLOOR", 10_000)
    monkeypatch.setattr(_io, "MAX_CELLS_PER_BYTE", 100)
    read = []
    monkeypatch.setattr(pq, "read_table", lambda *a, **k: read.append(a) or 1 / 0)
    with pytest.raises(DataError, match=r"claims 800,000 cells in [0-9,]+ bytes, more "
                                        r"than 100 per byte"):
        read_arrow(path)
    assert read == []  # not a page read
    code = main(["learn", str(path), "--target", "class", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "decompression bomb" in err
    monkeypatch.undo()
    monkeypatch.setattr(_io, "EXPANSION_FLOOR", 10_000)
    monkeypatch.setattr(_io, "MAX_CELLS_PER_BYTE", 100)
    monkeypatch.setenv("ASTRID_MAX_CELLS_PER_BYTE", str(10**9))  # a genuine file, said so
    assert read_arrow(path).num_rows == 400_000


def test_honest_tables_are_far_inside_the_bound(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=50_000), "n": rng.integers(0, 9, 50_000),
                          "s": rng.choice(["a", "b", "c"], 50_000),
                          "class": rng.integers(0, 2, 50_000)})
    frame.to_parquet(tmp_path / "t.parquet")
    cells = frame.size / (tmp_path / "t.parquet").stat().st_size
    assert cells < _io.MAX_CELLS_PER_BYTE / 10
    assert read_arrow(tmp_path / "t.parquet").num_rows == 50_000

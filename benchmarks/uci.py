"""The paper's benchmark data: the nine UCI ARFF files, cleaned as the paper did.

``load(name)`` returns ``(table, "class")``: rows with a missing value dropped, then
constant attributes dropped (``astrid_airflow.drop_missing_and_constant``), the class
column (the last one in every file) renamed ``class`` as the authors' loader does.

Soybean comes in two readings (see the datasets' README):

* ``"soybean"`` — the paper's reading, 682 rows / 19 classes / 35 attributes. R's
  ``foreign::read.arff`` splits data lines on ``","`` without stripping the space that
  follows each comma, and only a bare ``?`` is missing. In soybean.arff every value
  after the first is preceded by a space, so only a ``?`` in the first column (``date``)
  is missing; every other ``?`` is an ordinary category, here the string ``"?"``.
  ``na.omit`` then drops one row. We parse the data lines the same way.
* ``"soybean-clean"`` — the correct parsing (every ``?`` missing): 562 / 15 / 35.

The data directory is ``$ASTRID_UCI_DIR`` or ``../shared/datasets/uci`` beside the repo.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from astrid_airflow import drop_missing_and_constant, read_table

__all__ = ["DATASETS", "COUNTS", "data_dir", "load"]

# Benchmark order of the paper's tables; "soybean" is the paper's reading.
DATASETS = ("balance-scale", "credit-a", "diabetes", "kr-vs-kp", "mushroom", "segment",
            "soybean", "soybean-clean", "vehicle", "vowel")

# (rows, classes, attributes) after cleaning: the README table (R column for soybean).
COUNTS = {
    "balance-scale": (625, 3, 4), "credit-a": (653, 2, 15), "diabetes": (768, 2, 8),
    "kr-vs-kp": (3196, 2, 36), "mushroom": (5644, 2, 21), "segment": (2310, 7, 18),
    "soybean": (682, 19, 35), "soybean-clean": (562, 15, 35), "vehicle": (846, 4, 18),
    "vowel": (990, 11, 13),
}

TARGET = "class"


def data_dir() -> Path:
    env = os.environ.get("ASTRID_UCI_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "datasets" / "uci"


def load(name: str, directory: str | os.PathLike | None = None) -> tuple[pd.DataFrame, str]:
    """The cleaned table of benchmark dataset ``name`` and its class column name."""
    if name not in COUNTS:
        raise ValueError(f"Unknown dataset {name!r}; choose from {list(COUNTS)}.")
    root = Path(directory) if directory is not None else data_dir()
    if name == "soybean":
        table = _read_arff_as_r(root / "soybean.arff")
    else:
        file = "soybean" if name == "soybean-clean" else name
        table = read_table(str(root / f"{file}.arff"))
        table = table.rename(columns={table.columns[-1]: TARGET})
    return drop_missing_and_constant(table, TARGET), TARGET


def _read_arff_as_r(path: Path) -> pd.DataFrame:
    """``foreign::read.arff`` on an all-nominal file: only a bare ``?`` is missing."""
    names: list[str] = []
    rows: list[list[str]] = []
    in_data = False
    with open(path, encoding="utf-8") as fh:
        for raw in fh:
            line = raw.rstrip("\r\n")
            if not in_data:
                head = line.strip()
                if head.lower().startswith("@attribute"):
                    names.append(head.split()[1])
                elif head.lower().startswith("@data"):
                    in_data = True
                continue
            if not line.strip() or line.lstrip().startswith("%"):
                continue
            rows.append(line.split(","))
    if any(len(r) != len(names) for r in rows):
        raise ValueError(f"{path}: a data line does not have {len(names)} fields.")
    cells = np.array(rows, dtype=object)
    missing = cells == "?"  # exactly "?": a " ?" after a comma is a category for R
    values = np.char.lstrip(cells.astype(str)).astype(object)
    values[missing] = None
    table = pd.DataFrame(values, columns=names)
    table = table.rename(columns={names[-1]: TARGET})
    return table.astype("category")

"""Data preparation shared by the grouping test and the search: checks, codes, splits."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from astrid_airflow._errors import DataError
from astrid_airflow.io import check_attributes, check_table, read_table

from ._permutation import class_codes


@dataclass
class Prepared:
    table: pd.DataFrame
    target: str
    attributes: list[str]
    codes: np.ndarray
    classes: tuple


def prepare(data: object, target: str, *, min_rows_per_class: int) -> Prepared:
    """Read and check ``data``; integer-code the class column (classes sorted)."""
    table = read_table(data)
    if not isinstance(target, str):
        raise DataError(f"The target must be a column name (str), got {target!r}.")
    check_table(table, target, min_rows_per_class=min_rows_per_class)
    attributes = [c for c in table.columns if c != target]
    check_attributes(table, attributes, target)
    codes = class_codes(table[target])
    classes = tuple(pd.Series(table[target]).drop_duplicates().sort_values().tolist())
    return Prepared(table.reset_index(drop=True), target, attributes, codes, classes)


def stratified_split(codes: np.ndarray, fraction: float, seed: np.random.SeedSequence
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Indices of a stratified split: ``fraction`` of each class first, the rest second."""
    idx = np.arange(codes.size)
    try:
        first, second = train_test_split(idx, train_size=fraction, stratify=codes,
                                         random_state=int(seed.generate_state(1)[0]))
    except ValueError as exc:
        raise DataError(f"Cannot split the table by class: {exc}") from None
    return np.sort(first), np.sort(second)

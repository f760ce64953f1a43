"""The linkability attack (Giomi et al. 2023, Sec. 4.2): the attacker's two column sets
(:func:`linkability_split`), the attack on encoded tables (:func:`linkability_attack`)
and on DataFrames (:func:`linkability_risk`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from astrid_airflow._errors import ParameterError
from astrid_airflow._validation import check_attack_count, check_seed_sequence
from astrid_airflow.engine import Grouping

from ._attack_tables import AttackTables, nearest, sampled_note, targets
from ._attacks import AttackRisk, result


def linkability_split(columns: Sequence[str], grouping: Grouping | None = None, *,
                      how: str = "cut_largest_group", random_state: object = None
                      ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The attacker's two auxiliary column sets.

    ``"cut_largest_group"``: the largest group of ``grouping`` is cut in two halves (in
    its column order), one to each set; the other groups are kept whole and go, largest
    first, to the set with fewer columns. Cutting the largest group is the attacker's
    best split against GoldenEye: its columns stay aligned in the release, so both
    halves point to the same released row. ``"random_split"``: a random half of the
    columns against the rest.
    """
    columns = [str(c) for c in columns]
    if len(columns) < 2:
        raise ParameterError("Linkability needs at least two attribute columns.")
    if how == "random_split":
        rng = np.random.default_rng(check_seed_sequence(random_state))
        perm = [columns[i] for i in rng.permutation(len(columns))]
        half = (len(perm) + 1) // 2
        return tuple(sorted(perm[:half], key=columns.index)), \
            tuple(sorted(perm[half:], key=columns.index))
    if how != "cut_largest_group":
        raise ParameterError(f"Invalid split {how!r}: 'cut_largest_group' or 'random_split'.")
    if grouping is None:
        grouping = Grouping.singletons(columns)
    groups = [[c for c in g if c in columns] for g in grouping.groups]
    groups = [g for g in groups if g]
    largest = max(range(len(groups)), key=lambda i: (len(groups[i]), -i))
    lead = groups[largest]
    cut = (len(lead) + 1) // 2
    a, b = list(lead[:cut]), list(lead[cut:])
    rest = sorted((g for i, g in enumerate(groups) if i != largest), key=len, reverse=True)
    for g in rest:
        (a if len(a) < len(b) else b).extend(g)
    return tuple(sorted(a, key=columns.index)), tuple(sorted(b, key=columns.index))


def linkability_attack(t: AttackTables, aux: tuple[Sequence[str], Sequence[str]], n_attacks: int,
                 seed: np.random.SeedSequence, variant: str | None) -> AttackRisk:
    ia, ib = t.index(aux[0]), t.index(aux[1])
    if not len(ia) or not len(ib) or set(ia) & set(ib):
        raise ParameterError("Linkability needs two non-empty, disjoint column sets.")
    s = seed.spawn(5)
    n_rel = t.released.shape[0]
    n = min(n_attacks, t.train.shape[0], t.control.shape[0])
    counts = []
    for table, (s_tgt, s_tie) in ((t.train, s[0:2]), (t.control, s[2:4])):
        rows = table[targets(table.shape[0], n, np.random.default_rng(s_tgt))]
        tie = np.random.default_rng(s_tie)
        near_a = nearest(rows[:, ia], t.released[:, ia], t.numeric[ia], t.has_missing[ia],
                          tie)
        near_b = nearest(rows[:, ib], t.released[:, ib], t.numeric[ib], t.has_missing[ib],
                          tie)
        counts.append(int(np.sum(near_a == near_b)))
    base = np.random.default_rng(s[4]).integers(0, n_rel, size=(2, n))
    return result("linkability", n, counts[0], counts[1], int(np.sum(base[0] == base[1])),
                   variant=variant, aux_columns=(tuple(aux[0]), tuple(aux[1])),
                   note=sampled_note(t, n))


def linkability_risk(original: pd.DataFrame, released: pd.DataFrame,
                     control: pd.DataFrame, *, aux_columns: tuple[Sequence[str],
                                                                 Sequence[str]],
                     n_attacks: int = 200, random_state: object = None) -> AttackRisk:
    """Linkability risk of ``released`` (Giomi et al. 2023, Sec. 4.2).

    For each of ``n_attacks`` targets sampled from ``original`` (the rows the release was
    made from) the attacker finds the nearest released row on ``aux_columns[0]`` and on
    ``aux_columns[1]``; the attack succeeds when it is the same row (one neighbour). The
    same attack on as many rows of ``control`` (not released) gives the control rate.

    Parameters
    ----------
    original, released, control : DataFrame
        Training table, release, and rows of the same population not released.
    aux_columns : (columns, columns)
        The attacker's two disjoint column sets (see :func:`linkability_split`).
    n_attacks : int, default 200
        Targets on each side (fewer if a table is smaller).
    random_state : None, int, SeedSequence or Generator

    Returns
    -------
    AttackRisk
    """
    n_attacks = check_attack_count(n_attacks)
    t = AttackTables.encode(original, released, control)
    return linkability_attack(t, aux_columns, n_attacks, check_seed_sequence(random_state), None)

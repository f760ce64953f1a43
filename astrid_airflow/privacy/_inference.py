"""The inference attack (Giomi et al. 2023, Sec. 4.3): guess a secret column from the
released row nearest on the known columns, on encoded tables (:func:`inference_attack`)
and on DataFrames (:func:`inference_risk`); :data:`TOLERANCE` of a numeric guess.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from astrid_airflow._errors import ParameterError
from astrid_airflow._validation import check_attack_count, check_seed_sequence

from ._attack_tables import AttackTables, nearest, sampled_note, targets
from ._attacks import AttackRisk, result

#: Relative tolerance of a numeric inference guess (anonymeter's default).
TOLERANCE = 0.05


def inference_attack(t: AttackTables, secret: str, aux: Sequence[str], n_attacks: int,
               seed: np.random.SeedSequence, variant: str | None,
               tolerance: float = TOLERANCE) -> AttackRisk:
    (js,) = t.index([secret])
    ia = t.index(aux)
    if not len(ia) or js in set(ia):
        raise ParameterError(f"Inference of {secret!r} needs known columns other than it.")
    s = seed.spawn(5)
    n = min(n_attacks, t.train.shape[0], t.control.shape[0])

    def hits(guess: np.ndarray, truth: np.ndarray) -> np.ndarray:
        both_missing = np.isnan(guess) & np.isnan(truth) if t.numeric[js] else \
            (guess < 0) & (truth < 0)
        if t.numeric[js]:
            with np.errstate(invalid="ignore"):
                ok = np.abs(guess - truth) <= tolerance * np.abs(guess)
        else:
            ok = (guess == truth) & (guess >= 0)
        return ok | both_missing

    counts = []
    for table, (s_tgt, s_tie) in ((t.train, s[0:2]), (t.control, s[2:4])):
        rows = table[targets(table.shape[0], n, np.random.default_rng(s_tgt))]
        near = nearest(rows[:, ia], t.released[:, ia], t.numeric[ia], t.has_missing[ia],
                        np.random.default_rng(s_tie))
        counts.append(int(np.sum(hits(t.released[near, js], rows[:, js]))))
    base_rows = t.train[targets(t.train.shape[0], n, np.random.default_rng(s[0]))]
    guess = t.released[np.random.default_rng(s[4]).integers(0, t.released.shape[0], n), js]
    base = int(np.sum(hits(guess, base_rows[:, js])))
    return result("inference", n, counts[0], counts[1], base, secret=secret,
                   variant=variant, aux_columns=tuple(aux), note=sampled_note(t, n))


def inference_risk(original: pd.DataFrame, released: pd.DataFrame, control: pd.DataFrame,
                   *, secret: str, aux_columns: Sequence[str], n_attacks: int = 200,
                   tolerance: float = TOLERANCE, random_state: object = None) -> AttackRisk:
    """Inference risk of ``secret`` given ``aux_columns`` (Giomi et al. 2023, Sec. 4.3).

    For each target the attacker takes the released row nearest on ``aux_columns`` and
    guesses its ``secret``. A numeric guess is right when ``|guess - secret| <=
    tolerance * |guess|``; any other secret must be equal (two missing values match).

    Parameters
    ----------
    original, released, control : DataFrame
        Training table, release, and rows of the same population not released.
    secret : str
        The column to guess.
    aux_columns : sequence of str
        The columns the attacker knows.
    n_attacks : int, default 200
    tolerance : float, default 0.05
    random_state : None, int, SeedSequence or Generator

    Returns
    -------
    AttackRisk
    """
    n_attacks = check_attack_count(n_attacks)
    if not (isinstance(tolerance, (int, float)) and 0 <= tolerance < 1):
        raise ParameterError(f"Invalid tolerance: {tolerance!r}. Must be in [0, 1).")
    t = AttackTables.encode(original, released, control)
    return inference_attack(t, secret, list(aux_columns), n_attacks,
                      check_seed_sequence(random_state), None, float(tolerance))

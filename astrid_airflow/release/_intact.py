"""Intact rows by construction: a release never publishes more intact rows than its
policy allows.

The intact-row proportion (the paper's P_anon, :func:`~._metrics.intact_row_proportion`)
is the share of the published original's distinct rows that occur unchanged in the
surrogate. On coarsened values a uniform GoldenEye draw sometimes lands a few rows over
the policy's ``max_intact`` by chance (diabetes, a batch of 384 rows: 4 rows, 0.0106 >
0.01, one seed in seven), and a scheduled release would fail for nothing its user did.

After the group permutations are drawn, :func:`break_intact_rows` counts the intact
rows exactly (on the published values' codes, missing = a value) and, while the
distinct original rows hit exceed ``floor(max_intact * distinct)``, breaks the excess:
for each output row of a hit chosen to break, one group's part is swapped with that of
another output row of the same class (random partner and group, from a stream derived
from the copy's seed, so the result is deterministic for the seed). Of the proposals
drawn for a row, the first whose two new rows are both not intact is made, so no round
adds an intact row (a blind swap on coarse values often lands on another intact tuple,
and on some batches never converged). A swap within class
keeps every class's multiset of every group's tuples and the alignment of each group's
columns: the output is still a GoldenEye surrogate; only its distribution is
conditioned away from draws with too many intact rows (docs/privacy.md). The number of
swaps is recorded. When no number of rounds reaches the budget (values so coarse that
most rows are intact), the shuffle refuses the batch (:meth:`IntactSwaps.check_budget`):
nothing is published.

Under a declared attacker model only the rows that disclose someone count
(:func:`disclosing_rows`): a profile of the quasi-identifiers and the class that at
least k people share, across at least two classes, names no one when it reappears. The
budget's denominator stays the original's distinct rows, and every intact row is still
counted and recorded beside (``all_intact_rows``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import IntactBudgetError

from ._suppression import class_codes, combine_codes, group_codes

#: Rounds of swaps tried before giving up (the shuffle then refuses the batch).
MAX_ROUNDS = 20
#: Swaps proposed per output row to break, per round: the first whose two new rows are
#: both not intact is made (a blind swap lands on another intact tuple as often as the
#: values are coarse, and on credit-a's coarsened singletons it did not converge).
PROPOSALS = 16
#: The spawn key that separates the swap stream from the copy's other children.
_SWAP_KEY = 0x1A7AC7


@dataclass(frozen=True)
class IntactSwaps:
    """What :func:`break_intact_rows` did to one copy."""

    swaps: int
    intact_rows: int
    allowed: int
    distinct_rows: int
    #: Every distinct original row found intact, counted or not (None: all count).
    all_intact_rows: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"swaps": self.swaps, "intact_rows": self.intact_rows,
               "allowed_intact_rows": self.allowed, "distinct_rows": self.distinct_rows}
        if self.all_intact_rows is not None:  # a declared model: what was counted
            out.update(counted="rows that disclose someone (rare on the "
                       "quasi-identifiers and the class)",
                       all_intact_rows=self.all_intact_rows)
        return out

    def check_budget(self) -> None:
        """Refuse a copy whose intact rows the swaps could not bring within the budget:
        the shuffle never publishes more than its policy allows (the gate would refuse
        it later, after the file was written)."""
        if self.intact_rows > self.allowed:
            rare = "" if self.all_intact_rows is None else " rare (disclosing)"
            raise IntactBudgetError(
                f"This batch's surrogate would keep {self.intact_rows}{rare} of its "
                f"{self.distinct_rows} distinct rows intact, more than the {self.allowed} "
                f"the policy's max_intact allows, even after {MAX_ROUNDS} rounds of "
                "within-class swaps: the release's values are too coarse for this batch "
                "(most rows share a few tuples). Nothing is published; learn on more data "
                "or choose a finer release.")


def intact_budget(value: float | None, artefact: Any = None) -> float:
    """``max_intact``: ``value``, else that of the policy the artefact's release was
    chosen for, else the gate's default (0.01)."""
    if value is None:
        value = _release_policy(artefact).get("max_intact", 0.01)
    return float(value)


def _release_policy(artefact: Any) -> dict[str, Any]:
    """The policy (as a dict) the artefact's release was chosen for; empty if none."""
    return (getattr(artefact, "release", None) or {}).get("policy") or {}


def disclosing_rows(table: Any, target: str, model: Any, k: int) -> np.ndarray | None:
    """Which rows of ``table`` (the published original) disclose someone when a release
    keeps them intact, under a declared attacker ``model``: those whose quasi-identifier
    projection (every quasi-identifier of the table, missing = a value) and class fewer
    than ``k`` rows share, or whose projection rows of one class only share (it gives
    the class away). None when no model is declared: every distinct row counts, the
    paper's P_anon, so an undeclared release is the same bytes as before.

    >>> import pandas as pd
    >>> from ._attacker_model import AttackerModel
    >>> t = pd.DataFrame({"age": [30] * 6 + [40, 50], "y": [0, 1] * 3 + [0, 0]})
    >>> disclosing_rows(t, "y", AttackerModel(quasi_identifiers=("age",)), 3).tolist()
    [False, False, False, False, False, False, True, True]
    """
    if model is None or not model.declared:
        return None
    columns = list(table.columns) if isinstance(table, pd.DataFrame) else \
        list(table.column_names)
    n = len(table) if isinstance(table, pd.DataFrame) else table.num_rows
    known = [c for c in columns if c != target and model.is_key(c)]
    if not known:  # the attacker knows nothing to find anyone's row by
        return np.zeros(n, dtype=bool)
    projection = group_codes(table, known)[0]
    with_class = combine_codes([projection, class_codes(table, target)], n)
    pair_rows = np.bincount(with_class)
    first = np.unique(with_class, return_index=True)[1]  # one row of each pair
    classes = np.bincount(projection[first], minlength=int(projection.max()) + 1)
    return (pair_rows[with_class] < k) | (classes[projection] < 2)


def counted_rows(table: Any, target: str, artefact: Any) -> np.ndarray | None:
    """:func:`disclosing_rows` under the model and ``disclosure_k`` the artefact's
    release was chosen for (None: no model declared, every row counts)."""
    from ._attacker_model import release_attacker_model

    return disclosing_rows(table, target, release_attacker_model(artefact),
                           int(_release_policy(artefact).get("disclosure_k", 5)))


def _swap_seed(seed: np.random.SeedSequence) -> np.random.SeedSequence:
    return np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, _SWAP_KEY))


def break_intact_rows(table: Any, groups: Sequence[Sequence[str]], target: str,
                      released: tuple[np.ndarray, np.ndarray], max_intact: float,
                      seed: np.random.SeedSequence, counted: np.ndarray | None = None
                      ) -> tuple[tuple[np.ndarray, np.ndarray], IntactSwaps]:
    """``((rows, perms), IntactSwaps)``: ``released`` with intact rows over the budget
    broken by within-class swaps of one group's part (a new ``perms``; the drawn one is
    returned unchanged when no swap is needed, or when no number of rounds reaches the
    budget: values so coarse that most rows are intact, which the shuffle then refuses,
    :meth:`IntactSwaps.check_budget`).

    A swap is made only when neither of the two rows it changes becomes intact, so the
    count of intact rows never rises from one round to the next.

    ``table`` is the published original (recipe and suppression applied), pandas or
    Arrow; ``released`` is :func:`~astrid_airflow.engine.release_permutations`' output;
    ``counted`` (:func:`disclosing_rows`) marks the original rows whose intact copies
    count (None: every row's).
    """
    rows, drawn = released
    perms = drawn.copy()
    n = int(rows.shape[0])
    # int32 (a code is below the row count): these are held through every round
    small = np.int32 if n < 2 ** 31 else np.int64
    codes = [class_codes(table, target).astype(small)] + \
        [group_codes(table, cols)[0].astype(small) for cols in groups]
    original = combine_codes(codes, n)
    distinct = int(np.unique(original).size)
    allowed = math.floor(max_intact * distinct + 1e-9)
    swapper = _Swapper(codes, rows, np.random.default_rng(_swap_seed(seed)), counted)
    swaps = drawn_hits = 0
    drawn_all: int | None = None
    for made in range(MAX_ROUNDS + 1):  # the draw's count, then one after each round
        key, hit, intact = _intact(codes, rows, perms, counted)
        hits = np.unique(key[hit])
        if made == 0:
            drawn_hits, drawn_all = hits.size, _distinct(key, intact, counted)
        if hits.size <= allowed:
            return (rows, perms), IntactSwaps(
                swaps=swaps, intact_rows=int(hits.size), allowed=allowed,
                distinct_rows=distinct, all_intact_rows=_distinct(key, intact, counted))
        if made < MAX_ROUNDS:
            swaps += swapper.round(perms, key, hit, hits, hits.size - allowed)
    # out of reach on these values: keep the uniform draw (the shuffle refuses it)
    return (rows, drawn), IntactSwaps(
        swaps=0, intact_rows=int(drawn_hits), allowed=allowed, distinct_rows=distinct,
        all_intact_rows=drawn_all)


def _distinct(key: np.ndarray, intact: np.ndarray, counted: np.ndarray | None
              ) -> int | None:
    """How many distinct original rows are intact at all (None when every row counts:
    the hits are those)."""
    return None if counted is None else int(np.unique(key[intact]).size)


class _Swapper:
    """One round of swaps: break the output rows of the ``excess`` hits matched by the
    fewest output rows (in a random order among equals)."""

    def __init__(self, codes: list[np.ndarray], rows: np.ndarray,
                 rng: np.random.Generator, counted: np.ndarray | None = None) -> None:
        self.codes, self.rows, self.rng, self.counted = codes, rows, rng, counted
        out_class = codes[0][rows]
        self.out_class = out_class
        self.order_c = np.argsort(out_class, kind="stable")
        self.starts = np.searchsorted(out_class[self.order_c],
                                      np.arange(int(out_class.max()) + 2))

    def round(self, perms: np.ndarray, key: np.ndarray, hit: np.ndarray,
              hits: np.ndarray, excess: int) -> int:
        """Make this round's swaps in ``perms``; return how many."""
        order = self.rng.permutation(hits.size)
        per_hit = np.bincount(np.searchsorted(hits, key[hit]), minlength=hits.size)
        chosen = hits[order[np.argsort(per_hit[order], kind="stable")[:excess]]]
        targets = np.flatnonzero(hit & np.isin(key, chosen))
        j, partner, swap = self._proposals(targets, len(perms))
        ok = np.flatnonzero(self._both_broken(perms, j, partner, swap))
        used = np.zeros(perms.shape[1], dtype=bool)
        made = 0
        for i in ok:  # one swap per row per round: each was judged on the rows as they are
            a, b = j[i], partner[i]
            if used[a] or used[b]:
                continue
            used[a] = used[b] = True
            groups = swap[:, i]
            perms[groups, a], perms[groups, b] = perms[groups, b], perms[groups, a]
            made += 1
        return made

    def _proposals(self, targets: np.ndarray, n_groups: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """PROPOSALS (row, partner of its class, groups to swap) per target: the groups
        are one at random, or (every other proposal) each with probability 1/2, because
        on dense values every one-group neighbour of a row can be another intact row."""
        j = np.repeat(targets, PROPOSALS)
        c = self.out_class[j]
        size = self.starts[c + 1] - self.starts[c]
        partner = self.order_c[self.starts[c] + (self.rng.random(j.size) * size)
                               .astype(np.int64)]
        one = np.arange(n_groups)[:, None] == self.rng.integers(n_groups, size=j.size)
        several = self.rng.random((n_groups, j.size)) < 0.5
        swap = np.where(np.arange(j.size) % 2 == 0, one, one | several)
        keep = partner != j
        return j[keep], partner[keep], swap[:, keep]

    def _both_broken(self, perms: np.ndarray, j: np.ndarray, partner: np.ndarray,
                     swap: np.ndarray) -> np.ndarray:
        """Whether the swap leaves neither of its two rows intact (a counted row)."""
        n, m = self.rows.size, j.size

        def column(k: int, c: np.ndarray) -> np.ndarray:
            if k < 0:  # the class: a swap within class keeps it
                return np.concatenate([c, c[self.rows[j]], c[self.rows[partner]]])
            mine, theirs = perms[k, j], perms[k, partner]
            return np.concatenate([c, c[np.where(swap[k], theirs, mine)],
                                   c[np.where(swap[k], mine, theirs)]])

        keys = combine_codes((column(k, c) for k, c in enumerate(self.codes, start=-1)),
                             n + 2 * m)
        watched = keys[:n] if self.counted is None else keys[:n][self.counted]
        intact = np.isin(keys[n:], watched)
        return ~intact[:m] & ~intact[m:]


def _intact(codes: list[np.ndarray], rows: np.ndarray, perms: np.ndarray,
            counted: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes of the output rows in the original's numbering, which are intact copies of
    a counted original row, and which are intact at all."""
    n = rows.shape[0]
    # one group's original and output codes at a time, folded (not all groups' at once)
    gathered = (np.concatenate([c, c[rows] if g < 0 else c[perms[g]]])
                for g, c in enumerate(codes, start=-1))
    both = combine_codes(gathered, 2 * n)
    key_o, key_s = both[:n], both[n:]
    intact = np.isin(key_s, key_o)
    return key_s, intact if counted is None else np.isin(key_s, key_o[counted]), intact

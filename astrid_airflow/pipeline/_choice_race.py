"""The race of the release choice: the most accurate candidate that passes, with its
rivals scored only until they are certainly less accurate.

Every candidate is first scored on the policy's fewest utility splits (its screening
accuracy). :func:`race` then takes the candidates no check has refused, best screening
accuracy first, and completes each on every split against the incumbent (the most
accurate candidate so far that passed everything): a candidate whose accuracy drop is
certain to exceed the incumbent's stops there, outranked. One that completes more
accurate than the incumbent is admitted (the calibrated batch check, then the attacks)
and, passing, becomes the incumbent. The release is the last incumbent: the candidate
of highest accuracy (ties: the first measured) among those that pass every check, as
scoring every candidate on every split would choose, unless a sequential stop errs
(``release._utility.drop_certainly_above``: 1e-4 a look).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Candidate = dict[str, Any]


def race(cands: Sequence[Candidate],
         complete: Callable[[Candidate, Candidate | None], bool],
         admit: Callable[[Candidate], bool]) -> Candidate | None:
    """The most accurate candidate of ``cands`` that passes every check, or None.

    ``complete(c, incumbent)`` scores ``c`` on every split, stopping once it is certainly
    less accurate than ``incumbent`` (False then, or when ``c`` fails the utility check);
    ``admit(c)`` runs the checks left (batches, attacks) and says whether ``c`` passed
    them. Candidates with a failed check are not raced; ties go to the earlier one.
    """
    rank = {id(c): i for i, c in enumerate(cands)}

    def key(c: Candidate) -> tuple[float, int]:
        return float(c["accuracy_surrogate"]), -rank[id(c)]

    incumbent: Candidate | None = None
    for c in sorted((c for c in cands if not c["failed"]), key=key, reverse=True):
        if not complete(c, incumbent) or c["failed"]:
            continue
        if incumbent is not None and key(c) <= key(incumbent):
            continue
        if admit(c):
            incumbent = c
    return incumbent

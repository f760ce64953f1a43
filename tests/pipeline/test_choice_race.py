"""The race of the release choice (``pipeline._choice_race``, issue 50).

Every candidate is screened on the policy's fewest utility splits; the race completes
the open ones best first against the incumbent and stops a rival once it is certainly
less accurate. The invariant: the release is the candidate of highest accuracy (ties:
the first) among those passing every check, as a full scoring of every candidate
chooses; only candidates that can no longer win are left with fewer splits.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from astrid_airflow import astrid, choose_release, surrogate_utility
from astrid_airflow.pipeline import _choice
from astrid_airflow.pipeline._choice_race import race


@st.composite
def candidates(draw):
    out = []
    for i in range(draw(st.integers(0, 10))):
        full = draw(st.sampled_from([0.6, 0.7, 0.75, 0.8]))
        out.append({"label": f"c{i}", "failed": draw(st.sampled_from([[], [], ["suppression"]])),
                    "accuracy_surrogate": draw(st.sampled_from([0.6, 0.7, 0.75, 0.8])),
                    "_full": full, "_utility_fails": draw(st.booleans()),
                    "_admits": draw(st.booleans())})
    return out


@settings(max_examples=400, deadline=None)
@given(candidates())
def test_the_race_chooses_what_a_full_scoring_chooses(cands):
    """``complete`` stands for a sequential stop that never errs: it stops a candidate
    (partly scored) exactly when its full accuracy is below the incumbent's."""
    admitted: list[str] = []

    def complete(c, incumbent):
        if incumbent is not None and c["_full"] < incumbent["accuracy_surrogate"]:
            c["outranked_by"] = incumbent["label"]
            return False
        c["accuracy_surrogate"] = c["_full"]
        if c["_utility_fails"]:
            c["failed"] = ["utility"]
        return not c["_utility_fails"]

    def admit(c):
        assert c["label"] not in admitted  # each candidate checked once
        admitted.append(c["label"])
        if not c["_admits"]:
            c["failed"] = ["inference"]
        return c["_admits"]

    contenders = [c for c in cands if not c["failed"] and not c["_utility_fails"]]
    open_ = [(i, c) for i, c in enumerate(cands) if c in contenders and c["_admits"]]
    expected = max(open_, key=lambda ic: (ic[1]["_full"], -ic[0]), default=(None, None))[1]
    chosen = race(cands, complete, admit)
    assert (chosen is None and expected is None) or chosen["label"] == expected["label"]
    # what a full scoring would check before finding the release, the race checks too
    if expected is not None:
        better = {c["label"] for c in contenders if c["_full"] > expected["_full"]}
        assert better <= set(admitted)
    # an outranked candidate could not have been the release
    for c in cands:
        if c.get("outranked_by"):
            assert chosen is not None and c["_full"] < chosen["_full"]


def _xor_table(rows: int = 600) -> pd.DataFrame:
    """The class is a noisy XOR of a and b (an interaction the learned grouping keeps
    and all singletons lose), beside noise columns."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, size=(rows, 4))
    y = (x[:, 0] ^ x[:, 1]) ^ (rng.random(rows) < 0.25)
    noise = {f"n{j}": rng.integers(0, 3, size=rows) for j in range(6)}
    return pd.DataFrame({"a": x[:, 0], "b": x[:, 1], **noise,
                         "class": np.where(y, "yes", "no")})


@pytest.fixture(scope="module")
def xor_choice():
    table = _xor_table()
    result = astrid(table, target="class", random_state=0, n_search=10, n_test=40)
    return table, result, choose_release(table, result, random_state=0, progress=False)


def test_a_rival_certainly_less_accurate_than_the_release_stops_early(xor_choice):
    _, _, art = xor_choice
    rel = art.release
    assert rel["status"] == "chosen"
    chosen = rel["candidates"][rel["chosen"]]
    outranked = [c for c in rel["candidates"] if c.get("outranked_by")]
    assert outranked, [c["label"] for c in rel["candidates"]]
    full = max(c["utility_splits"] for c in rel["candidates"])
    for c in outranked:
        assert c["utility_splits"] < full and not c["failed"]
        assert c["accuracy_surrogate"] < chosen["accuracy_surrogate"]
        assert not c["attacked"]


def test_the_release_is_the_one_a_full_scoring_chooses(xor_choice, monkeypatch):
    table, result, art = xor_choice

    def exhaustive(cands, complete, admit):  # every open candidate on every split
        for c in cands:
            if not c["failed"]:
                complete(c, None)
        best = sorted((c for c in cands if not c["failed"]),
                      key=lambda c: -c["accuracy_surrogate"])
        return next((c for c in best if admit(c)), None)

    monkeypatch.setattr(_choice, "race", exhaustive)
    full = choose_release(table, result, random_state=0, progress=False).release
    rel = art.release
    assert full["status"] == rel["status"] == "chosen"
    assert full["candidates"][full["chosen"]]["label"] == \
        rel["candidates"][rel["chosen"]]["label"]
    assert full["recipe"] == rel["recipe"] and full["utility"] == rel["utility"]
    assert not any(c.get("outranked_by") for c in full["candidates"])


def test_continuing_a_scoring_gives_the_figures_of_one_call():
    table = _xor_table(300)
    grouping = [["a", "b"], *[[f"n{j}"] for j in range(6)]]
    once = surrogate_utility(table, grouping, target="class", random_state=3, n_repeats=6)
    kept: list = []
    first = surrogate_utility(table, grouping, target="class", random_state=3, n_repeats=6,
                              _scored=kept, _upto=2)
    assert first.n_repeats == 2 and len(kept) == 2
    rest = surrogate_utility(table, grouping, target="class", random_state=3, n_repeats=6,
                             _scored=kept)
    assert rest.n_repeats == 6 and len(kept) == 6
    assert rest.to_dict() == once.to_dict()

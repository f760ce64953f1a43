"""The coarser retries' bases, with the privacy-refused candidates scored on the fewest
utility splits and completed only where their accuracy can rank them.

The release choice scores a candidate a privacy check refused on the policy's fewest
splits (it only informs the report), and completes that score on every split only for
the candidates that may become the bases of the coarser retries (``retry_bases``). The
invariant: whatever the candidates' batch excesses, accuracies and utility verdicts,
the bases are the ones a full scoring of every candidate gives (so the retries, and the
release chosen among them, are unchanged).
"""

from __future__ import annotations

import contextlib
import types

from hypothesis import given, settings
from hypothesis import strategies as st

from astrid_airflow.pipeline._choice import COARSER_RETRIES, _Choice, _retry_order
from astrid_airflow.pipeline._choice_checks import BATCH_REFUSAL_RATE

REPEATS, FEWEST = 8, 3


@st.composite
def candidates(draw):
    out = []
    for i in range(draw(st.integers(0, 12))):
        failed = draw(st.sampled_from([["suppression"], ["suppression"], ["inference"],
                                       ["singling_out"], ["share_below_k"], []]))
        full_utility = draw(st.booleans())
        short_utility = draw(st.booleans())
        full_acc = draw(st.sampled_from([0.6, 0.7, 0.8]))
        # a candidate refused before its scoring gets the fewest splits; one refused by
        # the attacks (after a full scoring) has every split already
        scored_short = failed in (["suppression"], ["share_below_k"])
        c = {"label": f"c{i}", "method": draw(st.sampled_from(["bins", "bins", "mdav"])),
             "risks": {"batch_over_budget": BATCH_REFUSAL_RATE + draw(
                 st.sampled_from([0.0, 0.1, 0.4]))},
             "_full": (full_acc, full_utility)}
        acc, util = (draw(st.sampled_from([0.6, 0.7, 0.8])), short_utility) \
            if scored_short else (full_acc, full_utility)
        c.update(failed=[*failed, "utility"] if util else list(failed),
                 accuracy_surrogate=acc, _planned_splits=FEWEST if scored_short else REPEATS)
        out.append(c)
    return out


def _fully_scored(c):
    acc, util = c["_full"]
    failed = [f for f in c["failed"] if f != "utility"]
    return {**c, "accuracy_surrogate": acc, "failed": [*failed, "utility"] if util else failed}


def _stub():
    def score(c, n_repeats):
        assert n_repeats == REPEATS
        c.update(_fully_scored(c), _planned_splits=REPEATS)
        completed.append(c["label"])

    completed: list[str] = []
    steps = types.SimpleNamespace(step=lambda *a, **kw: contextlib.nullcontext())
    return types.SimpleNamespace(repeats=REPEATS, score=score, steps=steps), completed


@settings(max_examples=300, deadline=None)
@given(candidates())
def test_the_bases_are_those_of_a_full_scoring(cands):
    full = [_fully_scored(c) for c in cands]
    expected = sorted((c for c in full if c["method"] == "bins" and c["failed"]
                       and set(c["failed"]) <= {"singling_out", "linkability", "inference",
                                                "suppression"}),
                      key=_retry_order)[:COARSER_RETRIES]
    short = {c["label"] for c in cands if c["_planned_splits"] == FEWEST}
    stub, completed = _stub()
    bases = _Choice.retry_bases(stub, cands)
    assert set(completed) <= short and len(completed) == len(set(completed))
    assert [c["label"] for c in bases] == [c["label"] for c in expected]
    assert [c["accuracy_surrogate"] for c in bases] == \
        [c["accuracy_surrogate"] for c in expected]


def test_only_the_candidates_that_may_rank_are_completed():
    """Three suppression-only candidates at the smallest batch excess settle the bases:
    the fourth, with a larger excess, keeps its fewest splits."""
    def cand(i, excess):
        return {"label": f"c{i}", "method": "bins", "failed": ["suppression"],
                "risks": {"batch_over_budget": BATCH_REFUSAL_RATE + excess},
                "accuracy_surrogate": 0.7, "_planned_splits": FEWEST, "_full": (0.7, False)}

    cands = [cand(0, 0.1), cand(1, 0.1), cand(2, 0.4), cand(3, 0.1)]
    stub, completed = _stub()
    bases = _Choice.retry_bases(stub, cands)
    assert sorted(completed) == ["c0", "c1", "c3"]
    assert {c["label"] for c in bases} == {"c0", "c1", "c3"}
    assert cands[2]["_planned_splits"] == FEWEST

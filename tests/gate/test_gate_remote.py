"""The gate on a remote store judges as the gate on the artefact in hand (issue 30).

``validate_surrogate(..., fs=...)`` (what ``SurrogateGateOperator`` calls on S3/GCS)
used to call itself again without ``remedies``: a raw release (``remedies=False``) was
judged against the *remedied* original and failed integrity. The store here is fsspec's
``memory://`` filesystem given as ``fs`` (helper tests against a real S3-compatible
server live with the publish tests). Each pair of gates (remote, in hand) computes the
shadow attacks once for equal inputs (``tests/gate/gate_work.py``): a remote call that
passed other inputs would compute, and judge, its own.
"""

from __future__ import annotations

import dataclasses
import inspect
import uuid

import numpy as np
import pandas as pd
import pytest
from fsspec.implementations.memory import MemoryFileSystem
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astrid_airflow import (
    Grouping,
    GroupingArtefact,
    fit_recipe,
    make_surrogate,
    validate_surrogate,
)
from astrid_airflow.release._store import ArtefactStore
from tests.gate.gate_work import shared_gate_work  # noqa: F401 (the module fixture)

pytestmark = [pytest.mark.filterwarnings(
    "ignore::astrid_airflow.release._surrogate.ProtectsNothingWarning"),
    pytest.mark.usefixtures("shared_gate_work")]


INTEGRITY = "expect_surrogate_column_values_to_match_original_per_class"
# precomputed utility: the checks under test are privacy and integrity
SAME = {"accuracy_original": 0.8, "accuracy_surrogate": 0.8}


def _table(n: int = 600, seed: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    cols = {f"x{i}": rng.normal(y * 0.5, 1.0, n).round(4) for i in range(4)}
    return pd.DataFrame({**cols, "y": y})


@pytest.fixture(scope="module")
def remedied_artefact():
    """A table and an artefact whose recorded release carries a recipe."""
    t = _table()
    groups = ";".join(c for c in t.columns if c != "y")
    recipe, _ = fit_recipe(t, target="y", grouping=groups, k=5)
    g = Grouping.parse(groups)
    result = {"grouping": g.to_list(), "k": g.k, "table": [], "target": "y",
              "classifier": "nb", "scoring": "accuracy", "alpha": 0.05, "n_search": 20,
              "n_test": 40, "random_state": 0}
    art = GroupingArtefact.from_result(result, t, created_at="2026-01-01T00:00:00Z")
    art = dataclasses.replace(art, release={"status": "given", "recipe": recipe.to_dict()})
    assert art.recipe is not None and art.recipe.steps  # remedies change the release
    return t, art


@pytest.fixture(scope="module")
def remote(remedied_artefact):
    """The artefact saved in a ``memory://`` store: ``(fs, reference)``."""
    _, art = remedied_artefact
    fs = MemoryFileSystem()
    root = f"memory://gate-{uuid.uuid4().hex[:8]}/store"
    version = ArtefactStore(root, fs=fs).save("rel", art)
    return fs, f"{root}/rel@{version}"


def _verdict(result) -> tuple:
    return (result.success, result.artefact["remedies"],
            tuple((e.name, e.success) for e in result.expectations))


def test_remote_gate_with_remedies_false_judges_the_raw_release(remedied_artefact,
                                                                 remote):
    t, art = remedied_artefact
    fs, ref = remote
    raw = make_surrogate(t, art, random_state=1, remedies=False)
    got = validate_surrogate(t, raw, ref, random_state=0, metrics=SAME, remedies=False,
                             fs=fs)
    assert got.artefact["remedies"] is None  # judged raw, as asked
    assert INTEGRITY not in got.failed  # the raw file is what a raw release publishes
    here = validate_surrogate(t, raw, art, random_state=0, metrics=SAME, remedies=False)
    assert _verdict(got) == _verdict(here)


@settings(max_examples=3, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(remedies=st.booleans(), seed=st.integers(0, 2**16))
def test_remote_gate_judges_as_the_artefact_in_hand(remedied_artefact, remote, remedies,
                                                    seed):
    """Invariant: for any ``remedies`` and seed, giving ``fs`` changes where the
    artefact is read from, never the verdict."""
    t, art = remedied_artefact
    fs, ref = remote
    surrogate = make_surrogate(t, art, random_state=seed, remedies=remedies)
    kwargs = {"random_state": seed, "metrics": SAME, "remedies": remedies}
    got = validate_surrogate(t, surrogate, ref, fs=fs, **kwargs)
    here = validate_surrogate(t, surrogate, art, **kwargs)
    assert _verdict(got) == _verdict(here)
    assert got.random_state == here.random_state == seed


def test_every_gate_argument_reaches_the_remote_call(monkeypatch, remote):
    """The ``fs`` branch forwards each parameter (a new one cannot be dropped again)."""
    import astrid_airflow.gate._gate as gate

    fs, _ = remote
    params = [p for p in inspect.signature(gate.validate_surrogate).parameters
              if p != "fs"]
    seen: dict = {}
    real = gate.validate_surrogate

    def spy(*args, **kwargs):
        if kwargs.get("fs") is None:  # the inner call: record and stop
            seen.update(dict(zip(params, args)), **kwargs)
            return "judged"
        return real(*args, **kwargs)

    monkeypatch.setattr(gate, "validate_surrogate", spy)
    sentinels = {p: object() for p in params}
    assert real(**sentinels, fs=fs) == "judged"
    assert {p: seen.get(p) for p in params} == sentinels

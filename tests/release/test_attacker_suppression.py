"""Local suppression under a declared attacker model (issue 49).

The guarantee: on every batch, every published quasi-identifier projection of a group
tuple holds at least k rows of its class, at least two classes with k rows, and at least
``SENSITIVE_DIVERSITY`` distinct values of every declared sensitive column of the group;
with no declaration, suppression is what it was.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astrid_airflow.release import (
    SENSITIVE_DIVERSITY,
    AttackerModel,
    ReleaseRecipe,
    published_exposure,
    resampled_suppressed_shares,
    suppress_table,
)

COLUMNS = ("a", "b", "c", "d", "e")


@st.composite
def cases(draw):
    n = draw(st.integers(0, 160))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    table = pd.DataFrame({c: rng.integers(0, draw(st.integers(1, 6)), n).astype(float)
                          for c in COLUMNS})
    for c in COLUMNS:  # a few missing values, as a remedied batch has
        table.loc[rng.random(n) < draw(st.sampled_from([0.0, 0.1])), c] = np.nan
    table["y"] = rng.integers(0, draw(st.integers(1, 3)), n)
    roles = draw(st.lists(st.sampled_from(["qi", "sensitive", "insensitive"]),
                          min_size=len(COLUMNS), max_size=len(COLUMNS)))
    model = AttackerModel(
        quasi_identifiers=tuple(c for c, r in zip(COLUMNS, roles) if r == "qi"),
        sensitive=tuple(c for c, r in zip(COLUMNS, roles) if r == "sensitive"))
    order = draw(st.permutations(COLUMNS))
    cuts = sorted(draw(st.sets(st.integers(1, len(COLUMNS) - 1), max_size=3)))
    groups = [list(order[i:j]) for i, j in zip([0, *cuts], [*cuts, len(COLUMNS)])]
    return table, model, groups, draw(st.integers(2, 5))


def _published_projections_hold(out: pd.DataFrame, groups, model, k: int) -> None:
    for cols in groups:
        shown = out[cols].notna().any(axis=1)
        key = model.key_columns(cols)
        frame = out[[*key, "y"]].astype(object).where(out[[*key, "y"]].notna(), "<na>")
        keys = [tuple(r) for r in frame[key].itertuples(index=False)] if key else \
            [()] * len(out)
        by_key: dict = {}
        for i, (kv, _y) in enumerate(zip(keys, out["y"])):
            by_key.setdefault(kv, []).append(i)
        for kv, rows in by_key.items():
            if not shown.iloc[rows].any():
                continue  # nothing of the group is published for these rows
            classes = out["y"].iloc[rows].value_counts()
            for i in rows:
                if shown.iloc[i]:
                    assert classes[out["y"].iloc[i]] >= k, (cols, kv)
            assert (classes >= k).sum() >= 2, (cols, kv)
            for s in model.sensitive_columns(cols):
                values = out[s].iloc[rows].astype(object).where(out[s].iloc[rows].notna(),
                                                                "<na>")
                assert values.nunique() >= SENSITIVE_DIVERSITY, (cols, kv, s)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_published_quasi_identifier_projection_is_k_anonymous_and_diverse(case):
    table, model, groups, k = case
    out, found = suppress_table(table, groups, "y", k, model)
    assert out.shape == table.shape
    _published_projections_hold(out, groups, model, k)
    # what was suppressed is only ever nulled, never changed
    kept = out.notna()
    pd.testing.assert_frame_equal(out.where(kept), table.where(kept), check_dtype=False)
    # and the gate's measure of the published table finds nothing exposed
    for g in published_exposure(out, groups, "y", k, model):
        assert g["exposed_rows"] == 0 and g.get("sensitive_disclosure_share", 0.0) == 0.0
    # the choice's weighted count of a batch of these rows agrees with the shuffle's
    if len(table):
        shares = resampled_suppressed_shares(table, groups, "y", k,
                                             [np.ones(len(table), dtype=int)], model)
        assert shares[0] == pytest.approx(max(g["suppressed_share"] for g in found.groups))


def _mixed(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(2, 9, n) * 10.0,
                         "marker": rng.normal(size=n).round(6),  # unique per person
                         "sex": rng.integers(0, 2, n).astype(float),
                         "y": rng.integers(0, 2, n)})


def test_an_insensitive_measurement_is_published_and_not_suppressed():
    """Every-column-known suppresses the whole group over a unique marker; declaring the
    marker insensitive publishes it next to k-anonymous ages."""
    table, groups = _mixed(), [["age", "marker"], ["sex"]]
    _, default = suppress_table(table, groups, "y", 5)
    assert default.groups[0]["suppressed_share"] > 0.99
    model = AttackerModel(quasi_identifiers=("age", "sex"))
    out, found = suppress_table(table, groups, "y", 5, model)
    assert found.groups[0]["suppressed_share"] == 0.0
    assert out["marker"].equals(table["marker"])


def test_a_sensitive_column_shown_with_one_value_is_suppressed():
    n = 60
    table = pd.DataFrame({"age": [30.0] * (n // 2) + [40.0] * (n // 2),
                          "death": [1.0] * (n // 2) + list(np.arange(n // 2) % 3),
                          "y": np.arange(n) % 2})
    model = AttackerModel(quasi_identifiers=("age",), sensitive=("death",))
    out, _ = suppress_table(table, [["age", "death"]], "y", 5, model)
    assert out.loc[: n // 2 - 1, ["age", "death"]].isna().all().all()  # age 30: death 1
    assert out.loc[n // 2:, ["age", "death"]].notna().all().all()
    _, plain = suppress_table(table, [["age", "death"]], "y", 5,
                              AttackerModel(quasi_identifiers=("age",)))
    assert plain.suppressed_rows == 0  # not declared sensitive: not protected


@given(st.integers(0, 10_000))
@settings(max_examples=25, deadline=None)
def test_no_declaration_suppresses_exactly_as_before(seed):
    table = _mixed(120, seed)
    groups = [["age", "marker"], ["sex"]]
    a, fa = suppress_table(table, groups, "y", 3)
    b, fb = suppress_table(table, groups, "y", 3, AttackerModel())
    pd.testing.assert_frame_equal(a, b)
    assert fa == fb


def test_the_recipe_records_a_declared_model_and_only_then():
    plain = ReleaseRecipe(k=5)
    assert "attacker_model" not in plain.to_dict()
    assert ReleaseRecipe(k=5, attacker_model=AttackerModel()).to_json() == plain.to_json()
    model = AttackerModel(identifiers=("id",), quasi_identifiers=("age",),
                          sensitive=("death",))
    declared = ReleaseRecipe(k=5, attacker_model=model)
    again = ReleaseRecipe.from_json(declared.to_json())
    assert again.attacker_model == model and again == declared
    with_rungs = ReleaseRecipe(k=5, attacker_model=model, fallbacks=(ReleaseRecipe(k=5),),
                               fallback_share=0.05)
    assert all(r.attacker_model == model for r in with_rungs.rungs)


def test_the_recipe_fit_remedies_only_the_quasi_identifiers():
    """A declared model bins age (known) and leaves the marker (not known) as it is;
    with none declared both are coarsened or suppressed."""
    from astrid_airflow import fit_recipe

    table, grouping = _mixed(2_000, 3), "age,marker;sex"
    plain, _ = fit_recipe(table, target="y", grouping=grouping, k=5)
    assert "marker" in plain.columns
    model = AttackerModel(quasi_identifiers=("age", "sex"))
    declared, report = fit_recipe(table, target="y", grouping=grouping, k=5,
                                  attacker_model=model)
    assert "marker" not in declared.columns and declared.attacker_model == model
    assert all(r["passed"] for r in report)
    assert any(model.describe() == n for n in declared.notes)

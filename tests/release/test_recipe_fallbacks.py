"""Issue 28: a batch on which the chosen recipe needs more suppression than the budget in
some group is published with a coarser fallback of the recipe in that group, never
refused while a rung keeps the budget; the shuffle and the gate find the same rungs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astrid_airflow import Grouping, GroupingArtefact, RecipeError, ReleaseRecipe, fit_recipe
from astrid_airflow.release import applied_recipe, release_domain


def _artefact(table: pd.DataFrame, groups: str, recipe: ReleaseRecipe,
              policy: dict | None = None) -> GroupingArtefact:
    g = Grouping.parse(groups)
    result = {"grouping": g.to_list(), "k": g.k, "table": [], "target": "y",
              "classifier": "nb", "scoring": "accuracy", "alpha": 0.05, "n_search": 20,
              "n_test": 40, "random_state": 0}
    art = GroupingArtefact.from_result(result, table, created_at="2026-01-01T00:00:00Z")
    return dataclasses.replace(art, release={"status": "given", "recipe": recipe.to_dict(),
                                             "policy": policy or {"max_intact": 1.0}})


def _round(column: str, step: int) -> dict:
    return {"method": "round", "column": column, "step": step, "low": None, "high": None,
            "published_type": "float"}


@st.composite
def _ladders(draw):
    """A table, a grouping, a batch, and a recipe whose fallbacks round every column to
    ever coarser steps (rung 0: as it is)."""
    n = draw(st.integers(30, 150))
    n_cols = draw(st.integers(2, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    t = pd.DataFrame({f"c{i}": rng.integers(0, draw(st.integers(2, 40)), n).astype(float)
                      for i in range(n_cols)})
    t["y"] = rng.choice(["a", "b", "c"][:draw(st.integers(2, 3))], n)
    names = [c for c in t.columns if c != "y"]
    cut = draw(st.integers(1, len(names)))
    groups = [names[:cut], names[cut:]] if cut < len(names) else [names]
    k = draw(st.integers(2, 5))
    steps = draw(st.lists(st.sampled_from([2, 4, 8, 16, 64]), min_size=1, max_size=3,
                          unique=True))
    fallbacks = tuple(ReleaseRecipe(k=k, steps=tuple(_round(c, s) for c in names),
                                    target="y") for s in sorted(steps))
    recipe = ReleaseRecipe(k=k, steps=(), target="y", fallbacks=fallbacks,
                           fallback_share=draw(st.sampled_from([0.0, 0.05, 0.2, 0.5])))
    batch = t.sample(frac=draw(st.floats(0.3, 1.0)), random_state=int(rng.integers(1e6)))
    return batch.reset_index(drop=True), Grouping(groups), recipe


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ladders())
def test_each_group_takes_the_first_rung_that_keeps_the_budget(drawn):
    batch, grouping, recipe = drawn
    out, found = release_domain(batch, recipe, "y", grouping)
    alone = [release_domain(batch, rung, "y", grouping)[1] for rung in recipe.rungs]
    share = recipe.fallback_share
    for g, group in enumerate(found.groups):
        shares = [a.groups[g]["suppressed_share"] for a in alone]
        kept = [i for i, x in enumerate(shares) if x <= share + 1e-12]
        # the first rung within the budget, else the least suppressed (finest of equals)
        want = kept[0] if kept else int(np.argmin(shares))
        assert group["recipe_rung"] == want
        assert group["suppressed_share"] == shares[want]
    # what the gate records reproduces the published table: the rungs mixed into one
    # recipe, applied as a recipe without fallbacks
    mixed = recipe.mixed(found.recipe_rungs, grouping.groups)
    assert mixed == applied_recipe(batch, recipe, "y", grouping) and not mixed.fallbacks
    again, same = release_domain(batch, mixed, "y", grouping)
    pd.testing.assert_frame_equal(again, out)
    assert [g["suppressed_rows"] for g in same.groups] == \
        [g["suppressed_rows"] for g in found.groups]


def _census_like(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "marital": rng.choice(["married", "single", "divorced", "widowed"], n,
                              p=[0.45, 0.35, 0.15, 0.05]),
        "hours": rng.integers(20, 60, n),
        "age": rng.integers(18, 80, n),
        "y": rng.choice(["<=50K", ">50K"], n)})


def test_a_batch_the_recipe_would_refuse_is_published_with_its_fallback(tmp_path):
    """Fails before: the shuffle refused the batch (SuppressionBudgetError), although a
    coarser recipe of the same release keeps the budget."""
    from astrid_airflow import shuffle_file, validate_surrogate

    t = _census_like()
    groups = "marital,hours;age"
    coarse, _ = fit_recipe(t, target="y", grouping=groups, k=5)
    assert coarse.steps
    # rung 0 publishes every value as it is: most tuples of (marital, hours) are rare
    recipe = ReleaseRecipe(k=5, steps=(), target="y", fallbacks=(coarse,),
                           fallback_share=0.05)
    art = _artefact(t, groups, recipe)
    t.to_parquet(tmp_path / "t.parquet", index=False)
    record: dict = {}
    out = shuffle_file(tmp_path / "t.parquet", art, tmp_path / "s.parquet", random_state=1,
                       record=record)
    rungs = [g["recipe_rung"] for g in record["suppression"]["groups"]]
    assert rungs == [1, 1] and record["suppression"]["recipe_rung"] == 1
    assert record["suppression"]["max_suppressed_share"] <= 0.05
    r = validate_surrogate(t, out, art, random_state=0, out_dir=tmp_path)
    integrity = [o for o in r.expectations if o.category == "integrity"]
    assert integrity and all(o.success for o in integrity), [
        (o.name, o.details) for o in integrity if not o.success]
    assert r.artefact["recipe_rungs"] == rungs
    assert r.artefact["remedies"] == recipe.mixed(rungs, art.grouping.groups).to_dict()
    page = open(r.data_docs, encoding="utf-8").read()
    assert "recipe fallbacks" in page and "marital, hours" in page


def test_a_group_no_rung_keeps_within_the_budget_is_still_refused(tmp_path):
    from astrid_airflow import SuppressionBudgetError, shuffle_file

    t = _census_like(200)
    same = ReleaseRecipe(k=5, steps=(_round("hours", 1),), target="y")
    recipe = ReleaseRecipe(k=5, steps=(), target="y", fallbacks=(same,),
                           fallback_share=0.05)
    art = _artefact(t, "marital,hours,age", recipe)
    t.to_parquet(tmp_path / "t.parquet", index=False)
    with pytest.raises(SuppressionBudgetError, match="1 coarser fallback"):
        shuffle_file(tmp_path / "t.parquet", art, tmp_path / "s.parquet", random_state=1)
    assert not (tmp_path / "s.parquet").exists()


def test_fallbacks_round_trip_and_bad_ones_are_refused():
    fb = ReleaseRecipe(k=5, steps=(_round("a", 10),), target="y")
    r = ReleaseRecipe(k=5, steps=(_round("a", 2),), target="y", fallbacks=(fb,),
                      fallback_share=0.05)
    back = ReleaseRecipe.from_json(r.to_json())
    assert back == r and back.rungs[1] == fb and not back.rungs[0].fallbacks
    assert "fallbacks" not in ReleaseRecipe(k=5, target="y").to_dict()  # as before
    bad = [{"fallbacks": [fb.to_dict()]},  # no share
           {"fallbacks": [{**fb.to_dict(), "k": 3}], "fallback_share": 0.05},
           {"fallbacks": [r.to_dict()], "fallback_share": 0.05},  # nested
           {"fallbacks": [fb.to_dict()], "fallback_share": 1.5},
           {"fallbacks": "x", "fallback_share": 0.05}]
    for extra in bad:
        with pytest.raises(RecipeError):
            ReleaseRecipe.from_dict({**ReleaseRecipe(k=5, target="y").to_dict(), **extra})


def test_a_partitioned_releases_fallbacks_need_no_split_alternative():
    """Fails before: a chosen partitioned release's fallbacks (partitioned too, with
    labels of their own) stopped the choice with a KeyError looking up their split (the
    release-scale CLI test's learn, where per-k table k=28 partitioned was chosen)."""
    from astrid_airflow.pipeline._choice_candidates import partition_costs

    split = {"method": "bins", "max_bins": None, "grouping": [["a"], ["b"]],
             "label": "learned, unsafe group(s) split", "accuracy_surrogate": 0.7,
             "accuracy_drop": 0.1, "failed": []}
    chosen = {"method": "partition", "label": "learned, unsafe group(s) partitioned"}
    fallback = {"method": "partition",
                "label": "learned, unsafe group(s) partitioned, fallback for 6k rows per cell"}
    cands = [split, chosen, fallback]
    partition_costs(cands, {chosen["label"]: Grouping([["a"], ["b"]])})
    assert chosen["without_partition"]["label"] == split["label"]
    assert "without_partition" not in fallback


def test_a_recipe_applies_when_a_fallback_remedies_a_column_it_leaves_alone(tmp_path):
    """``apply_recipe`` (and ``astrid generalise``) apply rung 0; a fallback that also
    remedies another column must not make the table look short of it (an arrow table
    is projected on the columns rung 0 changes)."""
    import pyarrow as pa

    from astrid_airflow import apply_recipe
    from astrid_airflow.release import generalise_file

    t = pd.DataFrame({"a": [1.0, 2.0, 3.0, 14.0] * 5, "b": [5.0, 6.0, 17.0, 8.0] * 5,
                      "y": ["p", "q"] * 10})
    recipe = ReleaseRecipe(k=2, steps=(_round("a", 10),), target="y", fallbacks=(
        ReleaseRecipe(k=2, steps=(_round("a", 20), _round("b", 20)), target="y"),),
        fallback_share=0.05)
    expected = apply_recipe(t, recipe.rungs[0])
    assert list(expected["a"]) == [0.0, 0.0, 0.0, 10.0] * 5
    pd.testing.assert_frame_equal(apply_recipe(t, recipe), expected)
    got = apply_recipe(pa.Table.from_pandas(t, preserve_index=False), recipe)
    pd.testing.assert_frame_equal(got.to_pandas(), expected)
    t.to_parquet(tmp_path / "t.parquet", index=False)
    generalise_file(tmp_path / "t.parquet", _artefact(t, "a;b", recipe),
                    tmp_path / "g.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "g.parquet"), expected)

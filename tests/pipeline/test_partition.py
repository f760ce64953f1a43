"""Issue 32: the ``partition`` step, a Mondrian generalisation of a group across classes."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astrid_airflow import RecipeError, ReleaseRecipe, apply_recipe, fit_recipe
from astrid_airflow.pipeline import CUT_RULES, fit_partition
from astrid_airflow.release._partition import partition_cells


def _table(n: int = 400, seed: int = 0, classes: int = 3) -> pd.DataFrame:
    """Continuous columns whose interaction carries the class (a rotated boundary)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    a = rng.normal(y, 1.0)
    return pd.DataFrame({"a": a.round(4), "b": (rng.normal(size=n) - a).round(4),
                         "c": rng.integers(0, 60, n) + 10 * y,
                         "d": rng.choice(["x", "y", "z"], n), "y": y})


def _step(t: pd.DataFrame, k: int = 5, cols=("a", "b", "c", "d")) -> dict:
    return fit_partition(t[list(cols)], t["y"].to_numpy(), k)


def _recipe(step: dict, k: int = 5) -> ReleaseRecipe:
    return ReleaseRecipe(k=k, steps=(step,), target="y")


def _cells_ok(cell: np.ndarray, y: np.ndarray, k: int, m: int | None = None) -> None:
    """Every cell: >= 2 classes, >= k rows, and of every class it holds at least k rows
    (``m``: at least ``min(m, the class's rows)``) unless that class has fewer than k
    rows in the whole table."""
    total = pd.Series(y).value_counts()
    m = k if m is None else m
    for c in np.unique(cell):
        counts = pd.Series(y[cell == c]).value_counts()
        assert len(counts) >= 2, (c, counts.to_dict())
        assert counts.sum() >= k
        assert all(n >= min(m, total[lab]) or total[lab] < k for lab, n in counts.items()), \
            counts.to_dict()


# ----------------------------------------------------------------------------- recipe

def test_partition_recipe_round_trips_and_reapplies_exactly():
    t = _table()
    recipe = _recipe(_step(t))
    back = ReleaseRecipe.from_json(recipe.to_json())
    assert back == recipe and back.to_json() == recipe.to_json()
    a, b = apply_recipe(t, recipe), apply_recipe(t, back)
    pd.testing.assert_frame_equal(a, b)
    assert list(a.dtypes) == list(t.dtypes) and a["y"].equals(t["y"])
    # every published tuple is a cell's representative, one per cell
    cells = {tuple(c) for c in recipe.steps[0]["cells"]}
    assert {tuple(r) for r in a[["a", "b", "c", "d"]].itertuples(index=False)} <= cells


def test_the_fit_is_deterministic_and_a_refit_gives_the_same_bytes():
    t = _table(seed=4)
    assert _recipe(_step(t)).to_json() == _recipe(_step(t.copy())).to_json()


def test_representatives_are_lower_medians_and_modes_of_the_cell():
    # ... when at least k rows of the table have that value (issue 53: never one
    # person's value); else the roundest value of the cell that no row or k rows have,
    # and for a category the most frequent of those k rows have
    t = _table(300, 2)
    step = _step(t)
    cell = partition_cells(t, step)
    for i, rep in enumerate(step["cells"]):
        rows = t[cell == i]
        for col, v in zip(step["columns"], rep):
            whole = t[col].value_counts()
            if col == "d":
                counts = rows[col].value_counts()
                allowed = counts[whole.reindex(counts.index).to_numpy() >= 5]
                assert counts[v] == allowed.max()
            else:
                xs = np.sort(rows[col].to_numpy())
                median = xs[(len(xs) - 1) // 2]
                if whole.get(median, 0) >= 5:
                    assert v == median  # a value the data had
                else:
                    assert (xs[0] <= v <= xs[-1] and whole.get(v, 0) in (0,)) or \
                        whole.get(v, 0) >= 5


def test_reapplication_to_a_new_batch_is_row_by_row():
    t = _table(400, 0)
    recipe = _recipe(_step(t))
    batch = _table(120, 9)
    # values outside the reference's range, a category it never saw, missing values
    batch.loc[0, "a"] = 1e6
    batch.loc[1, "b"] = -1e6
    batch.loc[2, "d"] = "never seen"
    batch["a"] = batch["a"].astype(float)
    batch.loc[3, "a"] = np.nan
    whole = apply_recipe(batch, recipe)
    one_by_one = pd.concat([apply_recipe(batch.iloc[[i]], recipe) for i in range(len(batch))])
    pd.testing.assert_frame_equal(whole, one_by_one)
    cells = {tuple(c) for c in recipe.steps[0]["cells"]}
    published = [tuple(r) for r in whole[["a", "b", "c", "d"]].itertuples(index=False)]
    assert set(published) <= cells
    # the batch's rows land where the tree says: missing and unseen go right
    step = recipe.steps[0]
    root = step["nodes"][0]
    goes_right = partition_cells(batch.iloc[[3]], step)[0]
    assert goes_right in {c for c in _leaves(step, root["right"])} or root["column"] != "a"


def _leaves(step: dict, i: int) -> list[int]:
    node = step["nodes"][i]
    return [node["cell"]] if "cell" in node else \
        _leaves(step, node["left"]) + _leaves(step, node["right"])


def test_pyarrow_and_pandas_give_the_same_values():
    import pyarrow as pa

    t = _table(200, 5)
    recipe = _recipe(_step(t))
    arrow = apply_recipe(pa.Table.from_pandas(t, preserve_index=False), recipe)
    pd.testing.assert_frame_equal(arrow.to_pandas(), apply_recipe(t, recipe),
                                  check_dtype=False)


@pytest.mark.filterwarnings("ignore::astrid_airflow.ProtectsNothingWarning")
def test_a_released_file_is_the_same_bytes_for_a_seed(tmp_path):
    from astrid_airflow import GroupingArtefact, shuffle_file

    t = _table(400, 1)
    recipe, report = fit_recipe(t, target="y", grouping="a,b,c,d", k=5,
                                method="partition")
    assert any(s["method"] == "partition" for s in recipe.steps), report
    result = {"grouping": [["a", "b", "c", "d"]], "k": 1, "table": [], "target": "y",
              "classifier": "nb", "scoring": "accuracy", "alpha": 0.05, "n_search": 20,
              "n_test": 40, "random_state": 0}
    # one group: every output row is an original one, which the shuffle refuses at the
    # default max_intact; this test is about the bytes
    art = dataclasses.replace(
        GroupingArtefact.from_result(result, t, created_at="2026-01-01T00:00:00Z"),
        release={"status": "given", "recipe": recipe.to_dict(),
                 "policy": {"max_intact": 1.0}})
    src = tmp_path / "t.parquet"
    t.to_parquet(src, index=False)
    a = shuffle_file(src, art, tmp_path / "a.parquet", random_state=7)
    b = shuffle_file(src, art, tmp_path / "b.parquet", random_state=7)
    assert open(a, "rb").read() == open(b, "rb").read()
    published = pd.read_parquet(a)
    cells = {tuple(c) for c in recipe.steps[0]["cells"]}
    assert {tuple(r) for r in published[["a", "b", "c", "d"]].itertuples(index=False)} <= cells


# ------------------------------------------------------------------------- validation

def _bad(mutate) -> dict:
    step = copy.deepcopy(_step(_table(200, 3)))
    mutate(step)
    return step


@pytest.mark.parametrize(("mutate", "words"), [
    (lambda s: s.update(k=0), "k must be"),
    (lambda s: s.update(min_class_rows=1, k=5), "min_class_rows"),
    (lambda s: s.update(diversity="entropy"), "diversity"),
    (lambda s: s.update(columns=["a"], published_types=["float"]), "two distinct"),
    (lambda s: s.update(extra=1), "unknown key"),
    (lambda s: s["nodes"][0].update(left=0), "later node"),
    (lambda s: s["nodes"][0].update(cut=float("nan")), "finite"),
    (lambda s: s["nodes"][0].update(column="zz"), "node #0"),
    (lambda s: s["nodes"].append({"cell": 0}), "not a tree"),
    (lambda s: s["cells"].append(list(s["cells"][0])), "not a tree"),
    (lambda s: s["cells"][0].pop(), "one value per column"),
    (lambda s: s.update(nodes=[]), "non-empty"),
])
def test_malformed_partition_steps_are_refused(mutate, words):
    with pytest.raises(RecipeError, match=words):
        _recipe(_bad(mutate))


def test_a_representative_outside_its_cell_is_refused():
    step = _step(_table(200, 3))
    root = step["nodes"][0]
    assert root["column"] in ("a", "b", "c")
    j = step["columns"].index(root["column"])
    leaf = _leaves(step, root["left"])[0]
    step["cells"][leaf][j] = root["cut"] + 1  # left of the root means below its cut
    with pytest.raises(RecipeError, match="outside its cell"):
        _recipe(step)


def test_a_partition_across_groups_is_refused():
    from astrid_airflow import Grouping

    recipe = _recipe(_step(_table(200, 3)))
    with pytest.raises(RecipeError, match="spans several groups"):
        recipe.check_columns(["a", "b", "c", "d", "y"], Grouping([["a", "b"], ["c", "d"]]))


# ------------------------------------------------------------------ the guarantee

@st.composite
def _tables(draw):
    n = draw(st.integers(20, 250))
    n_classes = draw(st.integers(2, 4))
    k = draw(st.integers(2, 8))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    y[:2] = [0, 1]  # at least two classes
    t = pd.DataFrame({"a": rng.normal(y, draw(st.floats(0.1, 3))).round(
                          draw(st.integers(0, 3))),
                      "b": rng.integers(0, draw(st.integers(1, 50)), n),
                      "c": rng.choice(["p", "q", "r", None], n)}).assign(y=y)
    if draw(st.booleans()):
        t.loc[rng.random(n) < 0.1, "a"] = np.nan
    return t, k, draw(st.sampled_from([1, 2, 4])), draw(st.sampled_from(CUT_RULES))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_tables())
def test_every_cell_and_every_published_group_tuple_is_k_anonymous_and_2_diverse(case):
    t, k, mult, cuts = case  # either cut rule: the guarantee is in the allowed cuts
    y = t["y"].to_numpy()
    step = fit_partition(t[["a", "b", "c"]], y, k, k * mult, cuts=cuts)
    recipe = _recipe(step, k)  # the recipe checker accepts what the fit writes
    _cells_ok(partition_cells(t, step), y, k, k * mult)
    out = apply_recipe(t, recipe)
    tup = pd.factorize(pd.MultiIndex.from_frame(out[["a", "b", "c"]].astype(object)
                                                .fillna("<NA>")))[0]
    _cells_ok(tup, y, k)


def test_min_class_rows_coarsens_the_partition():
    t = _table(600, 6)
    sizes = [len(fit_partition(t[["a", "b", "c"]], t["y"].to_numpy(), 5, 5 * m)["cells"])
             for m in (1, 2, 4)]
    assert sizes[0] > sizes[1] > sizes[2] >= 1


def test_a_table_with_one_class_is_one_cell():
    t = _table(100, 0).assign(y=0)
    step = _step(t)
    assert step["nodes"] == [{"cell": 0}] and len(step["cells"]) == 1


def test_fit_recipe_partitions_a_group_the_bins_cannot_make_safe():
    t = _table(600, 7)
    _, report_bins = fit_recipe(t, target="y", grouping="a,b,c,d", k=5)
    part, report = fit_recipe(t, target="y", grouping="a,b,c,d", k=5, method="partition")
    assert not report_bins[0]["passed"]  # the bins alone leave the group unsafe
    assert report[0]["passed"] and report[0]["remedy"].startswith("partition")
    out = apply_recipe(t, part)
    from astrid_airflow import group_disclosure

    d = group_disclosure(out, target="y", grouping="a,b,c,d", k=5)[0]
    assert d.share_below_k <= 0.025 and d.class_disclosure_share <= 0.025


def test_bad_fit_arguments_are_refused():
    t = _table(100)
    with pytest.raises(RecipeError, match="k"):
        fit_partition(t[["a", "b"]], t["y"], 0)
    with pytest.raises(RecipeError, match="min_class_rows"):
        fit_partition(t[["a", "b"]], t["y"], 5, 3)
    with pytest.raises(RecipeError, match="two columns"):
        fit_partition(t[["a"]], t["y"], 5)
    with pytest.raises(RecipeError, match="cuts"):
        fit_partition(t[["a", "b"]], t["y"], 5, cuts="mean")


def test_class_entropy_cuts_separate_the_classes_where_median_cuts_do_not():
    """The class-entropy rule cuts where the classes part (``b``); the median rule takes
    the widest column relative to its range, here a tie the first column (``a``) wins.
    Both keep every cell 2-diverse with k rows of each class."""
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 100)
    t = pd.DataFrame({"a": rng.uniform(0, 1, 200), "b": y * 0.5 + rng.uniform(0, 1, 200)})
    informed = fit_partition(t, y, 5, cuts="class-entropy")
    median = fit_partition(t, y, 5)
    assert informed["nodes"][0]["column"] == "b" and median["nodes"][0]["column"] == "a"
    for step in (informed, median):
        _cells_ok(partition_cells(t, step), y, 5)


# ---------------------------------------------------------------------- the choice

@pytest.mark.filterwarnings("ignore::astrid_airflow.ProtectsNothingWarning")
def test_the_choice_partitions_an_unsafe_group_before_splitting_it():
    from astrid_airflow import GatePolicy, choose_release

    t = _table(600, 7)
    t.insert(4, "e", np.random.default_rng(1).integers(0, 3, len(t)))
    groups = [[["a", "b", "c", "d"], ["e"]], [["a"], ["b"], ["c"], ["d"], ["e"]]]
    result = {"grouping": groups[0], "k": 2, "table": [{"k": len(g), "grouping": g}
                                                        for g in groups],
              "target": "y", "classifier": {"preset": "nb"}, "scoring": "accuracy",
              "alpha": 0.05, "n_search": 20, "n_test": 40, "random_state": 0}
    art = choose_release(t, result, policy=GatePolicy(max_accuracy_drop=0.5, attack_n=100),
                         random_state=1)
    cands = art.release["candidates"]
    labels = [c["label"] for c in cands]
    part = cands[labels.index("learned (k=2), unsafe group(s) partitioned")]
    # tried before the split (here: all singletons, the per-k table's k=5), whose
    # accuracy is recorded beside it
    assert part["method"] == "partition"
    split = part["without_partition"]
    assert split["label"] == "per-k table, k=5"
    assert split["accuracy_surrogate"] == cands[labels.index(split["label"])][
        "accuracy_surrogate"]
    g = next(r for r in part["remedies"] if r["columns"] == ["a", "b", "c", "d"])
    assert g["passed"] and g["remedy"].startswith("partition")
    assert not {"share_below_k", "class_disclosure"} & set(part["failed"])


def test_the_report_shows_what_the_partition_costs():
    from astrid_airflow.report._sections import tradeoff_html as _tradeoff_html

    release = {"status": "refused", "reason": "r <x>", "chosen": None, "candidates": [
        {"label": "k=6, unsafe group(s) partitioned", "grouping": [["a", "b"]],
         "remedies": [], "risks": {}, "accuracy_surrogate": 0.6, "accuracy_drop": 0.14,
         "failed": ["utility"], "without_partition": {"label": "k=18 <s>",
                                                      "accuracy_surrogate": 0.5}}]}
    html = _tradeoff_html(release, "")
    from astrid_airflow.report._sections import _f

    assert "partitioned (Mondrian" in html
    assert f"accuracy {_f(0.6)} partitioned, {_f(0.5)} split" in html
    assert "<x>" not in html and "&lt;x&gt;" in html

"""Is the choice's batch check calibrated? Bootstrap batches of the reference against
the real new batch.

Issue 28. The release choice keeps a candidate only when at most 1 % of bootstrap
batches like the reference need more local suppression than the budget (0.05 of a
group's rows), so that the shuffle refuses at most 1 % of honest new batches. The
recipe is fitted on that same reference, with cells of ``batch_factor`` x k rows of each
class there: a bootstrap of the reference centres every batch on counts the fit has
already made large, and may say "0 %" where new batches are refused more often.

Per table and split seed (50/50 stratified; the recipe fitted on one half as the choice
fits it, the grouping the learn found on ``bench_honest_release``'s half, else every
column alone), the share of batches over the budget estimated on the reference by

* **bootstrap**: resamples of the reference within class (the choice's check before);
* **double bootstrap**: a resample of a resample, so the batch varies around a
  population drawn from the reference, as a new batch and the reference both vary
  around the real one;

beside the **real new batch**: whether the other half, which the fit never saw, is over
the budget. Over the seeds, the mean of an estimator should match the share of real
batches over the budget; one that is far below promises a refusal rate it does not keep.

Run: ``.venv/bin/python benchmarks/bench_batch_check.py [--seeds 60] [--batches 500]
[--tables diabetes,credit-a,vehicle] [--factors 2,3]`` (needs ``ASTRID_UCI_DIR``).
Writes ``results/batch_check.{json,md}``. ``--choice [--policy TABLE:NAME=VALUE]
--stem batch_check_choice``: the whole release choice per split seed, and the real other
half through its recipe alone and with its fallbacks (what the shuffle refuses).
``--new-batches 5000 [--policy ...] --stem batch_check_ladder``: the release chosen on
the reference half, and N new batches through its recipe alone and with its fallbacks.
``--timing 700,20000,1000000``: the cost of one
batch counted from the cells against one built, at those sizes (``results/batch_check_timing.*``).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))
import bench_honest_release  # noqa: E402  (the learned groupings)

BUDGET = 0.05  # GatePolicy().max_suppressed_share


def _split(name: str, seed: int):
    import bench_release
    from sklearn.model_selection import train_test_split

    table, target, _, _ = bench_release._split(name)
    ref, other = train_test_split(table, test_size=0.5, stratify=table[target],
                                  random_state=seed)
    return target, ref.reset_index(drop=True), other.reset_index(drop=True)


def _grouping(name: str, ref, target: str):
    from astrid_airflow import Grouping

    learned = bench_honest_release.GROUPINGS.get(name)
    if learned:
        return Grouping.parse(learned[0])
    return Grouping([[c] for c in ref.columns if c != target])


def _draws(ref, target: str, n: int, double: bool, seed: int):
    """Row multiplicities of ``n`` batches (within class), of a resample of the
    reference or (``double``) of a resample of a resample."""
    rng = np.random.default_rng([28, seed])
    classes = list(ref.groupby(target, observed=True).indices.values())
    for _ in range(n):
        parts = []
        for idx in classes:
            pool = rng.choice(idx, idx.size) if double else idx
            parts.append(rng.choice(pool, idx.size))
        yield np.bincount(np.concatenate(parts), minlength=len(ref))


def _fit(rows, target: str, grouping, factor: int):
    from astrid_airflow import fit_recipe

    return fit_recipe(rows, target=target, grouping=grouping, k=5, max_share_below_k=BUDGET,
                      max_class_disclosure_share=BUDGET, method="bins",
                      max_class_from_one_column_risk=0.2, batch_factor=factor)[0]


def _over(ref, recipe, grouping, target: str, draws) -> float:
    from astrid_airflow.release import release_domain, resampled_suppressed_shares

    applied = release_domain(ref, recipe, target)[0]
    shares = resampled_suppressed_shares(applied, grouping.groups, target, recipe.k, draws)
    return sum(x > BUDGET for x in shares) / len(shares)


def one_seed(name: str, seed: int, factor: int, batches: int, refits: int) -> dict:
    from astrid_airflow.pipeline import batch_rate_upper
    from astrid_airflow.release import release_domain

    target, ref, other = _split(name, seed)
    grouping = _grouping(name, ref, target)
    recipe = _fit(ref, target, grouping, factor)
    out = {"seed": seed}
    for kind, double in (("bootstrap", False), ("double_bootstrap", True)):
        out[kind] = _over(ref, recipe, grouping, target,
                          _draws(ref, target, batches, double, seed))
    if refits:
        # the bootstrap's own world: the recipe fitted on a resample of the reference
        # (as the reference is a sample of the population), judged on other resamples
        # (as new batches are): the fit's selection of large cells is repeated there
        rates = []
        for r, m in enumerate(_draws(ref, target, refits, False, 10_000 + seed)):
            fitted = _fit(ref.iloc[np.repeat(np.arange(m.size), m)].reset_index(drop=True),
                          target, grouping, factor)
            rates.append(_over(ref, fitted, grouping, target,
                               _draws(ref, target, batches // refits, False, 20_000 + r)))
        out["refit_bootstrap"] = statistics.fmean(rates)
        # what the choice records beside its estimate: the rate's upper bound over refits
        out["refit_bound"] = batch_rate_upper(rates)
    real = release_domain(other, recipe, target, grouping)[1].to_dict()
    out["real_batch_share"] = real["max_suppressed_share"]
    out["real_batch_over"] = real["max_suppressed_share"] > BUDGET
    return out


def choice_seed(name: str, seed: int, policy: dict | None = None) -> dict:
    """The release choice on one half (``policy``: overrides of the default; the
    learned grouping and the per-k table's of ``bench_honest_release``; the search is not
    re-run per seed), and the real other half through the chosen recipe, with its
    fallbacks (what the shuffle does) and without them (rung 0 alone)."""
    from astrid_airflow import GatePolicy
    from astrid_airflow.release import release_domain

    target, ref, other = _split(name, seed)
    art = bench_honest_release._artefact(ref, target, bench_honest_release.GROUPINGS[name],
                                         GatePolicy().with_overrides(**(policy or {})))
    out = {"seed": seed, "status": art.release["status"]}
    if art.recipe is None:
        return out
    chosen = art.release["candidates"][art.release["chosen"]]
    alone = release_domain(other, art.recipe.rungs[0], target, art.grouping)[1]
    real = release_domain(other, art.recipe, target, art.grouping)[1]
    out.update(label=chosen["label"], estimate=chosen["risks"]["batch_over_budget"],
               drop=chosen["accuracy_drop"], rungs=len(art.recipe.rungs),
               rung0_share=alone.max_share, rung0_over=alone.max_share > BUDGET,
               real_batch_share=real.max_share, real_batch_over=real.max_share > BUDGET,
               fell_back=any(real.recipe_rungs))
    return out


def run_choice(name: str, seeds: int, policy: dict | None = None) -> dict:
    started = time.perf_counter()
    per = [choice_seed(name, s, policy) for s in range(seeds)]
    kept = [p for p in per if p["status"] != "refused"]

    def count(key: str) -> int:
        return sum(p[key] for p in kept)

    return {"table": name, "policy": policy or "default", "seeds": seeds,
            "released": len(kept), "with_fallbacks": sum(p["rungs"] > 1 for p in kept),
            "rung0_over": count("rung0_over"), "fell_back": count("fell_back"),
            "real_over": count("real_batch_over"),
            "real_over_rate": count("real_batch_over") / len(kept) if kept else None,
            "estimate_mean": statistics.fmean(p["estimate"] for p in kept) if kept else None,
            "drop_mean": statistics.fmean(p["drop"] for p in kept) if kept else None,
            "seconds": round(time.perf_counter() - started, 1), "per_seed": per}


def run(name: str, factor: int, seeds: int, batches: int, refits: int = 0) -> dict:
    started = time.perf_counter()
    per = [one_seed(name, s, factor, batches, refits) for s in range(seeds)]
    real = [p["real_batch_over"] for p in per]
    row = {"table": name, "batch_factor": factor, "seeds": seeds, "batches": batches,
           "real_over_rate": sum(real) / len(real),
           "real_over_se": (statistics.pvariance(real) / len(real)) ** 0.5,
           "seconds": round(time.perf_counter() - started, 1), "per_seed": per}
    for kind, _ in KINDS:
        if kind not in per[0]:
            continue
        row[f"{kind}_rate"] = statistics.fmean(p[kind] for p in per)
        # how often the check would keep the recipe (at most 1 % of batches over)
        row[f"{kind}_keeps"] = sum(p[kind] <= 0.01 for p in per) / len(per)
        kept = [p["real_batch_over"] for p in per if p[kind] <= 0.01]
        row[f"{kind}_real_over_when_kept"] = sum(kept) / len(kept) if kept else None
    return row


KINDS = (("bootstrap", "bootstrap"), ("double_bootstrap", "double bootstrap"),
         ("refit_bootstrap", "refit bootstrap"),
         ("refit_bound", "refit bootstrap's 95 % upper bound (recorded, not the bar)"))


def markdown(rows: list[dict]) -> str:
    kinds = [(k, label) for k, label in KINDS if any(f"{k}_rate" in r for r in rows)]
    out = ["# Is the batch check calibrated? (issue 28)", "",
           "Per split seed, the recipe fitted on one half (cells of `batch_factor` x k "
           "rows of each class); the share of batches over the 0.05 suppression budget "
           "estimated on that half, against whether the real other half is over it. "
           "Means over the seeds; \"keeps\" = the share of seeds where the estimate is at "
           "most 1 % (the choice would keep the recipe), and \"real over when kept\" the "
           "share of their real batches over the budget (what the promise of 1 % is "
           "about).", "",
           "| table | cells | seeds | real batches over | " + " | ".join(
               f"{label}: mean estimate | keeps | real over when kept"
               for _, label in kinds) + " |",
           "|---|---|---|---|" + "---|---|---|" * len(kinds)]

    def f(x):
        return "-" if x is None else f"{x:.3f}"
    for r in rows:
        out.append(f"| {r['table']} | {r['batch_factor']}k | {r['seeds']} | "
                   f"{r['real_over_rate']:.3f} ± {r['real_over_se']:.3f} | " + " | ".join(
                       f"{f(r.get(k + '_rate'))} | {f(r.get(k + '_keeps'))} | "
                       f"{f(r.get(k + '_real_over_when_kept'))}" for k, _ in kinds) + " |")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=60)
    ap.add_argument("--batches", type=int, default=500)
    ap.add_argument("--tables", default="diabetes,credit-a,vehicle")
    ap.add_argument("--factors", default="2,3")
    ap.add_argument("--refits", type=int, default=0,
                    help="also the refit bootstrap: this many recipes fitted on resamples")
    ap.add_argument("--stem", default="batch_check")
    ap.add_argument("--policy", action="append", default=[], metavar="TABLE:NAME=VALUE",
                    help="--choice: a threshold for one table's choice, e.g. "
                    "credit-a:max_accuracy_drop=0.07 (repeatable)")
    ap.add_argument("--choice", action="store_true",
                    help="the whole default release choice per split seed instead")
    ap.add_argument("--timing", default="", metavar="ROWS,...",
                    help="instead: the cost of one counted and one built batch on "
                    "synthetic tables of ROWS x 30 (e.g. 700,20000,1000000)")
    ap.add_argument("--new-batches", type=int, default=0, metavar="N",
                    help="instead: N new batches through the chosen recipe alone and with "
                    "its fallbacks (--stem batch_check_ladder)")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    if args.choice:
        return choice_main(args)
    if args.new_batches:
        return ladder_main(args)
    if args.timing:
        return timing_report([int(x) for x in args.timing.split(",")])
    rows = []
    for name in args.tables.split(","):
        for factor in (int(x) for x in args.factors.split(",")):
            rows.append(run(name, factor, args.seeds, args.batches, args.refits))
            r = rows[-1]
            print(f"{name} {factor}k: real {r['real_over_rate']:.3f}, " + ", ".join(
                f"{k} {r[k + '_rate']:.3f}" for k, _ in KINDS if k + "_rate" in r)
                + f" ({r['seconds']} s)", flush=True)
    RESULTS.mkdir(exist_ok=True)
    meta = {"python": platform.python_version(), "machine": platform.machine()}
    (RESULTS / f"{args.stem}.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                         indent=1, default=str))
    (RESULTS / f"{args.stem}.md").write_text(markdown(rows))
    print(markdown(rows))


def _policy_text(policy) -> str:
    return policy if isinstance(policy, str) else ", ".join(
        f"{k}={v}" for k, v in policy.items())


def _write(stem: str, rows: list[dict], lines: list[str]) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps({"rows": rows}, indent=1, default=str))
    (RESULTS / f"{stem}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def choice_main(args) -> None:
    policies = bench_honest_release.parse_policies(args.policy)
    rows = []
    for name in args.tables.split(","):
        rows.append(run_choice(name, args.seeds, policies.get(name)))
        r = rows[-1]
        print(f"{name}: released {r['released']} / {r['seeds']}, real other half over "
              f"the budget {r['real_over']} ({r['seconds']} s)", flush=True)
    out = ["# The choice's releases against their real other halves (issue 28)",
           "", "Per split seed (50/50 stratified), the release choice on one half "
           "(its batch check: the recipe refitted on 10 resamples, 1,000 counted "
           "batches); whether the other half needs more than 0.05 of a group suppressed "
           "through the chosen recipe alone (rung 0), and through the recipe with its "
           "fallbacks, as the shuffle publishes it (over: the shuffle refuses it).", "",
           "| table | policy | seeds | released | with fallbacks | other half over: rung 0 "
           "alone | published with a fallback | other half over: with fallbacks (refused) "
           "| check's mean estimate | choice's mean drop |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        rate = "-" if r["real_over_rate"] is None else f"{r['real_over_rate']:.3f}"
        est = "-" if r["estimate_mean"] is None else f"{r['estimate_mean']:.4f}"
        drop = "-" if r["drop_mean"] is None else f"{r['drop_mean']:.3f}"
        policy = _policy_text(r["policy"])
        out.append(f"| {r['table']} | {policy} | {r['seeds']} | {r['released']} | "
                   f"{r['with_fallbacks']} | {r['rung0_over']} | {r['fell_back']} | "
                   f"**{r['real_over']}** ({rate}) | {est} | {drop} |")
    _write(args.stem, rows, out)


def ladder_main(args) -> None:
    """``--new-batches N``: the release chosen on ``bench_honest_release``'s reference
    half, then N new batches of the other half's size drawn from the whole table (as its
    ``--batches new``): how many need more than the budget through the recipe alone (rung
    0) and through the recipe with its fallbacks (what the shuffle refuses)."""
    import bench_release

    from astrid_airflow import GatePolicy
    from astrid_airflow.release import release_domain

    policies = bench_honest_release.parse_policies(args.policy)
    rows = []
    for name in args.tables.split(","):
        started = time.perf_counter()
        table, target, ref, half = bench_release._split(name)
        art = bench_honest_release._artefact(
            ref, target, bench_honest_release.GROUPINGS[name],
            GatePolicy().with_overrides(**policies.get(name, {})))
        row = {"table": name, "policy": policies.get(name, "default"),
               "batches": args.new_batches, "status": art.release["status"]}
        if art.recipe is not None:
            alone = fell = over = 0
            for s in range(1, args.new_batches + 1):
                batch = bench_honest_release._new_batch(table, target, len(half), s)
                first = release_domain(batch, art.recipe.rungs[0], target, art.grouping)[1]
                found = release_domain(batch, art.recipe, target, art.grouping)[1]
                alone += first.max_share > BUDGET
                fell += any(found.recipe_rungs)
                over += found.max_share > BUDGET
            row.update(rungs=len(art.recipe.rungs), rung0_over=alone, fell_back=fell,
                       over=over)
        row["seconds"] = round(time.perf_counter() - started, 1)
        rows.append(row)
        print(row, flush=True)
    out = ["# New batches through the recipe alone and with its fallbacks (issue 28)", "",
           "The release chosen on the reference half (as `bench_honest_release.py`); new "
           "batches of the other half's size drawn with replacement within class from "
           "the whole table (its `--batches new`, seeds 1..N); over: more than 0.05 of a "
           "group's rows suppressed (the shuffle refuses the batch).", "",
           "| table | policy | new batches | recipe rungs | over through rung 0 alone | "
           "published with a fallback | over with the fallbacks (refused) |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        policy = _policy_text(r["policy"])
        if "over" not in r:
            out.append(f"| {r['table']} | {policy} | - | choice {r['status']} | | | |")
            continue
        out.append(f"| {r['table']} | {policy} | {r['batches']} | {r['rungs']} | "
                   f"{r['rung0_over']} | {r['fell_back']} | **{r['over']}** |")
    _write(args.stem, rows, out)


def _timed(f, repeats: int = 1) -> float:
    t = time.perf_counter()
    for _ in range(repeats):
        f()
    return (time.perf_counter() - t) / repeats


def timing_main(n: int, repeats: int = 3) -> dict:
    """Seconds per batch of the choice's check on an ``n`` x 30 table of 15 two-column
    groups: counted from the cells (``resampled_suppressed_shares``; its once-per-recipe
    preparation apart, the resample's draw included) against built (the batch's rows put
    through the recipe and suppressed), beside one pass."""
    import pandas as pd

    from astrid_airflow import Grouping, fit_recipe
    from astrid_airflow.release import release_domain, resampled_suppressed_shares

    rng = np.random.default_rng(0)
    t = pd.DataFrame({f"x{i}": rng.normal(size=n).round(2) for i in range(30)})
    t["y"] = np.where(t.x0 + t.x1 + rng.normal(size=n) > 0, "a", "b")
    g = Grouping([[f"x{2 * i}", f"x{2 * i + 1}"] for i in range(15)])
    recipe = fit_recipe(t, target="y", grouping=g)[0]
    applied = release_domain(t, recipe, "y")[0]
    m = next(_draws(t, "y", 1, False, 0))

    def counted(b: int) -> float:
        return _timed(lambda: resampled_suppressed_shares(
            applied, g.groups, "y", recipe.k, _draws(t, "y", b, False, 0)), repeats)

    batches = 100 if n <= 100_000 else 10  # a batch's count is well above the timer
    prep = counted(0)
    row = {"rows": n, "columns": 30, "groups": 15,
           "pass_s": _timed(lambda: release_domain(t, recipe, "y", g), repeats),
           "built_batch_s": _timed(lambda: release_domain(
               t.iloc[np.repeat(np.arange(m.size), m)], recipe, "y", g), repeats),
           "counted_preparation_s": prep,
           "counted_batch_s": (counted(batches) - prep) / batches}
    row["counted_batch_passes"] = row["counted_batch_s"] / row["pass_s"]
    return row


def timing_report(sizes: list[int]) -> None:
    rows = [timing_main(n) for n in sizes]
    md = ["# The batch check's cost per batch (issue 28)", "",
          "Synthetic rows x 30 columns, 15 two-column groups, the mean of 3 runs; a pass: "
          "the reference put through the recipe and suppressed; a counted batch: its draw "
          "and one weighted count per group (the cells' preparation, once per recipe, "
          "apart).", "",
          "| rows | one pass (s) | built batch (s) | counted: preparation (s) | counted "
          "batch (s) | counted, in passes |", "|---|---|---|---|---|---|"]
    md += [f"| {r['rows']:,} | {r['pass_s']:.3f} | {r['built_batch_s']:.3f} | "
           f"{r['counted_preparation_s']:.3f} | {r['counted_batch_s']:.4f} | "
           f"{r['counted_batch_passes']:.2f} |" for r in rows]
    RESULTS.mkdir(exist_ok=True)
    meta = {"python": platform.python_version(), "machine": platform.machine()}
    (RESULTS / "batch_check_timing.json").write_text(json.dumps({"meta": meta,
                                                                 "rows": rows}, indent=1))
    (RESULTS / "batch_check_timing.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))

if __name__ == "__main__":
    main()

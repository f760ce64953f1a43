"""Original, raw GoldenEye, remedied GoldenEye and SDV GaussianCopula: risks and accuracy.

Issue 17's comparison. Tables (UCI ARFF cleaned by ``benchmarks/uci.py``): vehicle,
diabetes, credit-a, segment, each split 50/50 stratified by class (seed 0) into the
release part and the control part (held-out real rows). Releases of the release part:

* ``original``: the part itself;
* ``GoldenEye raw``: a surrogate (seed 2) with the grouping ASTRID learned
  (``results/astrid_runs/adaptive_<table>_svm_j1.json``, learned on the whole table:
  its per-k table is what :func:`choose_release` chooses from), no remedies;
* ``GoldenEye remedied``: :func:`choose_release` on the release part with the
  **default** gate policy (seed 0), then a surrogate of its release (seed 2). When no
  release passes the policy the tool refuses; the row then shows the most accurate
  candidate that passes every privacy check, marked *refused* (it is not published);
* ``SDV GaussianCopula``: SDV 2.0.0 with defaults, in a throw-away virtual environment
  (``benchmarks/.venv-sdv``, ``pip install sdv==2.0.0``), as anonymeter is run.

Risks: the project's ``measure_risk`` (Giomi et al. 2023, 200 attacks, control = the
control part), every table put into the release's domain with the recipe for the
remedied release (the attacker knows the published recipe); the per-group disclosure of
the release. Accuracy: a random forest (the project's ``rf`` preset, seed 0) trained on
the release and scored on the control part (in the release's domain for the remedied
release). anonymeter 1.1.0 itself (its throw-away venv, see ``bench_anonymeter.py``) on
the remedied releases: linkability (attributes in two halves), inference of the class
from every single column (the largest reported), inference of every member of a
multi-column group from its group-mates (largest reported). Targets: linkability <= 0.10,
class from one column <= 0.20, group member <= 0.20 (point estimates; intervals shown).

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_release.py [--tables vehicle,...]``
Writes ``results/release_comparison.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
TABLES = ("vehicle", "diabetes", "credit-a", "segment")

sys.path.insert(0, str(HERE))
import _benchlib  # noqa: E402  (throw-away venvs, anonymeter runner, formatting)
import uci  # noqa: E402

N_ATTACKS = _benchlib.N_ATTACKS

SDV_RUNNER = r'''
import json, sys, warnings
import numpy as np, pandas as pd
warnings.simplefilter("ignore")
from sdv.metadata import Metadata
from sdv.single_table import GaussianCopulaSynthesizer
src, out, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
np.random.seed(seed)
df = pd.read_csv(src)
md = Metadata.detect_from_dataframes({"table": df})
s = GaussianCopulaSynthesizer(md)
s.fit({"table": df})  # SDV 2.0: data as {table name: DataFrame}
syn = s.sample(len(df))
(syn["table"] if isinstance(syn, dict) else syn).to_csv(out, index=False)
'''


def _like(frame: pd.DataFrame, ref: pd.DataFrame) -> pd.DataFrame:
    out = frame[list(ref.columns)].copy()
    for c in ref.columns:
        if isinstance(ref[c].dtype, pd.CategoricalDtype):
            cats = ref[c].cat.categories
            out[c] = pd.Categorical(out[c].astype(str).where(out[c].notna()).map(
                {str(v): v for v in cats}), categories=cats)
        elif pd.api.types.is_numeric_dtype(ref[c]):
            out[c] = pd.to_numeric(out[c], errors="coerce").astype(ref[c].dtype
                                                                   if ref[c].dtype.kind == "f"
                                                                   else float)
    return out


def accuracy(train: pd.DataFrame, test: pd.DataFrame, target: str) -> float:
    from astrid_airflow import make_classifier

    attrs = [c for c in train.columns if c != target]
    model = make_classifier("rf", random_state=0, n_attributes=len(attrs))
    model.fit(train[attrs], train[target].astype(str).to_numpy())
    return float(np.mean(model.predict(test[attrs]) == test[target].astype(str).to_numpy()))


def our_risks(ori, rel, ctl, target, grouping) -> dict:
    from astrid_airflow import measure_risk

    r = measure_risk(ori, rel, target=target, grouping=grouping, control=ctl,
                     n_attacks=N_ATTACKS, random_state=0).to_dict()

    def pick(items, pred=lambda a: True):
        chosen = [a for a in items if pred(a)]
        if not chosen:
            return None
        best = max(chosen, key=lambda a: a["risk"])
        return {"risk": best["risk"], "ci": best["ci"]}

    so = r["singling_out"]
    return {
        "singling_out": pick(so.get("variants", [so])),
        "linkability": pick(r["linkability"].get("variants", [r["linkability"]])),
        "infer_class": pick(r["inference"], lambda a: a.get("variant") == "class"),
        "infer_member": pick(r["inference"], lambda a: a.get("variant") == "group_member"),
        "class_from_one": pick(r["inference"],
                               lambda a: a.get("variant") == "class_from_one_column"),
        "share_below_k": max(g["share_below_k"] for g in r["groups"]),
        "class_disclosure": max(g["class_disclosure_share"] for g in r["groups"]),
    }


def _split(name: str):
    from sklearn.model_selection import train_test_split

    if name == "synthetic":  # the paper's running example (its seed 0, 1,000 rows)
        from astrid_airflow import make_synthetic

        table, target = make_synthetic(random_state=0), "class"
    elif name.startswith(("people-", "clinic-")):  # generated tables of people
        import people

        kind, n = name.split("-")
        table, target = getattr(people, f"{kind}_table")(int(n))
    else:
        table, target = uci.load(name)
    part, ctl = train_test_split(table, test_size=0.5, stratify=table[target], random_state=0)
    return table, target, part.reset_index(drop=True), ctl.reset_index(drop=True)


def sdv_row(name: str, part, ctl, target: str, tmp: Path) -> dict:
    from astrid_airflow import Grouping

    try:
        src, out = tmp / f"{name}-sdv-in.csv", tmp / f"{name}-sdv-out.csv"
        part.to_csv(src, index=False)
        started = time.perf_counter()
        subprocess.run([str(_benchlib.sdv_python()), "-c", SDV_RUNNER, str(src), str(out), "0"],
                       check=True, capture_output=True)
        seconds = time.perf_counter() - started
        syn = _like(pd.read_csv(out), part)
        syn[target] = syn[target].astype(part[target].dtype) \
            if not isinstance(part[target].dtype, pd.CategoricalDtype) else syn[target]
        singles = Grouping.singletons([c for c in part.columns if c != target])
        return {"release": "SDV GaussianCopula", "accuracy": accuracy(syn, ctl, target),
                "risks": our_risks(part, syn, ctl, target, singles),
                "fit_sample_seconds": round(seconds, 1)}
    except Exception as exc:
        return {"release": "SDV GaussianCopula", "error": f"{type(exc).__name__}: "
                f"{str(exc)[:300]}"}


def run_table(name: str, tmp: Path, sdv: bool = True) -> dict:
    from astrid_airflow import (
        GatePolicy,
        Grouping,
        ProtectsNothingWarning,
        apply_recipe,
        choose_release,
        make_surrogate,
    )

    warnings.simplefilter("ignore", ProtectsNothingWarning)
    table, target, part, ctl = _split(name)
    run = json.loads((RESULTS / "astrid_runs" / f"adaptive_{name}_svm_j1.json").read_text())
    result = run["result"]
    learned = Grouping(result["grouping"])
    rows = []
    t0 = time.perf_counter()
    rows.append({"release": "original", "grouping": learned.to_list(),
                 "accuracy": accuracy(part, ctl, target),
                 "risks": our_risks(part, part, ctl, target, learned)})
    raw = make_surrogate(part, learned, target=target, random_state=2)
    rows.append({"release": "GoldenEye raw (learned grouping)", "grouping": learned.to_list(),
                 "accuracy": accuracy(raw, ctl, target),
                 "risks": our_risks(part, raw, ctl, target, learned)})
    started = time.perf_counter()
    art = choose_release(part, result, policy=GatePolicy(), random_state=0)
    choose_seconds = time.perf_counter() - started
    rel = art.release
    status = rel["status"]
    if status == "chosen":
        grouping, recipe = art.grouping, art.recipe
    else:  # the most accurate privacy-passing candidate, for information (not published)
        from astrid_airflow import fit_recipe

        private = [c for c in rel["candidates"] if not (set(c["failed"]) - {"utility"})]
        best = max(private, key=lambda c: c["accuracy_surrogate"]) if private else None
        if best is None:
            rows.append({"release": "GoldenEye remedied: refused (no private candidate)",
                         "reason": rel["reason"]})
            grouping = recipe = None
        else:
            grouping = Grouping(best["grouping"])
            recipe, _ = fit_recipe(part, target=target, grouping=grouping, k=5,
                                   method=best.get("method", "bins"))
    if recipe is not None:
        pd_, cd_ = apply_recipe(part, recipe, target=target), apply_recipe(ctl, recipe,
                                                                          target=target)
        rem = make_surrogate(pd_, grouping, target=target, random_state=2)
        row = {"release": "GoldenEye remedied" + ("" if status == "chosen" else
                                                  " (refused: not published)"),
               "grouping": grouping.to_list(), "status": status, "reason": rel["reason"],
               "utility": rel.get("utility"), "choose_seconds": round(choose_seconds, 1),
               "n_candidates": len(rel["candidates"]),
               "accuracy": accuracy(rem, cd_, target),
               "risks": our_risks(pd_, rem, cd_, target, grouping),
               "recipe": recipe.to_dict()}
        try:
            row["anonymeter"] = _benchlib.anonymeter_release_attacks(
                name, pd_, rem, cd_, target, grouping.groups, tmp)
        except Exception as exc:  # the throw-away venv may be unavailable offline
            row["anonymeter"] = {"error": f"{type(exc).__name__}: {exc}"}
        rows.append(row)
    rows.append(sdv_row(name, part, ctl, target, tmp) if sdv else
                {"release": "SDV GaussianCopula", "error": "skipped (--no-sdv)"})
    return {"table": name, "rows": len(table), "seconds": round(time.perf_counter() - t0, 1),
            "releases": rows}


_r = _benchlib.fmt_risk


def markdown(results: list[dict]) -> str:
    lines = ["| table | release | accuracy | singling-out | linkability | infer class | "
             "infer group member | class from one column | worst share below k | "
             "worst class disclosure |", "|" + "---|" * 10]
    for t in results:
        for r in t["releases"]:
            if "risks" not in r:
                lines.append(f"| {t['table']} | {r['release']} | "
                             f"{r.get('error') or r.get('reason', '')} |" + " |" * 7)
                continue
            k = r["risks"]
            lines.append(f"| {t['table']} | {r['release']} | {r['accuracy']:.3f} | "
                         f"{_r(k['singling_out'])} | {_r(k['linkability'])} | "
                         f"{_r(k['infer_class'])} | {_r(k['infer_member'])} | "
                         f"{_r(k['class_from_one'])} | {k['share_below_k']:.3f} | "
                         f"{k['class_disclosure']:.3f} |")
    lines += ["", "anonymeter 1.1.0 on the remedied releases (targets: linkability <= 0.10, "
              "class from one column <= 0.20, group member <= 0.20):", "",
              "| table | release | linkability | class from one column (worst) | group member "
              "from group-mates (worst) | meets targets |", "|---|---|---|---|---|---|"]
    for t in results:
        for r in t["releases"]:
            a = r.get("anonymeter")
            if not a:
                continue
            if "error" in a:
                lines.append(f"| {t['table']} | {r['release']} | {a['error']} | | | |")
                continue
            ok = _benchlib.meets_anonymeter_targets(a)
            member = _r(a["infer_member"]) or "n/a (all singletons)"
            lines.append(f"| {t['table']} | {r['release']} | {_r(a['linkability'])} | "
                         f"{_r(a['class_from_one'])} ({a['class_from_one']['attack']}) | "
                         f"{member} | {'yes' if ok else 'NO'} |")
    lines += ["", "Choice of the release (default gate policy):", ""]
    for t in results:
        for r in t["releases"]:
            if r.get("release", "").startswith("GoldenEye remedied"):
                u = r.get("utility") or {}
                lines.append(f"* {t['table']}: {r['status']}"
                             + (f" — {r['reason']}" if r.get("reason") else "")
                             + (f"; accuracy original {u['accuracy_original']:.3f}, raw "
                                f"release {u['accuracy_raw_release']:.3f}, remedied "
                                f"{u['accuracy_remedied_release']:.3f} (SVM, one split)"
                                if u else "")
                             + f"; {r['n_candidates']} candidates, {r['choose_seconds']} s.")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default=",".join(TABLES))
    ap.add_argument("--no-sdv", action="store_true", help="skip the SDV peer")
    ap.add_argument("--sdv-only", action="store_true",
                    help="recompute only the SDV rows of an existing results file")
    args = ap.parse_args()
    results = []
    started = time.perf_counter()
    if args.sdv_only:
        old = json.loads((RESULTS / "release_comparison.json").read_text())
        with tempfile.TemporaryDirectory(prefix="astrid_release_") as tmp:
            for t in old["tables"]:
                _, target, part, ctl = _split(t["table"])
                t["releases"] = [r for r in t["releases"] if r["release"] !=
                                 "SDV GaussianCopula"] + [sdv_row(t["table"], part, ctl,
                                                                  target, Path(tmp))]
        results = old["tables"]
    with tempfile.TemporaryDirectory(prefix="astrid_release_") as tmp:
        for name in ([] if args.sdv_only else args.tables.split(",")):
            print(f"{name} ...", flush=True)
            results.append(run_table(name, Path(tmp), sdv=not args.no_sdv))
            print(f"  {results[-1]['seconds']} s", flush=True)
    RESULTS.mkdir(exist_ok=True)
    payload = {"tables": results, "seconds": round(time.perf_counter() - started, 1),
               "machine": platform.platform(), "python": sys.version.split()[0],
               "n_attacks": N_ATTACKS}
    (RESULTS / "release_comparison.json").write_text(json.dumps(payload, indent=1) + "\n")
    md = markdown(results)
    (RESULTS / "release_comparison.md").write_text(
        f"# Release comparison (issue 17)\n\n{md}\nTotal {payload['seconds']} s.\n")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())

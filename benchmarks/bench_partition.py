"""Issue 32: the release choice with partitioned groups, under the default gate policy.

Per table (UCI ARFF cleaned by ``uci.py``, split 50/50 stratified by class, seed 0, as
``bench_release.py``): :func:`choose_release` on the release part with the stored ASTRID
result (``results/astrid_runs/adaptive_<table>_svm_j1.json``, its per-k table) and the
**default** ``GatePolicy()`` (seed 0). Recorded: the verdict (chosen / refused with its
reason), the chosen candidate and its accuracy drop (the choice's own measure, the
gate's), the gate's own attack figures on the chosen candidate (upper 95 % bounds on its
shadow releases), every partitioned candidate beside its split alternative (accuracy
with / without the partition) and, when a release is chosen, the svm and rf accuracy of
its surrogate (seed 2) on the control part in the release's domain against the same
classifier trained on the release part and scored on the raw control part. Suppressed
share: this branch suppresses nothing (0); the companion suppression work adds it.

``--release-dir D`` reuses ``D/<table>_release.json`` (the ``release`` record of an
earlier ``choose_release`` with the same inputs and seed) instead of running the choice
again, and writes it there otherwise.

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_partition.py --tables vehicle,segment``
Writes ``results/partition.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"

sys.path.insert(0, str(HERE))
import bench_e2e  # noqa: E402  (the accuracy measure)
import bench_release  # noqa: E402  (the split)


def _release(name: str, part, release_dir: Path | None) -> tuple[dict, float | None]:
    from astrid_airflow import GatePolicy, ProtectsNothingWarning, choose_release

    cached = release_dir / f"{name}_release.json" if release_dir else None
    if cached is not None and cached.exists():
        return json.loads(cached.read_text()), None
    run = json.loads((RESULTS / "astrid_runs" / f"adaptive_{name}_svm_j1.json").read_text())
    warnings.simplefilter("ignore", ProtectsNothingWarning)
    t0 = time.perf_counter()
    rel = choose_release(part, run["result"], policy=GatePolicy(), random_state=0).release
    seconds = round(time.perf_counter() - t0, 1)
    if cached is not None:
        cached.write_text(json.dumps(rel, default=str))
    return rel, seconds


def _published_accuracy(rel: dict, part, ctl, target: str) -> dict:
    from astrid_airflow import Grouping, ReleaseRecipe, apply_recipe, make_surrogate

    recipe = ReleaseRecipe.from_dict(rel["recipe"])
    grouping = Grouping(rel["candidates"][rel["chosen"]]["grouping"])
    published = make_surrogate(apply_recipe(part, recipe, target=target), grouping,
                               target=target, random_state=2)
    ctl_domain = apply_recipe(ctl, recipe, target=target)
    out = {}
    for clf in ("svm", "rf"):
        orig = bench_e2e._accuracy(part, ctl, target, clf)
        pub = bench_e2e._accuracy(published, ctl_domain, target, clf)
        out[clf] = {"original": orig, "published": pub, "loss": orig - pub}
    return out


def _split_alternative(cands: list[dict], c: dict) -> dict | None:
    """``without_partition`` of a partitioned candidate, from the record (a record written
    before the choice matched split groupings regardless of group order lacks it)."""
    from astrid_airflow import Grouping

    if c.get("without_partition"):
        return c["without_partition"]
    plain = [o for o in cands if o["method"] == "bins" and o["max_bins"] is None]
    base = next(o for o in plain if Grouping(o["grouping"]) == Grouping(c["grouping"]))
    failing = [tuple(g["columns"]) for g in base["remedies"]
               if not g["passed"] and len(g["columns"]) > 1]
    # the choice's split: each unsafe multi-column group into singletons
    split = Grouping([part for g in c["grouping"] for part in
                      ([[col] for col in g] if tuple(g) in failing else [g])])
    o = next((o for o in plain if Grouping(o["grouping"]) == split), None)
    return None if o is None else {"label": o["label"], "accuracy_drop": o["accuracy_drop"],
                                   "accuracy_surrogate": o["accuracy_surrogate"],
                                   "failed": o["failed"]}


def run_table(name: str, release_dir: Path | None) -> dict:
    _, target, part, ctl = bench_release._split(name)
    rel, seconds = _release(name, part, release_dir)
    cands = rel["candidates"]
    row: dict = {"table": name, "release_rows": len(part), "status": rel["status"],
                 "reason": rel.get("reason"), "choose_seconds": seconds,
                 "n_candidates": len(cands), "suppressed_share": 0.0}
    row["partitioned"] = [
        {"label": c["label"], "accuracy_drop": c["accuracy_drop"], "failed": c["failed"],
         "remedies": [g["remedy"] for g in c["remedies"] if g["remedy"].startswith(
             "partition") or not g["passed"]],
         "without_partition": _split_alternative(cands, c)}
        for c in cands if c.get("method") == "partition"]
    if rel["status"] == "chosen":
        c = cands[rel["chosen"]]
        row["chosen"] = {"label": c["label"], "accuracy_drop": c["accuracy_drop"],
                         "groups": len(c["grouping"]),
                         "gate_attacks": {k: c["risks"].get(f"{k}_upper") for k in
                                          ("singling_out", "linkability", "inference")},
                         "class_from_one_column_upper":
                             c["risks"].get("class_from_one_column_upper")}
        row["accuracy"] = _published_accuracy(rel, part, ctl, target)
    return row


def markdown(rows: list[dict]) -> str:
    lines = ["| table | verdict | chosen (choice's accuracy drop) | gate's attacks on it "
             "(upper: singling out / linkability / inference; class from one column) | "
             "svm loss | rf loss | suppressed |", "|" + "---|" * 7]
    for r in rows:
        if r["status"] == "chosen":
            c, a = r["chosen"], r["accuracy"]
            g = c["gate_attacks"]
            lines.append(
                f"| {r['table']} | chosen | {c['label']} ({c['accuracy_drop']:+.3f}) | "
                f"{g['singling_out']:.2f} / {g['linkability']:.2f} / {g['inference']:.2f};"
                f" {c['class_from_one_column_upper']:.2f} | {a['svm']['loss']:+.3f} | "
                f"{a['rf']['loss']:+.3f} | {r['suppressed_share']:.2f} |")
        else:
            lines.append(f"| {r['table']} | refused | | | | | {r['suppressed_share']:.2f} |")
    lines += ["", "Partitioned candidates (accuracy drop partitioned vs split):", ""]
    for r in rows:
        for p in r["partitioned"]:
            w = p["without_partition"] or {}
            lines.append(f"* {r['table']}: {p['label']}: {p['accuracy_drop']:+.3f} "
                         f"partitioned (failed: {', '.join(p['failed']) or 'none'}) vs "
                         f"{w.get('accuracy_drop', float('nan')):+.3f} split "
                         f"({w.get('label')}); remedies: {'; '.join(p['remedies'])}")
    lines += ["", "Refusals:", ""] + [f"* {r['table']}: {r['reason']}" for r in rows
                                       if r["status"] != "chosen"]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="vehicle,segment")
    ap.add_argument("--release-dir", type=Path, default=None)
    args = ap.parse_args()
    rows = [run_table(name, args.release_dir) for name in args.tables.split(",")]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "partition.json").write_text(json.dumps(rows, indent=2, default=str) + "\n")
    (RESULTS / "partition.md").write_text("# Partitioned groups under the default policy "
                                          "(issue 32)\n\n" + markdown(rows))
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

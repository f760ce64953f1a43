"""The release choice's time per table, before and after a change (issue 50).

Each table is split 50/50 stratified by class (seed 0, as ``bench_release.py``); ASTRID's
search runs once on the release part with its defaults (seed 0) and its result is cached
(``--cache``), so every run of the choice starts from the same search. The choice
(``choose_release`` under the default policy, ``random_state=0``) is then timed, with
its own estimate (the "estimated" figure of its first log line). (The first before/after
rows also split the time by kind of step, through a patch of a private class since
removed: benchmarks use public names only.)

Recorded per table: rows, columns, the search's seconds, the choice's seconds, the
estimate and its ratio to the actual, the candidates measured, the status, and the
chosen release with every figure of it (label, grouping, recipe digest, utility, risks).
``--label`` names the code measured (``before``: run it with ``PYTHONPATH`` at the
older checkout); rows are merged into ``results/choice_speed.json`` by (table, label),
and ``results/choice_speed.md`` compares the labels side by side.

Tables: the paper's (``bench_e2e.ALL_TABLES``) and ``people-5000``, a generated
5,000 x 14 table of people (ages, sex, education, work, income band and the like, with
dependencies among them), made here so that no outside file is needed.

Run: ``.venv/bin/python benchmarks/bench_choice_speed.py --tables credit-a,diabetes
--label after``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import pickle
import platform
import re
import sys
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))
from people import people_table  # noqa: E402  (the generated table of people)


def table_by_name(name: str) -> tuple[pd.DataFrame, str]:
    """A whole benchmark table and its class column: ``people-N`` (:func:`people_table`),
    ``mixed-N`` (``make_mixed_table``, seed 1) or one of the paper's (``uci.load``)."""
    if name.startswith("people-"):
        return people_table(int(name.split("-")[1]))
    if name.startswith("mixed-"):
        from astrid_airflow import make_mixed_table

        return make_mixed_table(int(name.split("-")[1]), random_state=1)[0], "class"
    import uci

    return uci.load(name)


def _part(name: str) -> tuple[pd.DataFrame, str]:
    if name.startswith("people-"):
        from sklearn.model_selection import train_test_split

        table, target = people_table(int(name.split("-")[1]))
        part, _ = train_test_split(table, test_size=0.5, stratify=table[target],
                                   random_state=0)
        return part.reset_index(drop=True), target
    import bench_release

    _, target, part, _ = bench_release._split(name)
    return part, target


class _Steps(logging.Handler):
    """The choice's estimate, read from its first log line."""

    def __init__(self) -> None:
        super().__init__()
        self.estimate: float | None = None

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        m = re.search(r"release choice: about \d+ steps.*estimated ([^;]+)", msg)
        if m and self.estimate is None:
            self.estimate = _seconds(m.group(1))


def _seconds(text: str) -> float | None:
    total, found = 0.0, False
    for value, unit in re.findall(r"([\d.]+)\s*(h|min|s)\b", text):
        total += float(value) * {"h": 3600, "min": 60, "s": 1}[unit]
        found = True
    return total if found else None


def run_table(name: str, cache: Path) -> dict:
    from astrid_airflow import astrid, choose_release

    part, target = _part(name)
    cached = cache / f"{name}.search.pkl"
    if cached.exists():
        result, search_s = pickle.loads(cached.read_bytes())
    else:
        t0 = time.perf_counter()
        result = astrid(part, target=target, random_state=0).to_dict()
        search_s = time.perf_counter() - t0
        cached.write_bytes(pickle.dumps((result, search_s)))
    handler = _Steps()
    logger = logging.getLogger("astrid_airflow")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    t0 = time.perf_counter()
    art = choose_release(part, result, random_state=0)
    seconds = time.perf_counter() - t0
    logger.removeHandler(handler)
    rel = art.release
    chosen = None if rel.get("chosen") is None else rel["candidates"][rel["chosen"]]
    row = {"table": name, "rows": len(part), "columns": part.shape[1] - 1,
           "search_seconds": round(search_s, 2), "choice_seconds": round(seconds, 2),
           "estimate_seconds": handler.estimate,
           "estimate_ratio": None if not handler.estimate else
           round(handler.estimate / seconds, 3),
           "candidates": len(rel["candidates"]),
           "attacked": sum(bool(c.get("attacked")) for c in rel["candidates"]),
           # the utility splits scored over all candidates (the sequential stop's saving)
           "utility_splits": sum(c.get("utility_splits") or 0 for c in rel["candidates"]),
           "status": rel["status"], "reason": rel.get("reason")}
    if chosen is not None:
        row["chosen"] = {
            "label": chosen["label"], "grouping": chosen["grouping"],
            "recipe_sha256": hashlib.sha256(json.dumps(rel["recipe"], sort_keys=True)
                                            .encode()).hexdigest()[:16],
            "accuracy_drop": chosen["accuracy_drop"], "utility": rel["utility"],
            "risks": chosen["risks"], "fallbacks": rel.get("fallbacks")}
    return row


def markdown(rows: list[dict]) -> str:
    labels = sorted({r["label"] for r in rows}, key=lambda x: (x != "before", x))
    tables = list(dict.fromkeys(r["table"] for r in rows))
    by = {(r["table"], r["label"]): r for r in rows}
    head = "| table | rows × cols | search (s) |" + "".join(
        f" choice {lb} (s) | estimate/actual {lb} | status {lb} |" for lb in labels)
    lines = [head, "|" + "---|" * (3 + 3 * len(labels))]
    for t in tables:
        first = next(by[(t, lb)] for lb in labels if (t, lb) in by)
        cells = [t, f"{first['rows']:,} × {first['columns']}", f"{first['search_seconds']}"]
        for lb in labels:
            r = by.get((t, lb))
            if r is None:
                cells += ["", "", ""]
                continue
            status = r["status"] if r.get("chosen") is None else \
                f"chosen: {r['chosen']['label']} (loss {r['chosen']['accuracy_drop']:.3f}," \
                f" recipe {r['chosen']['recipe_sha256'][:8]})"
            cells += [f"{r['choice_seconds']}", f"{r['estimate_ratio']}", status]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Candidates, and where the time went (seconds per kind of step, where "
              "recorded):", ""]
    for r in rows:
        lines.append(f"* {r['table']} ({r['label']}): " + ", ".join(
            f"{k} {v}" for k, v in (r.get("steps_seconds") or {}).items()) +
            f"; {r['candidates']} candidates, {r['attacked']} attacked"
            + (f", {r['utility_splits']} utility splits" if r.get("utility_splits") else "")
            + f"; load "
            f"{r.get('load')} at the end (2 cores: above 1 another run shared them)")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="credit-a,diabetes")
    ap.add_argument("--label", default="after")
    ap.add_argument("--cache", default=str(HERE / ".cache-choice-speed"))
    ap.add_argument("--out", default=str(RESULTS / "choice_speed"))
    ap.add_argument("--describe", help="what the label's code is (kept in the results)")
    args = ap.parse_args()
    cache = Path(args.cache)
    cache.mkdir(exist_ok=True)
    out = Path(args.out)
    path = out.with_suffix(".json")
    doc = json.loads(path.read_text()) if path.exists() else {"rows": []}
    if args.describe:
        doc.setdefault("labels", {})[args.label] = args.describe
    for name in args.tables.split(","):
        row = {**run_table(name, cache), "label": args.label,
               "machine": f"{platform.machine()}, {os.cpu_count()} cores",
               "load": round(os.getloadavg()[0], 2)}
        doc["rows"] = [r for r in doc["rows"]
                       if (r["table"], r["label"]) != (name, args.label)] + [row]
        path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
        out.with_suffix(".md").write_text(
            "# The release choice's time per table (issue 50)\n\n"
            "Default policy, seed 0, the search cached (same result for every label); "
            "`benchmarks/bench_choice_speed.py`.\n\n" + "".join(
                f"* {lb}: {text}\n" for lb, text in (doc.get("labels") or {}).items())
            + "\n" + markdown(doc["rows"]))
        print(json.dumps({k: row[k] for k in ("table", "choice_seconds", "status")}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The gate's estimate against its time, per table (issue 50).

``astrid validate`` logs "astrid validate: ..., estimated <t>" before it works, from the
cost model of ``gate/_stage_cost.py``. This runs the gate (``validate_surrogate``, the
default policy, seed 2) on a GoldenEye surrogate of each table and records the estimate,
the actual seconds, their ratio and each part's time (the DEBUG step records): the
utility check, the shadow-release attacks and the rest after the read. The artefact is
a quick search's (nb, R' = R = 2: the gate's cost depends on the table's shape and its
grouping's count, not on how well the grouping was learned) recorded with the default
svm preset, which the utility check fits; no release recipe. The first table of a run also pays the
gate's imports (Great Expectations), as every ``astrid validate`` process does.

Tables: the paper's (``uci.load``), ``people-N`` (``bench_choice_speed.people_table``)
and ``mixed-N`` (``make_mixed_table``, 30 attributes).

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_gate_estimate.py [--tables
diabetes,credit-a,people-5000,mixed-20000] [--label after]``. Rows are merged into
``results/gate_estimate.{json,md}`` by (table, label).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))
from bench_choice_speed import table_by_name  # noqa: E402  (one loader per table name)
from bench_stage_rates import Steps  # noqa: E402  (the stages' step times)

_UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0, "days": 86400.0}


class _Estimate(logging.Handler):
    """The seconds of the validate stage's estimate line."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seconds: float | None = None

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        m = re.match(r"astrid validate: .*estimated ([0-9.]+) (s|min|h|days) \(", text)
        if m:
            self.seconds = float(m.group(1)) * _UNITS[m.group(2)]


def run_table(name: str) -> dict:
    from astrid_airflow import GroupingArtefact, astrid, make_surrogate, validate_surrogate

    table, target = table_by_name(name)
    result = astrid(table, target=target, classifier="nb", n_search=2, n_test=2,
                    random_state=0, progress=False).to_dict()
    result["classifier"] = "svm"  # the default preset, which the utility check fits
    art = GroupingArtefact.from_result(result, table, created_at="2026-01-01T00:00:00Z")
    surrogate = make_surrogate(table, art, random_state=1)
    estimate, steps = _Estimate(), Steps()
    logger = logging.getLogger("astrid_airflow")
    for h in (estimate, steps):
        logger.addHandler(h)
    logger.setLevel(logging.DEBUG)
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = Path(tmp) / "surrogate.parquet"
        surrogate.to_parquet(path, index=False)
        t0 = time.perf_counter()
        validate_surrogate(table, path, art, random_state=2, remedies=False)
        seconds = time.perf_counter() - t0
    for h in (estimate, steps):
        logger.removeHandler(h)
    took = dict(steps.of("validate"))
    parts = {"read": took.get("reading the tables"),
             "utility": took.get("check surrogate_utility"),
             "attacks": took.get("check attack_risks")}
    parts["rest"] = sum(took.values()) - sum(v or 0.0 for v in parts.values())
    return {"table": name, "rows": len(table), "columns": table.shape[1] - 1,
            "groups": len(art.grouping.groups), "seconds": round(seconds, 2),
            "estimate_seconds": estimate.seconds,
            "estimate_ratio": None if not estimate.seconds else
            round(estimate.seconds / seconds, 3),
            "parts": {k: None if v is None else round(v, 2) for k, v in parts.items()}}


def markdown(doc: dict) -> str:
    lines = ["# The gate's estimate against its time (issue 50)", "",
             "`benchmarks/bench_gate_estimate.py`: `validate_surrogate` on a GoldenEye "
             "surrogate, default policy, seed 2.", ""]
    lines += [f"* {lb}: {text}" for lb, text in (doc.get("labels") or {}).items()]
    lines += ["", "| table | label | rows × cols | seconds | estimate (s) | estimate/actual "
              "| utility (s) | attacks (s) | rest (s) | load |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(doc["rows"], key=lambda r: (r["rows"] * r["columns"], r["label"])):
        p = r["parts"]
        lines.append(f"| {r['table']} | {r['label']} | {r['rows']:,} × {r['columns']} | "
                     f"{r['seconds']} | {r['estimate_seconds']} | {r['estimate_ratio']} | "
                     f"{p['utility']} | {p['attacks']} | {round(p['rest'], 2)} | "
                     f"{r.get('load')} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="diabetes,credit-a,people-5000,mixed-20000")
    ap.add_argument("--label", default="after")
    ap.add_argument("--describe", help="what the label's code is (kept in the results)")
    ap.add_argument("--out", default=str(RESULTS / "gate_estimate"))
    a = ap.parse_args(argv)
    out = Path(a.out)
    path = out.with_suffix(".json")
    doc = json.loads(path.read_text()) if path.exists() else {"rows": []}
    if a.describe:
        doc.setdefault("labels", {})[a.label] = a.describe
    for name in a.tables.split(","):
        row = {**run_table(name), "label": a.label,
               "machine": f"{platform.machine()}, {os.cpu_count()} cores",
               "load": round(os.getloadavg()[0], 2)}
        doc["rows"] = [r for r in doc["rows"]
                       if (r["table"], r["label"]) != (name, a.label)] + [row]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2) + "\n")
        out.with_suffix(".md").write_text(markdown(doc))
        print(json.dumps({k: row[k] for k in ("table", "seconds", "estimate_seconds")}),
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: exact disclosure measures (per group and per pair) of a 10M x 20 release.

Generates the table of ``bench_shuffle.py`` (``--rows`` rows, default 10 million: 10
float64, 4 int64 with 10^6 levels, 3 dictionary-encoded categoricals, 3 strings with
1000 levels, a 3-class label) as Parquet, shuffles it with the all-singletons grouping
(the worst case for pairs: 20 groups, 190 pairs), then measures in a fresh subprocess
:func:`astrid_airflow.disclosure_risk` on the two Parquet files (every group's
k-anonymity, share below k and class disclosure, and every pair's linked share with
its expectation and sd). The files are read one column at a time, so the memory figure
is the computation's own: peak RSS of that process minus an interpreter with the same
imports, against the table's size in Arrow.

Writes ``benchmarks/results/disclosure.json`` and ``.md``. Run:
``nice -n 10 python benchmarks/bench_disclosure.py [--rows N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_shuffle as shuffle_bench

RESULTS = Path(__file__).resolve().parent / "results"


def phase_risk(src: str, out: str) -> dict:
    import resource

    from astrid_airflow import Grouping, disclosure_risk, worst_group, worst_pair

    t0 = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    risk = disclosure_risk(src, out, target="class",
                           grouping=Grouping.singletons(shuffle_bench.columns()), k=5)
    seconds = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    # CPU seconds as well: on a shared machine the wall time mostly measures the others
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    wg = worst_group(risk.groups)
    wp = worst_pair(risk.pairs)
    return {"seconds": seconds, "cpu_seconds": cpu, "groups": len(risk.groups),
            "pairs": len(risk.pairs),
            "worst_group": wg.to_dict(), "worst_pair": wp.to_dict(),
            "groups_detail": [g.to_dict() for g in risk.groups],
            "max_abs_excess": max(abs(p.excess) for p in risk.pairs)}


def phase_table_mib(src: str, out: str) -> dict:
    import pyarrow.parquet as pq

    return {"table_mib": pq.read_table(src).nbytes / 2**20}


PHASES = {"risk": phase_risk, "table": phase_table_mib}


def run_phase(name: str, src: str, out: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--phase", name, "--src", src,
                           "--out", out], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"phase {name} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def baseline_mib() -> float:
    here = str(Path(__file__).parent)
    code = ("import astrid_airflow as a, pyarrow.parquet; a.disclosure_risk;"
            f"import sys; sys.path.insert(0, {here!r}); import bench_shuffle as b;"
            "print(b.peak_mib())")
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                text=True, check=True).stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--phase", choices=sorted(PHASES))
    ap.add_argument("--src")
    ap.add_argument("--out")
    ap.add_argument("--no-write", action="store_true", help="do not write results/")
    args = ap.parse_args()
    if args.phase:
        d = PHASES[args.phase](args.src, args.out)
        d["peak_mib"] = shuffle_bench.peak_mib()
        print(json.dumps(d))
        return

    with tempfile.TemporaryDirectory(prefix="bench-disclosure-") as tmp:
        src = os.path.join(tmp, "table.parquet")
        out = os.path.join(tmp, "surrogate.parquet")
        t0 = time.perf_counter()
        gen = shuffle_bench.generate(src, args.rows, seed=0)
        print(f"generated {args.rows:,} rows in {time.perf_counter() - t0:.1f} s", flush=True)
        shuffled = shuffle_bench.run_phase("shuffle", src, out)
        print("shuffle", json.dumps(shuffled), flush=True)
        table = run_phase("table", src, out)
        base = baseline_mib()
        risk = run_phase("risk", src, out)
        print("risk", json.dumps({k: v for k, v in risk.items() if k != "groups_detail"}),
              flush=True)

    extra = risk["peak_mib"] - base
    result = {
        "rows": args.rows, "attributes": len(shuffle_bench.columns()),
        "grouping": "all singletons (20 groups, 190 pairs: the most pairs)",
        "parquet_mib": gen["bytes_on_disk"] / 2**20,
        "arrow_table_mib": table["table_mib"],
        "interpreter_baseline_mib": base,
        "seconds": risk["seconds"], "cpu_seconds": risk.get("cpu_seconds"),
        "rows_per_second": args.rows / risk["seconds"],
        "peak_mib": risk["peak_mib"], "extra_mib": extra,
        "extra_memory_ratio": extra / table["table_mib"],
        "groups": risk["groups"], "pairs": risk["pairs"],
        "worst_group": risk["worst_group"], "worst_pair": risk["worst_pair"],
        "max_abs_excess": risk["max_abs_excess"],
        "groups_detail": risk["groups_detail"],
        "targets": {"seconds": 60, "memory_ratio": 2.0},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform(),
                    "load_average_at_end": os.getloadavg()},
    }
    md = render(result)
    print(md)
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "disclosure.json").write_text(json.dumps(result, indent=2) + "\n")
        (RESULTS / "disclosure.md").write_text(md)


def _num(v: object) -> str:
    return "not recorded" if v is None else f"{v:.1f}"


def render(r: dict) -> str:
    wg, wp, tgt = r["worst_group"], r["worst_pair"], r["targets"]
    load = ", ".join(f"{x:.1f}" for x in r["machine"]["load_average_at_end"])
    rows = "\n".join(
        f"| {', '.join(g['columns'])} | {g['k_min']} | {g['share_below_k']:.3f} "
        f"| {g['class_disclosure_share']:.3f} |" for g in r["groups_detail"])
    return f"""# Disclosure benchmark: {r['rows']:,} rows x {r['attributes']} attributes

`disclosure_risk(original.parquet, surrogate.parquet, k=5)` with the grouping
{r['grouping']}. Table as in `shuffle.md` (Parquet {r['parquet_mib']:.0f} MiB,
{r['arrow_table_mib']:.0f} MiB in Arrow). Machine: {r['machine']['cpus']} CPUs shared with
other jobs (load average at the end: {load}), Python {r['machine']['python']}.

| measure | value | target |
|---|---:|---:|
| seconds (hash per group, O(n) per pair) | {r['seconds']:.1f} | ≤ {tgt['seconds']} |
| CPU seconds | {_num(r.get('cpu_seconds'))} | |
| rows/s | {r['rows_per_second']:,.0f} | |
| peak RSS above an interpreter with the imports (MiB) | {r['extra_mib']:.0f} | |
| ... times the table in Arrow | {r['extra_memory_ratio']:.2f}x | ≤ {tgt['memory_ratio']}x |

Worst group: {', '.join(wg['columns'])} (k_min {wg['k_min']}, share below k
{wg['share_below_k']:.3f}, class disclosure {wg['class_disclosure_share']:.3f}). Worst pair:
{' + '.join(', '.join(g) for g in wp['groups'])} (linked {wp['linked_share']:.3g}, expected
{wp['expected_linked_share']:.3g}); largest |linked − expected| over the
{r['pairs']} pairs: {r['max_abs_excess']:.2g}.

| group | k_min | share below k=5 | class disclosure |
|---|---:|---:|---:|
{rows}
"""


if __name__ == "__main__":
    main()

"""Benchmark: the whole risk computation (``measure_risk``, as ``astrid risk`` and the
gate run it) on a 10M x 20 release, beside the table's size.

Generates the table of ``bench_shuffle.py`` (``--rows`` rows, default 10 million: 10
float64, 4 int64 with 10^6 levels, 3 dictionary-encoded categoricals, 3 strings with
1000 levels, a 3-class label) as Parquet and shuffles it with the all-singletons grouping
(20 groups, 190 pairs: the most pairs). A fresh subprocess then reads both files as
``astrid risk`` does (:func:`astrid_airflow.read_table`) and times
:func:`astrid_airflow.measure_risk` (per-group disclosure, exact; pair linkage, on a key
sample above ``PAIR_SAMPLE_ROWS`` rows; every attack on a shadow release of 40 000 rows):
wall and CPU seconds, and the peak RSS above the process with both tables loaded,
against one table's size in pandas (``memory_usage(deep=True)``). The machine is shared,
so the load average (``os.getloadavg``) at the start and end is recorded too.

Writes ``benchmarks/results/risk_<rows>.json`` and ``.md``. Run:
``nice -n 5 python benchmarks/bench_risk.py [--rows N] [--n-jobs J]``
(``--src``/``--out``: existing original/surrogate Parquet files, not regenerated).
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


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> bool:
    """Reset VmHWM (Linux >= 4.0), so the peak is the computation's own."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def phase_risk(src: str, out: str, n_jobs: int) -> dict:
    import resource

    from astrid_airflow import (
        PAIR_SAMPLE_ROWS,
        Grouping,
        measure_risk,
        read_table,
        worst_group,
        worst_pair,
    )

    original = read_table(src)
    surrogate = read_table(out)
    table_mib = original.memory_usage(deep=True).sum() / 2**20
    loaded = _rss_mib()
    reset = _reset_peak()
    load_start = os.getloadavg()
    t0 = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    report = measure_risk(original, surrogate, target="class",
                          grouping=Grouping.singletons(shuffle_bench.columns()),
                          random_state=0, n_jobs=n_jobs or None)
    seconds = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    peak = shuffle_bench.peak_mib()
    wg, wp = worst_group(report.groups), worst_pair(report.pairs)
    return {"seconds": seconds, "cpu_seconds": cpu, "table_mib": table_mib,
            "loaded_rss_mib": loaded, "peak_mib": peak, "peak_reset": reset,
            "extra_mib": peak - loaded, "load_start": load_start,
            "load_end": os.getloadavg(), "groups": len(report.groups),
            "pairs": len(report.pairs), "worst_group": wg.to_dict(),
            "worst_pair": wp.to_dict(),
            "max_excess_over_tolerance": max(p.excess / p.tolerance(0.03)
                                             for p in report.pairs),
            "sample_fraction": min(p.sample_fraction for p in report.pairs),
            "pair_sample_rows": PAIR_SAMPLE_ROWS,
            "attacks": {k: [r.risk for r in v] for k, v in (
                ("singling_out", report.singling_out), ("linkability", report.linkability),
                ("inference", report.inference))},
            "shadow": report.shadow}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--n-jobs", type=int, default=0, help="threads (0: every core)")
    ap.add_argument("--src")
    ap.add_argument("--out")
    ap.add_argument("--phase", choices=["risk"])
    ap.add_argument("--no-write", action="store_true", help="do not write results/")
    args = ap.parse_args()
    if args.phase:
        print(json.dumps(phase_risk(args.src, args.out, args.n_jobs)))
        return

    with tempfile.TemporaryDirectory(prefix="bench-risk-") as tmp:
        src, out = args.src, args.out
        if not (src and out):
            src = os.path.join(tmp, "table.parquet")
            out = os.path.join(tmp, "surrogate.parquet")
            shuffle_bench.generate(src, args.rows, seed=0)
            shuffle_bench.run_phase("shuffle", src, out)
        proc = subprocess.run([sys.executable, __file__, "--phase", "risk", "--src", src,
                               "--out", out, "--n-jobs", str(args.n_jobs)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"risk phase failed:\n{proc.stderr}")
        risk = json.loads(proc.stdout.strip().splitlines()[-1])
    result = {"rows": args.rows, "attributes": len(shuffle_bench.columns()),
              "grouping": "all singletons (20 groups, 190 pairs)", "n_jobs": args.n_jobs,
              **risk, "memory_ratio": risk["extra_mib"] / risk["table_mib"],
              "targets": {"seconds": 60, "memory_ratio": 2.0},
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "platform": platform.platform()}}
    md = render(result)
    print(md)
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        stem = RESULTS / f"risk_{args.rows}"
        stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
        stem.with_suffix(".md").write_text(md)


def render(r: dict) -> str:
    wg, wp, tgt = r["worst_group"], r["worst_pair"], r["targets"]

    def load(v: list) -> str:
        return ", ".join(f"{x:.1f}" for x in v)

    return f"""# Risk benchmark: {r['rows']:,} rows x {r['attributes']} attributes

`measure_risk(original, surrogate, k=5, n_attacks=200)` on pandas tables read as
`astrid risk` reads them, grouping {r['grouping']}; threads: {r['n_jobs'] or 'every core'}.
Machine: {r['machine']['cpus']} CPUs shared with other sessions (load average at the
start {load(r['load_start'])}, at the end {load(r['load_end'])}), Python
{r['machine']['python']}.

| measure | value | target |
|---|---:|---:|
| wall seconds | {r['seconds']:.1f} | ≤ {tgt['seconds']} |
| CPU seconds (both cores summed) | {r['cpu_seconds']:.1f} | |
| one table in pandas (MiB) | {r['table_mib']:.0f} | |
| peak RSS above both tables loaded (MiB) | {r['extra_mib']:.0f} | |
| ... times the table | {r['memory_ratio']:.2f}x | ≤ {tgt['memory_ratio']}x |

Per-group measures exact. Pairs: linkage on a key sample of about
{r['pair_sample_rows']:,} rows per pair (fraction {r['sample_fraction']:.3g}) where a group
has more than 4096 keys, exact otherwise. Largest excess / tolerance over the
{r['pairs']} pairs: {r['max_excess_over_tolerance']:.3f} (a pair fails above 1). Worst
group: {', '.join(wg['columns'])} (k_min {wg['k_min']}, class disclosure
{wg['class_disclosure_share']:.3f}); worst pair:
{' + '.join(', '.join(g) for g in wp['groups'])} (linked {wp['linked_share']:.3g},
expected {wp['expected_linked_share']:.3g}). Shadow release: {r['shadow']}.
"""


if __name__ == "__main__":
    main()

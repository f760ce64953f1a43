"""The pair screen on the large-table path: ``screen="auto"`` screens a table of more
than 20,000 rows of any width from 4 attributes on, and the ``hgb`` search over the
screen's blocks learns every planted group (pairs and the pure triple) at each width.

One run per width: ``make_planted(rows, width, random_state=width)``, ``astrid`` with
``classifier="hgb"``, adaptive mode, the search on a stratified sample (``--sample``;
at 4,000 rows the triple is not learned) and the default ``screen="auto"``. Reported per
width: whether the run screened, whether every planted group sits inside one block and
inside one learned group, the learned k and the seconds.

``--parity 1`` adds a pure parity triple (``make_planted(n_parity=1)``: every pair of
it independent given the class, found by the triple screen only), and ``--defaults``
runs the learn's own settings for the table's size (``large_table_defaults``: hgb,
``sample="auto"``, adaptive; R' and R as ``astrid``'s defaults) instead of the sample
and R given: issue 50's check is ``--rows 300000 --parity 1 --defaults``, written to
``results/screen_parity.*``.

Run ``python benchmarks/bench_screen_auto.py`` (three widths, about 5-8 minutes on 2
cores); it writes ``benchmarks/results/screen_auto.json`` and ``.md``.
``tests/project/test_bench_smoke.py`` runs it on a small table (``--rows 2000 --widths
6``, with ``--screen on``: below 20,000 rows auto does not screen) to keep it working;
``tests/engine/test_screen_blocks.py`` checks the auto rule at every width and the
screen's blocks on a fixed seed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from astrid_airflow import astrid, make_planted
from astrid_airflow.engine import large_table_defaults

RESULTS = Path(__file__).resolve().parent / "results"


def run_width(rows: int, width: int, *, sample: int, n_search: int, n_test: int,
              screen: bool | str = "auto", n_parity: int = 0, defaults: bool = False,
              n_jobs: int = 1) -> dict:
    """One run at ``width``: what the screen and the search found for the planted groups."""
    table, planted = make_planted(rows, width, n_parity=n_parity, random_state=width)
    settings = large_table_defaults(rows) if defaults else dict(
        classifier="hgb", sample=sample, adaptive=True, n_search=n_search, n_test=n_test)
    started = time.perf_counter()
    result = astrid(table, target="class", random_state=0, screen=screen, n_jobs=n_jobs,
                    progress=False, **settings)
    seconds = time.perf_counter() - started
    blocks = [set(b) for b in result.screen["blocks"]] if result.screen else []
    learned = [set(g) for g in result.grouping.to_list()]
    return {"rows": rows, "width": width, "screened": result.screen is not None,
            "planted": planted,
            "in_blocks": all(any(set(g) <= b for b in blocks) for g in planted),
            "learned": all(any(set(g) <= lg for lg in learned) for g in planted),
            "k": result.k, "grouping": result.grouping.to_list(), "seconds": seconds,
            "n_parity": n_parity, "triples": (result.screen or {}).get("triples"),
            "sample_rows": (result.sample or {}).get("rows")}


def _markdown(rows: list[dict], settings: dict) -> str:
    a = settings["args"]
    how = ("the learn's defaults for the size (hgb, sample auto, adaptive, astrid's R' "
           "and R)" if a["defaults"] else f"hgb, adaptive, sample {a['sample']}, "
           f"R' = {a['n_search']}, R = {a['n_test']}")
    out = ["# The pair and triple screen on the large-table path (screen=\"auto\")", "",
           f"{settings['machine']}, Python {settings['python']}, {settings['date']}; "
           f"{how}; {a['parity']} pure parity triple(s) planted; {a['jobs']} job(s).", "",
           "| rows | width | screened | planted groups in blocks | planted groups learned "
           "| k | triples tested / found | sample | s |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        t = r.get("triples") or {}
        out.append(f"| {r['rows']:,} | {r['width']} | {r['screened']} | {r['in_blocks']} | "
                   f"{r['learned']} | {r['k']} | {t.get('tested', 0):,} / "
                   f"{t.get('n_found', 0)} | {r.get('sample_rows') or 'all'} | "
                   f"{r['seconds']:.0f} |")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20_002)
    ap.add_argument("--widths", type=int, nargs="+", default=[20, 30, 40])
    ap.add_argument("--sample", type=int, default=8_000)
    ap.add_argument("--n-search", type=int, default=10)
    ap.add_argument("--n-test", type=int, default=40)
    ap.add_argument("--screen", choices=["auto", "on"], default="auto")
    ap.add_argument("--parity", type=int, default=0)
    ap.add_argument("--defaults", action="store_true")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", default=str(RESULTS / "screen_auto"))
    args = ap.parse_args(argv)
    screen = {"auto": "auto", "on": True}[args.screen]
    rows = []
    for width in args.widths:
        rows.append(run_width(args.rows, width, sample=args.sample, n_search=args.n_search,
                              n_test=args.n_test, screen=screen, n_parity=args.parity,
                              defaults=args.defaults, n_jobs=args.jobs))
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "grouping"}), flush=True)
    settings = {"machine": f"{platform.machine()} {os.cpu_count()} cpu",
                "python": sys.version.split()[0], "date": time.strftime("%Y-%m-%d"),
                "args": vars(args)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"runs": rows, "settings": settings},
                                                   indent=2) + "\n")
    out.with_suffix(".md").write_text(_markdown(rows, settings))
    return 0


if __name__ == "__main__":
    sys.exit(main())

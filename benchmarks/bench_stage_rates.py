"""The rates behind the stages' estimate lines: shuffle, validate and publish (issue 33).

    .venv/bin/python benchmarks/bench_stage_rates.py      # 100,000, 300,000, 1,000,000
    .venv/bin/python benchmarks/bench_stage_rates.py --rows 20000 50000 --out /tmp/r.json

Every stage logs "astrid <stage>: ..., estimated <t>" before it works; ``t`` comes from a
cost model ``seconds = fixed + rows x columns / cells_per_second`` (publish: staged bytes
per second) whose constants are measured here, on this machine, and copied into the
stage's module (``release/_shuffle_progress.py``, ``gate/_gate.py``,
``pipeline/_publish.py``) with a comment citing ``benchmarks/results/stage_rates.json``.

The table: the batch of a data platform, ``make_mixed_table(rows, random_state=1)`` (30
attributes and ``class``), written as Parquet. Its artefact: the planted grouping (two
pairs; channel x product, which no recipe makes safe, split as the release choice splits
it; every other attribute alone) with the release recipe ``fit_recipe`` fits on a
50,000-row reference (``random_state=0``), saved in a store with its gate suite. Per
size, each part timed ``--repeats`` times (default 2; the fastest kept: another job on the
shared cores only ever slows a run), in this process, in pipeline order:

* ``shuffle_file``: read, recipe, local suppression, permutations, intact-row swaps,
  write (the shuffle without its metrics);
* ``surrogate_metrics`` with and without the utility check (what ``astrid shuffle``
  measures before it publishes; ``--no-utility`` skips the fits);
* ``astrid validate`` (in process, ``cli.main``): the gate with its signed receipt
  (``--max-accuracy-drop 0.5``: the split pair costs accuracy, and publish needs a
  passing receipt; every check runs either way);
* ``astrid publish`` (in process): hash, canonical re-write, promotion, trusting the
  signed receipt (the gate does not run again; with ``--original``/``--artefact`` it would,
  at the validate rate).

The gate's and publish's parts are their own steps' times (the stage logs each at DEBUG:
``validate_utility``, ``validate_attacks``, ``validate_rest`` after the read;
``publish_rest`` after the read and hash), the figures their estimates use. The two
largest sizes give each part's ``fixed`` seconds and its rate exactly (a line through two
points; a negative intercept is set to 0 and the rate taken at the larger size); each
part's ``check`` lists what the line predicts at every size beside what was measured.
Not every part is a line in rows x columns: the metrics' expected intact-row proportion
(``release._match_probability``) took 45 of the metrics' 46 s at 100,000 rows and less at
300,000 (which rows go through its general path depends on the group counts), and the
disclosure measures switch to sampled pairs above ``PAIR_SAMPLE_ROWS`` (200,000 rows).
Hence the third size, 1,000,000 rows (issue 33's scale): the line is fitted where the
stages last minutes, and the 100,000-row check shows how far it is below that. The
machine's load average is recorded at the start and end of each run: on the shared two
cores another job may run, and the figures are then slower than an idle machine's (the
utility check's threaded classifier fits suffer most: 4 s to 36 s for the same 20,000-row
fit, measured while another benchmark ran).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import platform
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
SIGNING_KEY = "bench-stage-rates-key-0123456789abcdef"
RECIPE_ROWS = 50_000


def artefact_store(root: Path):
    """The planted grouping with its fitted recipe, saved as ``mixed`` in ``root``."""
    import dataclasses

    from astrid_airflow import ArtefactStore, Grouping, GroupingArtefact, fit_recipe
    from astrid_airflow.engine import make_mixed_table
    from astrid_airflow.gate import gate_extra_files

    ref, planted = make_mixed_table(RECIPE_ROWS, random_state=0)
    planted = planted[:2]  # channel x product (6 x 120 levels) split, as the choice does
    planted_cols = {c for g in planted for c in g}
    groups = planted + [[c] for c in ref.columns if c != "class" and c not in planted_cols]
    grouping = Grouping(groups)
    recipe, _ = fit_recipe(ref, target="class", grouping=grouping, k=5)
    result = {"grouping": grouping.to_list(), "k": grouping.k, "table": [],
              "target": "class", "classifier": "hgb", "scoring": "accuracy", "alpha": 0.05,
              "n_search": 20, "n_test": 40, "random_state": 0}
    art = GroupingArtefact.from_result(result, ref, created_at="2026-01-01T00:00:00Z")
    art = dataclasses.replace(art, release={"status": "given", "recipe": recipe.to_dict()})
    version = ArtefactStore(root).save("mixed", art, extra_files=gate_extra_files(art))
    return art, f"{root}/mixed@{version}", len(recipe.steps)


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


def cli(argv: list[str]) -> float:
    """Seconds of one ``astrid`` command run in this process (its stdout discarded)."""
    from astrid_airflow.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        seconds, code = timed(main, argv)
    if code != 0:
        raise SystemExit(f"astrid {argv[0]} exited {code}")
    return seconds


class Steps(logging.Handler):
    """The stages' step times: the DEBUG records ``astrid <stage>: step <phase> took``."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.taken: list[tuple[str, str, float]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if isinstance(record.args, tuple) and record.msg.endswith("took %.3f s"):
            self.taken.append(record.args)

    def of(self, stage: str) -> list[tuple[str, float]]:
        out = [(phase, took) for s, phase, took in self.taken if s == stage]
        self.taken = [t for t in self.taken if t[0] != stage]
        return out


def one_size(rows: int, art, ref: str, work: Path, steps: Steps) -> dict:
    from astrid_airflow.engine import make_mixed_table
    from astrid_airflow.release import shuffle_file, surrogate_metrics

    batch, _ = make_mixed_table(rows, random_state=1)
    src, staged = work / "batch.parquet", work / "staging" / "surrogate.parquet"
    staged.parent.mkdir(exist_ok=True)
    batch.to_parquet(src, index=False)
    columns = len(batch.columns)
    del batch
    load = [os.getloadavg()[0]]
    out: dict = {"rows": rows, "columns": columns, "cells": rows * columns,
                 "input_bytes": src.stat().st_size}
    out["shuffle_file"], _ = timed(shuffle_file, src, art, staged, random_state=1,
                                   overwrite=True)
    out["shuffle_steps"] = steps.of("shuffle")
    out["staged_bytes"] = staged.stat().st_size
    out["metrics_utility"], _ = timed(surrogate_metrics, str(src), str(staged), art,
                                      utility=True, random_state=1)
    out["metrics_no_utility"], _ = timed(surrogate_metrics, str(src), str(staged), art,
                                         utility=False, random_state=1)
    out["validate"] = cli(["validate", "--original", str(src), "--surrogate", str(staged),
                           "--artefact", ref, "--seed", "2", "--json",
                           # the split pair loses its planted signal: a utility threshold
                           # that lets the receipt pass, so that publish has one to trust
                           "--max-accuracy-drop", "0.5"])
    gate = out["validate_steps"] = steps.of("validate")
    took = dict(gate)
    out["validate_read"] = took["reading the tables"]
    out["validate_utility"] = took["check surrogate_utility"]
    out["validate_attacks"] = took["check attack_risks"]
    out["validate_rest"] = sum(t for p, t in gate) - out["validate_read"] - \
        out["validate_utility"] - out["validate_attacks"]
    public = work / "public" / "release.parquet"
    public.parent.mkdir(exist_ok=True)
    out["publish"] = cli(["publish", str(staged), "--destination", str(public),
                          "--receipt", str(staged.parent / "surrogate.gate.json"),
                          "--release-id", f"r{rows}", "--json"])
    out["publish_steps"] = steps.of("publish")
    out["publish_rest"] = sum(t for p, t in out["publish_steps"]
                              if p != "reading and hashing the staged file")
    load.append(os.getloadavg()[0])
    out["load_average"] = load
    return out


def fastest(runs: list[dict]) -> dict:
    """Each part's least seconds over the runs of one size (the others' load only ever
    slows a run down); the steps and load averages of every run are kept."""
    out = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, float):
            out[key] = min(r[key] for r in runs)
    out["runs"] = [{k: v for k, v in r.items() if k.endswith(("_steps", "load_average"))}
                   for r in runs]
    return out


def fit(sizes: list[dict], part: str, unit: str) -> dict:
    """``fixed + size / rate`` through the two largest sizes measured (``unit``: the size's
    key), and what it predicts at every size beside what was measured there."""
    a, b = sorted(sizes, key=lambda s: s[unit])[-2:]
    slope = (b[part] - a[part]) / (b[unit] - a[unit]) if b[unit] != a[unit] else 0.0
    fixed = a[part] - slope * a[unit]
    if slope <= 0 or fixed < 0:  # noise: take the larger size's rate, no fixed part
        fixed, slope = 0.0, b[part] / b[unit]
    return {"fixed_seconds": round(fixed, 3), f"{unit}_per_second": round(1 / slope),
            "unit": unit,
            "check": [{"rows": s["rows"], "measured": round(s[part], 2),
                       "model": round(fixed + slope * s[unit], 2)} for s in sizes]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+",
                        default=[100_000, 300_000, 1_000_000])
    parser.add_argument("--out", default=str(RESULTS / "stage_rates.json"))
    parser.add_argument("--repeats", type=int, default=2,
                        help="runs per size; each part's fastest is kept (default 2)")
    args = parser.parse_args()
    os.environ["ASTRID_SIGNING_KEY"] = SIGNING_KEY
    import astrid_airflow

    sizes = []
    steps = Steps()
    log = logging.getLogger("astrid_airflow")
    log.addHandler(steps)  # (a handler here: the commands print no lines of their own)
    log.setLevel(logging.DEBUG)
    with tempfile.TemporaryDirectory(prefix="astrid_rates_") as tmp:
        art, ref, n_steps = artefact_store(Path(tmp) / "store")
        for rows in args.rows:
            runs = []
            for i in range(args.repeats):
                work = Path(tmp) / f"r{rows}-{i}"
                work.mkdir()
                runs.append(one_size(rows, art, ref, work, steps))
                print(json.dumps(runs[-1]), flush=True)
            sizes.append(fastest(runs))
    rates = {part: fit(sizes, part, "cells") for part in (
        "shuffle_file", "metrics_utility", "metrics_no_utility", "validate",
        "validate_utility", "validate_attacks", "validate_rest")}
    rates.update({part: fit(sizes, part, "staged_bytes") for part in ("publish",
                                                                      "publish_rest")})
    record = {"what": "seconds of each stage part (see the script's docstring) and the "
              "cost model fitted through them: seconds = fixed + size / rate",
              "script": "benchmarks/bench_stage_rates.py", "version": astrid_airflow.__version__,
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "platform": platform.platform()},
              "recipe_steps": n_steps, "sizes": sizes, "rates": rates,
              "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    Path(args.out).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(rates, indent=2))


if __name__ == "__main__":
    main()

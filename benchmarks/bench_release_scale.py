"""A whole release at data-platform scale, end to end, as a scheduled job runs it (issue 33).

    .venv/bin/python benchmarks/bench_release_scale.py                   # 1,000,000 x 30
    .venv/bin/python benchmarks/bench_release_scale.py --rows 100000 --no-dag
    .venv/bin/python benchmarks/bench_release_scale.py --rows 20000 --keep /tmp/rs

The table: ``make_mixed_table(rows)`` (``astrid_airflow.make_mixed_table``: 18 numeric
columns — ages, skewed amounts with zeros, counts, ratios — and 12 categorical string
columns of 2 to 300 Zipf-like levels; a binary class planted in amount x region,
tenure_months x utilisation and channel x product). The **reference** is that table
(seed ``--seed``), written as Parquet; the **batch** released is a new table of the same
size and shape drawn with seed ``--seed + 1`` (a new day's data): the grouping and
recipe learned on the reference are applied to rows they never saw.

The whole default pipeline through the command line, each stage a subprocess with stderr
in a log file (not a terminal), in order:

1. ``astrid learn REF --target class --store S --name N --jobs 2 --seed 0 --json`` — the
   defaults otherwise: above 20,000 rows they resolve by themselves to ``hgb``,
   ``--sample auto`` and adaptive mode; at 20,000 rows or fewer the defaults are the
   paper's exact SVM run, so this benchmark passes the large-table flags explicitly
   there (``--classifier hgb --sample auto --adaptive --screen on``, recorded in
   ``learn_args``) to measure the same path at every size;
2. ``astrid shuffle BATCH --artefact S/N --out staging/surrogate.parquet --seed 1``;
3. ``astrid validate --original BATCH --surrogate ... --artefact S/N --seed 2`` — the
   gate, writing its signed receipt ``surrogate.gate.json``;
4. ``astrid publish staging/surrogate.parquet --destination public/release.parquet
   --receipt staging/surrogate.gate.json`` — ``ASTRID_SIGNING_KEY`` is set in every
   stage's environment, so publish trusts the signed receipt and the gate runs once.

Per stage: the exit code; wall seconds; CPU seconds of the stage's whole process tree
(user + sys: ``getrusage(RUSAGE_CHILDREN)`` deltas with this process a child subreaper,
so joblib/loky workers that outlive their parent are reparented here and counted; also
the root's own ``wait4`` figure and a psutil sample of every process seen, to show what
each method includes); peak memory (the tree's summed RSS polled every 0.25 s, and the
largest single process's ``ru_maxrss``) and its ratio to the table's in-memory size
(``DataFrame.memory_usage(deep=True)``); the stage's log lines (estimate, progress);
the 1-minute load average at the start and end. Then (``--dag``, the default) the same
release through the publishing DAG with ``airflow dags test`` in a throw-away
``AIRFLOW_HOME`` (SQLite, ``airflow db migrate``, as ``scripts/demo.sh``), ``--conf``
pointing ``reference`` and ``batch`` at the Parquet files with ``classifier: auto`` and
``n_search``/``n_test`` null (the library's defaults for the table's size), recording the
run's totals and each task's duration from the metadata database.

Results: ``benchmarks/results/release_scale_<rows>x30.json`` and a summary over every
such file, ``benchmarks/results/release_scale.md``. The full size is heavy (tens of
minutes on 2 cores): not part of any test (``tests/pipeline/test_release_scale_cli_20k.py``
runs the pipeline on 20,002 rows with the defaults, ``test_release_scale_cli.py`` on
1,000 rows where a release is chosen and published).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import platform
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
STAGES = ("learn", "shuffle", "validate", "publish")
DAG_ID = "astrid_publish_diabetes"
NAME = "mixed"
POLL_SECONDS = 0.25
# a key for this benchmark's receipts only: publish trusts what validate signed with it
SIGNING_KEY = "bench-release-scale-key-0123456789abcdef"
MAX_LOG_LINES = 400


# ------------------------------------------------------------------ measuring a stage
def become_subreaper() -> bool:
    """Orphaned descendants (loky workers outliving their parent) become our children,
    so ``RUSAGE_CHILDREN`` counts their CPU once we reap them (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


class TreeSampler(threading.Thread):
    """Polls a process tree: peak summed RSS, peak process count, each process's CPU."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.stop = pid, threading.Event()
        self.peak_rss, self.peak_procs, self.cpu = 0, 0, {}

    def run(self) -> None:
        import psutil

        root = psutil.Process(self.pid)
        me = psutil.Process()
        while not self.stop.is_set():
            with contextlib.suppress(psutil.Error):
                procs = [root, *root.children(recursive=True)]
                # orphans reparented to us (subreaper) still belong to the stage
                procs += [p for p in me.children(recursive=True) if p.pid != root.pid
                          and p not in procs]
                rss = 0
                for p in procs:
                    with contextlib.suppress(psutil.Error):
                        rss += p.memory_info().rss
                        t = p.cpu_times()
                        self.cpu[p.pid] = max(self.cpu.get(p.pid, 0.0), t.user + t.system)
                self.peak_rss = max(self.peak_rss, rss)
                self.peak_procs = max(self.peak_procs, len(procs))
            self.stop.wait(POLL_SECONDS)


def reap_orphans(timeout: float = 60.0) -> int:
    """Wait for (and reap) every remaining child: orphans reparented to this process."""
    import psutil

    deadline, reaped = time.monotonic() + timeout, 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid:
            reaped += 1
            continue
        if not psutil.Process().children() or time.monotonic() > deadline:
            return reaped
        time.sleep(0.1)


def run_stage(name: str, cmd: list[str], logs: Path, env: dict[str, str],
              stdout_json: bool = True) -> dict:
    """One stage as a subprocess, measured; its stdout (JSON) and its log kept."""
    log_path, out_path = logs / f"{name}.log", logs / f"{name}.out"
    print(f"[{time.strftime('%H:%M:%S')}] {name}: {' '.join(cmd[1:])} (log: {log_path})",
          flush=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_start, t0 = os.getloadavg(), time.perf_counter()
    with open(log_path, "w") as err, open(out_path, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=logs)
        sampler = TreeSampler(proc.pid)
        sampler.start()
        _, status, own = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        orphans = reap_orphans()
        sampler.stop.set()
        sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    log = log_path.read_text(errors="replace").splitlines()
    text = out_path.read_text(errors="replace")
    row = {"stage": name, "command": cmd[1:], "exit": proc.returncode,
           "wall_seconds": round(wall, 1), "cpu_seconds": round(cpu, 1),
           "cpu_wait4_seconds": round(own.ru_utime + own.ru_stime, 1),
           "cpu_sampled_seconds": round(sum(sampler.cpu.values()), 1),
           "processes_seen": len(sampler.cpu), "peak_processes": sampler.peak_procs,
           "orphans_reaped": orphans,
           "peak_rss_bytes": sampler.peak_rss,
           "max_rss_one_process_bytes": own.ru_maxrss * 1024,  # the root (+ reaped)
           "load_average_start": load_start, "load_average_end": os.getloadavg(),
           "log_lines": len(log),
           "log": log if len(log) <= MAX_LOG_LINES else
           [*log[:100], f"... {len(log) - MAX_LOG_LINES} lines ...", *log[-300:]]}
    if stdout_json:
        with contextlib.suppress(json.JSONDecodeError):
            row["output"] = json.loads(text)
    if "output" not in row:
        row["stdout_tail"] = text.splitlines()[-20:]
    print(f"    exit {row['exit']}, {row['wall_seconds']} s wall, {row['cpu_seconds']} s "
          f"CPU, peak RSS {row['peak_rss_bytes'] / 2**20:,.0f} MiB", flush=True)
    return row


# ------------------------------------------------------------------- the CLI pipeline
def learn_flags(rows: int) -> list[str]:
    """The large-table defaults as flags where the CLI would not choose them itself: the
    preset, the sample rule, adaptive mode and the pair screen (which ``--screen auto``
    applies on that path above 20,000 rows only)."""
    from astrid_airflow.engine import large_table_defaults

    if large_table_defaults(rows)["adaptive"]:
        return []
    chosen = large_table_defaults(10**9)  # what any table above 20,000 rows gets
    return ["--classifier", chosen["classifier"], "--sample", chosen["sample"], "--adaptive",
            "--screen", "on"]


def stage_commands(work: Path, rows: int, extra_learn: list[str]) -> dict[str, list[str]]:
    astrid = str(Path(sys.executable).parent / "astrid")
    ref, batch = str(work / "reference.parquet"), str(work / "batch.parquet")
    store, staged = str(work / "store"), str(work / "staging" / "surrogate.parquet")
    artefact = f"{store}/{NAME}"
    return {
        "learn": [astrid, "learn", ref, "--target", "class", "--store", store, "--name",
                  NAME, "--jobs", "2", "--seed", "0", "--json", *learn_flags(rows),
                  *extra_learn],
        "shuffle": [astrid, "shuffle", batch, "--artefact", artefact, "--out", staged,
                    "--seed", "1", "--json", "--overwrite"],
        "validate": [astrid, "validate", "--original", batch, "--surrogate", staged,
                     "--artefact", artefact, "--seed", "2", "--json"],
        "publish": [astrid, "publish", staged, "--destination",
                    str(work / "public" / "release.parquet"), "--receipt",
                    str(work / "staging" / "surrogate.gate.json"), "--json"],
    }


def summary_of(stage: str, output: dict | None) -> dict:
    """What a reader needs of a stage's JSON output (the rest is in the log)."""
    o = output or {}
    if stage == "learn":
        rel = o.get("release") or {}
        return {"k": o.get("k"), "grouping": o.get("grouping"), "n_fits": o.get("n_fits"),
                "estimate": o.get("estimate"), "sample": o.get("sample"),
                "screen": o.get("screen"), "release_status": rel.get("status"),
                "release_reason": rel.get("reason"), "release_grouping": rel.get("grouping"),
                "release_candidates": rel.get("candidates")}
    if stage == "validate":
        failed = [e.get("name") for e in o.get("expectations", [])
                  if not e.get("success", True)]
        return {"success": o.get("success"), "failed": failed, "receipt": o.get("receipt")}
    if stage == "publish":
        return {k: o.get(k) for k in ("release_id", "rows", "sha256", "trusted", "gated",
                                      "manifest") if k in o} | {"keys": sorted(o)}
    return {k: o[k] for k in ("rows", "intact_row_proportion", "accuracy_original",
                              "accuracy_surrogate", "utility_rows", "seed", "seconds",
                              "suppression") if k in o}


def run_cli(work: Path, rows: int, stages: list[str], extra_learn: list[str],
            env: dict[str, str]) -> list[dict]:
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    (work / "staging").mkdir(exist_ok=True)
    (work / "public").mkdir(exist_ok=True)
    cmds, out = stage_commands(work, rows, extra_learn), []
    for stage in STAGES:
        if stage not in stages:
            continue
        failed = [r for r in out if r["exit"] != 0]
        if failed:
            out.append({"stage": stage, "skipped": f"{failed[0]['stage']} exited "
                        f"{failed[0]['exit']}", "exit": None})
            continue
        row = run_stage(stage, cmds[stage], logs, env)
        row["summary"] = summary_of(stage, row.pop("output", None))
        out.append(row)
        if stage == "shuffle" and row["exit"] == 2:  # the choice refused: nothing to
            out += raw_release(cmds, work, logs, env)  # publish; time the raw release
    return out


def raw_release(cmds: dict[str, list[str]], work: Path, logs: Path,
                env: dict[str, str]) -> list[dict]:
    """When the release choice refused (shuffle exit 2), the raw GoldenEye release of the
    learned grouping (``--no-remedies``) through shuffle, the gate and publish, so the
    later stages are still timed at this size (the gate is expected to refuse it)."""
    raw = str(work / "staging" / "raw.parquet")
    staged = str(work / "staging" / "surrogate.parquet")
    swap = {staged: raw, str(work / "staging" / "surrogate.gate.json"):
            str(work / "staging" / "raw.gate.json"),
            str(work / "public" / "release.parquet"): str(work / "public" / "raw.parquet")}
    rows = []
    for stage in ("shuffle", "validate", "publish"):
        cmd = [swap.get(a, a) for a in cmds[stage]]
        if stage != "publish":
            cmd.append("--no-remedies")
        row = run_stage(f"{stage}_raw", cmd, logs, env)
        row["summary"] = summary_of(stage, row.pop("output", None))
        rows.append(row)
        if row["exit"] not in (0, 1):  # 1: the gate refused (its receipt says so)
            break
    return rows


# ------------------------------------------------------------------------- the DAG run
def run_dag(work: Path, env: dict[str, str], extra_conf: dict) -> dict:
    """The same release through the publishing DAG (``airflow dags test``, SQLite)."""
    home = work / "airflow"
    dag_env = {**env, "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
               "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
               "ASTRID_DEMO_ROOT": str(work / "astrid_demo")}
    airflow = str(Path(sys.executable).parent / "airflow")
    logs = work / "logs"
    migrate = run_stage("dag_db_migrate", [airflow, "db", "migrate"], logs, dag_env, False)
    conf = {"reference": str(work / "reference.parquet"),
            "batch": str(work / "batch.parquet"), "classifier": "auto",
            "n_search": None, "n_test": None, "learn_seed": 0, "seed": 1, **extra_conf}
    run = run_stage("dag", [airflow, "dags", "test", "--conf", json.dumps(conf), DAG_ID],
                    logs, dag_env, False)
    run.pop("stdout_tail", None)
    text = (logs / "dag.out").read_text(errors="replace") + "\n".join(run["log"])
    finished = [ln for ln in text.splitlines() if "DagRun Finished" in ln]
    run["succeeded"] = any("state=success" in ln for ln in finished)
    run["tasks"] = task_durations(home / "airflow.db")
    run["log"] = [ln for ln in text.splitlines() if "astrid" in ln.lower()
                  and any(w in ln for w in ("estimate", "progress", "Marking task",
                                            "DagRun Finished", "Error", "refus"))][-200:]
    return {"conf": conf, "db_migrate_seconds": migrate["wall_seconds"], **run}


def task_durations(db: Path) -> list[dict]:
    """Each task instance of the run: state, try, duration (the metadata DB's own)."""
    if not db.exists():
        return []
    with contextlib.closing(sqlite3.connect(db)) as con:
        rows = con.execute("SELECT task_id, state, try_number, start_date, end_date, "
                           "duration FROM task_instance WHERE dag_id = ? ORDER BY "
                           "start_date", (DAG_ID,)).fetchall()
    return [{"task": t, "state": s, "try": n, "start": a, "end": b,
             "seconds": None if d is None else round(float(d), 1)}
            for t, s, n, a, b, d in rows]


# ---------------------------------------------------------------------------- results
def write_tables(work: Path, rows: int, seed: int) -> dict:
    """Reference (seed) and batch (seed + 1) as Parquet; their sizes in memory and on disk."""
    from astrid_airflow import make_mixed_table

    t0 = time.perf_counter()
    sizes: dict = {}
    for name, s in (("reference", seed), ("batch", seed + 1)):
        table, planted = make_mixed_table(rows, random_state=s)
        path = work / f"{name}.parquet"
        table.to_parquet(path, index=False)
        sizes[name] = {"rows": len(table), "columns": table.shape[1],
                       "memory_bytes": int(table.memory_usage(deep=True).sum()),
                       "parquet_bytes": path.stat().st_size}
        del table
    sizes["planted"] = planted
    sizes["generate_and_write_seconds"] = round(time.perf_counter() - t0, 1)
    return sizes


def machine() -> dict:
    """The machine, and the code measured: the commit and the files changed beside it
    (the checkout is shared: uncommitted work of others runs too)."""
    import psutil

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True,
                              text=True).stdout.rstrip()

    changed = [ln[3:] for ln in git("status", "--porcelain").splitlines()
               if ln[3:].endswith(".py") and not ln.startswith("??")]
    return {"platform": platform.platform(), "python": sys.version.split()[0],
            "cpu_count": os.cpu_count(), "memory_bytes": psutil.virtual_memory().total,
            "commit": git("rev-parse", "--short", "HEAD").strip(),
            "uncommitted_changes": changed}


def recovered(planted: list[list[str]], learned: list[list[str]] | None) -> bool | None:
    if not learned:
        return None
    return all(any(set(p) <= set(g) for g in learned) for p in planted)


def ratios(rows: list[dict], table_bytes: int) -> None:
    for r in rows:
        if r.get("peak_rss_bytes"):
            r["peak_over_table"] = round(r["peak_rss_bytes"] / table_bytes, 2)


def write_summary() -> None:
    """``results/release_scale.md``: one row per stage of every result file."""
    head = ["| table | stage | exit | wall s | CPU s (tree) | CPU / wall | peak RSS MiB "
            "(tree) | peak / table | largest process MiB | load start / end |",
            "|" + "---|" * 10]
    lines = []
    for path in sorted(RESULTS.glob("release_scale_*x30*.json"),
                       key=lambda p: json.loads(p.read_text())["rows"]):
        r = json.loads(path.read_text())
        mib = r["tables"]["reference"]["memory_bytes"] / 2**20
        lines.append(f"\n**{r['rows']:,} x 30** (`{path.name}`; table {mib:,.0f} MiB in "
                     f"memory, {r['tables']['reference']['parquet_bytes'] / 2**20:,.1f} MiB "
                     f"Parquet; learn flags `{' '.join(r['learn_args']) or 'none'}`; planted "
                     f"groups recovered: {r.get('planted_recovered')})\n")
        lines += head
        for s in r["stages"] + ([r["dag"]] if r.get("dag") else []):
            if s.get("skipped") or "wall_seconds" not in s:
                lines.append(f"| {r['rows']:,} | {s['stage']} | skipped: "
                             f"{s.get('skipped')} |" + " |" * 7)
                continue
            lines.append(
                f"| {r['rows']:,} | {s['stage']} | {s['exit']} | {s['wall_seconds']} | "
                f"{s['cpu_seconds']} | {s['cpu_seconds'] / max(s['wall_seconds'], 0.1):.2f} "
                f"| {s['peak_rss_bytes'] / 2**20:,.0f} | {s.get('peak_over_table', '-')} | "
                f"{s['max_rss_one_process_bytes'] / 2**20:,.0f} | "
                f"{s['load_average_start'][0]:.1f} / {s['load_average_end'][0]:.1f} |")
        if r.get("dag"):
            tasks = ", ".join(f"{t['task']} {t['seconds']} s ({t['state']})"
                              for t in r["dag"]["tasks"])
            lines.append(f"\nDAG (`airflow dags test`, SQLite): "
                         f"{'succeeded' if r['dag']['succeeded'] else 'FAILED'}; tasks: "
                         f"{tasks or 'none recorded'}")
    (RESULTS / "release_scale.md").write_text(
        "# A whole release at scale (issue 33)\n\n`benchmarks/bench_release_scale.py`: "
        "`make_mixed_table` learned, shuffled, gated and published through the command "
        "line (each stage a subprocess), then through the publishing DAG; 2 cores shared "
        "with other sessions (1-minute load average at start / end). CPU: user + sys of "
        "the stage's whole process tree (loky workers included); peak RSS: the tree's "
        "summed RSS polled every 0.25 s (shared pages counted once per process); peak / "
        "table: that over the reference table's in-memory size. Logs and full results: "
        "`release_scale_<rows>x30.json`.\n" + "\n".join(lines) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stages", default=",".join(STAGES),
                   help="comma-separated subset of learn,shuffle,validate,publish (a later "
                   "stage alone needs --keep DIR holding the earlier stages' files)")
    p.add_argument("--keep", type=Path, default=None,
                   help="work in DIR and keep it (tables, store, logs); reuses its tables")
    p.add_argument("--dag", action=argparse.BooleanOptionalAction, default=True,
                   help="also run the publishing DAG with `airflow dags test` (default)")
    p.add_argument("--dag-conf", type=json.loads, default={},
                   help="JSON merged into the DAG run's --conf (e.g. a smoke run's "
                   "'{\"n_search\": 5}')")
    p.add_argument("--merge", action="store_true",
                   help="keep the existing result file's stages (and DAG run) that this run "
                   "does not repeat (e.g. --stages shuffle,validate,publish --no-dag)")
    p.add_argument("--tag", default="", help="suffix of the result file (variant runs)")
    p.add_argument("--learn-args", nargs=argparse.REMAINDER, default=[],
                   help="extra `astrid learn` flags (last on the command line)")
    args = p.parse_args()
    stages = [s for s in args.stages.split(",") if s]
    if set(stages) - set(STAGES):
        p.error(f"--stages: unknown {sorted(set(stages) - set(STAGES))}")
    subreaper = become_subreaper()
    env = {**os.environ, "ASTRID_SIGNING_KEY": SIGNING_KEY}
    with contextlib.ExitStack() as stack:
        work = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(
            prefix="astrid_release_scale_")))
        work.mkdir(parents=True, exist_ok=True)
        out: dict = {"rows": args.rows, "cols": 30, "seed": args.seed,
                     "reference": "make_mixed_table(rows, seed)",
                     "batch": "make_mixed_table(rows, seed + 1): a new batch",
                     "machine": machine(), "subreaper": subreaper,
                     "learn_args": learn_flags(args.rows) + args.learn_args,
                     "load_average_start": os.getloadavg()}
        meta = work / "tables.json"
        if args.keep and meta.exists() and json.loads(meta.read_text())["reference"][
                "rows"] == args.rows:
            out["tables"] = json.loads(meta.read_text())
        else:
            out["tables"] = write_tables(work, args.rows, args.seed)
            meta.write_text(json.dumps(out["tables"]))
        out["stages"] = run_cli(work, args.rows, stages, args.learn_args, env)
        out.update(published_check(work, out["stages"]))
        learned = next((s for s in out["stages"] if s["stage"] == "learn"), {})
        out["planted_recovered"] = recovered(out["tables"]["planted"], (learned.get(
            "summary") or {}).get("grouping"))
        if args.dag:
            out["dag"] = {"stage": "dag", **run_dag(work, env, args.dag_conf)}
            shutil.rmtree(work / "airflow" / "logs", ignore_errors=True)
        table_bytes = out["tables"]["reference"]["memory_bytes"]
        ratios(out["stages"] + ([out["dag"]] if args.dag else []), table_bytes)
        out["load_average_end"] = os.getloadavg()
    RESULTS.mkdir(exist_ok=True)
    name = f"release_scale_{args.rows}x30{'_' + args.tag if args.tag else ''}.json"
    if args.merge and (RESULTS / name).exists():
        merge(out, json.loads((RESULTS / name).read_text()))
    (RESULTS / name).write_text(json.dumps(out, indent=1, default=str) + "\n")
    write_summary()
    print((RESULTS / "release_scale.md").read_text())


def merge(out: dict, old: dict) -> None:
    """``out`` completed with ``old``'s stages it did not run (in pipeline order), and its
    DAG run if this one had none; the earlier run's load and commit are kept with them."""
    ran = {s["stage"].removesuffix("_raw") for s in out["stages"]}
    kept = [s for s in old["stages"] if s["stage"].removesuffix("_raw") not in ran]
    order = [*STAGES, *(f"{s}_raw" for s in STAGES)]
    out["stages"] = sorted(kept + out["stages"], key=lambda s: (
        STAGES.index(s["stage"].removesuffix("_raw")), order.index(s["stage"])))
    if "dag" not in out and old.get("dag"):
        out["dag"] = old["dag"]
    if old.get("planted_recovered") is not None and out.get("planted_recovered") is None:
        out["planted_recovered"] = old["planted_recovered"]
    out["merged_from"] = {"machine": old.get("machine"),
                          "load_average_start": old.get("load_average_start"),
                          "stages": [s["stage"] for s in kept]}


def published_check(work: Path, stages: list[dict]) -> dict:
    """The published file against the batch: rows, columns, the manifest's sha256."""
    import hashlib

    import pyarrow.parquet as pq

    published = work / "public" / "release.parquet"
    if not any(s["stage"] == "publish" and s.get("exit") == 0 for s in stages) \
            or not published.exists():
        return {"published": None}
    meta, batch = pq.read_metadata(published), pq.read_metadata(work / "batch.parquet")
    manifest = json.loads((work / "public" / "release.release.json").read_text())
    digest = hashlib.sha256(published.read_bytes()).hexdigest()
    return {"published": {"rows": meta.num_rows, "batch_rows": batch.num_rows,
                          "columns": meta.schema.names == batch.schema.names,
                          "sha256_matches_manifest": digest == manifest.get("sha256"),
                          "receipt_trust": manifest.get("receipt_trust")}}


if __name__ == "__main__":
    main()

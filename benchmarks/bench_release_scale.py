"""A whole release at data-platform scale, end to end, as a scheduled job runs it (issue 33).

    .venv/bin/python benchmarks/bench_release_scale.py                   # 1,000,000 x 30
    .venv/bin/python benchmarks/bench_release_scale.py --rows 100000 --no-dag
    .venv/bin/python benchmarks/bench_release_scale.py --rows 20000 --keep /tmp/rs
    .venv/bin/python benchmarks/bench_release_scale.py --scaleout        # Dask + Spark

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

``--scaleout``: the same table and stages with the distributed paths, end to end (the
DAG part is skipped and the JSON says so: the publishing DAG runs the local paths):

* learn runs its fits on a Dask ``LocalCluster`` of 2 worker processes x 1 thread,
  started (and timed: ``scaleout.dask_cluster.startup_seconds``) in a child process of
  this one (this script with ``--_dask-cluster``) before the stage and stopped after
  it; ``astrid learn`` gets ``--scheduler tcp://...`` instead of ``--jobs 2`` (the fits
  go through ``astrid_on_dask``; the sample, the screen and the release choice stay in
  the ``astrid learn`` process). The cluster is not a descendant of the stage's
  process and is reaped only after the stage, so ``RUSAGE_CHILDREN`` does not see it:
  its CPU during the stage (scheduler + workers, psutil deltas) is measured separately
  (``cpu_seconds_cluster``) and added to the stage's ``cpu_seconds`` (the stage's own
  tree: ``cpu_seconds_client``); its processes are children of this one, so the
  stage's polled peak RSS includes them (``peak_rss_cluster_bytes``: theirs alone; the
  stage's ``cpu_sampled_seconds`` includes their CPU since the cluster's start). When
  stopped, the cluster reports the tasks each worker executed (``executed``: the proof
  that the fits ran there) and its whole CPU (``cpu_seconds_total``: ``RUSAGE_CHILDREN``
  around its stop, start-up included);
* shuffle is ``astrid_airflow.spark_shuffle_parquet`` in PySpark ``local[2]`` (driver
  4 GiB, ``spark.sql.shuffle.partitions`` 16), with the recipe (or ``--no-remedies``),
  the seed and P_anon as ``astrid shuffle``, in a subprocess (this script with
  ``--_spark-shuffle``, taking ``astrid shuffle``'s flags). Spark writes a directory of
  part files, which ``astrid validate`` and ``publish`` refuse (they read one regular
  file), so the parts are then streamed into one Parquet file at the path ``astrid
  shuffle`` would write (``staging/surrogate.parquet``; cast to the batch's Arrow
  schema: Spark writes ``string`` for ``large_string`` and drops the pandas metadata)
  and the directory removed: that step is part of the stage (``single_file_seconds``),
  as are the session's start-up (``spark_startup_seconds``, reported separately) and
  stop. The Spark path computes no train-on-surrogate accuracy (validate's utility
  check still runs). A refused release choice exits 2 before Spark starts, and the raw
  release is timed through the same Spark path (``shuffle_raw``);
* validate and publish run unchanged on that file.

Results: ``benchmarks/results/release_scale_<rows>x30.json`` (``_scaleout`` and then
``_<tag>`` appended for ``--scaleout`` and ``--tag``) and a summary over every such file,
``benchmarks/results/release_scale.md``. The full size is heavy (tens of
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
# --scaleout: the Dask cluster of the learn fits and the Spark session of the shuffle
DASK_WORKERS, DASK_THREADS = 2, 1
SPARK_MASTER, SPARK_DRIVER_MEMORY, SPARK_SHUFFLE_PARTITIONS = "local[2]", "4g", 16


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
    """Polls a process tree: peak summed RSS, peak process count, each process's CPU.
    ``orphans``: also every other descendant of this process (reparented orphans, and a
    --scaleout Dask cluster running beside the stage)."""

    def __init__(self, pid: int, orphans: bool = True) -> None:
        super().__init__(daemon=True)
        self.pid, self.stop, self.orphans = pid, threading.Event(), orphans
        self.peak_rss, self.peak_procs, self.cpu = 0, 0, {}

    def run(self) -> None:
        import psutil

        root = psutil.Process(self.pid)
        me = psutil.Process()
        while not self.stop.is_set():
            with contextlib.suppress(psutil.Error):
                procs = [root, *root.children(recursive=True)]
                # orphans reparented to us (subreaper) still belong to the stage
                if self.orphans:
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


def reap_orphans(timeout: float = 60.0, keep: frozenset[int] = frozenset()) -> int:
    """Wait for (and reap) every remaining child: orphans reparented to this process
    (but for the children ``keep``: a --scaleout Dask cluster outliving the stage)."""
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
        if all(c.pid in keep for c in psutil.Process().children()) \
                or time.monotonic() > deadline:
            return reaped
        time.sleep(0.1)


def run_stage(name: str, cmd: list[str], logs: Path, env: dict[str, str],
              stdout_json: bool = True, keep: frozenset[int] = frozenset()) -> dict:
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
        orphans = reap_orphans(keep=keep)
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


# ----------------------------------------------------------- --scaleout: Dask and Spark
def tree_cpu(pid: int) -> float:
    """CPU seconds (user + sys) of ``pid`` and its live descendants, with what each has
    reaped of its own children."""
    import psutil

    total = 0.0
    with contextlib.suppress(psutil.Error):
        root = psutil.Process(pid)
        for p in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                t = p.cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
    return total


class DaskCluster:
    """The learn stage's Dask ``LocalCluster`` (2 worker processes x 1 thread), in a
    child process of this one (``--_dask-cluster``), its workers that process's
    children; stopped by closing its stdin."""

    def __init__(self, logs: Path, env: dict[str, str]) -> None:
        self.logs, self.env = logs, env
        self.proc: subprocess.Popen | None = None
        self.record: dict = {"workers": DASK_WORKERS, "threads_per_worker": DASK_THREADS,
                             "processes": True, "log": str(logs / "dask_cluster.log")}

    def start(self) -> str:
        address_file = self.logs / "dask_cluster.address"
        address_file.unlink(missing_ok=True)
        print(f"[{time.strftime('%H:%M:%S')}] dask cluster: LocalCluster({DASK_WORKERS} "
              f"workers x {DASK_THREADS} thread)", flush=True)
        t0, load = time.perf_counter(), os.getloadavg()
        with open(self.logs / "dask_cluster.log", "w") as err, \
                open(self.logs / "dask_cluster.out", "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "--_dask-cluster",
                 str(address_file)], stdin=subprocess.PIPE, stdout=out, stderr=err,
                env=self.env, cwd=self.logs)
        while not address_file.exists():
            if self.proc.poll() is not None or time.perf_counter() - t0 > 300:
                raise RuntimeError("the Dask cluster did not start: see "
                                   f"{self.logs / 'dask_cluster.log'}")
            time.sleep(0.05)
        address = address_file.read_text().strip()
        self.record.update(address=address, pid=self.proc.pid,
                           startup_seconds=round(time.perf_counter() - t0, 2),
                           startup_cpu_seconds=round(tree_cpu(self.proc.pid), 2),
                           load_average_start=load)
        print(f"    {address} in {self.record['startup_seconds']} s", flush=True)
        return address

    def measure_learn(self, run: Callable[[frozenset[int]], dict]) -> dict:
        """``run(keep)`` (the learn stage) with the cluster's own CPU and peak RSS over
        it; the stage's ``cpu_seconds`` becomes its tree's plus the cluster's."""
        assert self.proc is not None
        sampler = TreeSampler(self.proc.pid, orphans=False)
        sampler.start()
        before = tree_cpu(self.proc.pid)
        try:
            row = run(frozenset({self.proc.pid}))
        finally:
            during = tree_cpu(self.proc.pid) - before
            sampler.stop.set()
            sampler.join()
        row.update(cpu_seconds_client=row["cpu_seconds"],
                   cpu_seconds_cluster=round(during, 1),
                   cpu_seconds=round(row["cpu_seconds"] + during, 1),
                   peak_rss_cluster_bytes=sampler.peak_rss,
                   cluster_processes_seen=len(sampler.cpu),
                   measured="cpu_seconds: the astrid learn process tree (RUSAGE_CHILDREN) "
                   "plus the Dask cluster's processes during the stage (psutil deltas); "
                   "peak_rss_bytes includes the cluster's processes (children of the "
                   "bench); cpu_sampled_seconds includes the cluster's CPU since its start")
        self.record.update(cpu_seconds_during_learn=round(during, 1),
                           peak_rss_during_learn_bytes=sampler.peak_rss)
        return row

    def stop(self) -> dict:
        """Stop it: its report (tasks per worker, task prefixes), its whole CPU
        (``RUSAGE_CHILDREN`` around the stop: it and its workers, start-up included)."""
        if self.proc is None:
            return self.record
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0, status, pid = time.perf_counter(), None, self.proc.pid
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            while status is None:
                done, st, _ = os.wait4(pid, os.WNOHANG)
                if done:
                    status = os.waitstatus_to_exitcode(st)
                elif time.perf_counter() - t0 > 120:
                    os.kill(pid, 9 if time.perf_counter() - t0 > 150 else 15)
                    time.sleep(1)
                else:
                    time.sleep(0.1)
        except ChildProcessError:  # reaped already (it died during the stage)
            status = self.proc.returncode
        self.proc.returncode = status
        reap_orphans()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.record.update(
            exit=status, stop_seconds=round(time.perf_counter() - t0, 2),
            cpu_seconds_total=round((after.ru_utime - before.ru_utime)
                                    + (after.ru_stime - before.ru_stime), 1))
        with contextlib.suppress(OSError, json.JSONDecodeError, IndexError):
            text = (self.logs / "dask_cluster.out").read_text().strip()
            self.record.update(json.loads(text.splitlines()[-1]))
        self.proc = None
        print(f"    dask cluster stopped: exit {status}, executed per worker "
              f"{self.record.get('executed')}, {self.record['cpu_seconds_total']} s CPU "
              "in all", flush=True)
        return self.record


def dask_cluster_main(address_file: str) -> int:
    """``--_dask-cluster FILE``: start the cluster, write its address to FILE, serve
    until stdin closes, then print (stdout) what each worker executed and close."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=DASK_WORKERS, threads_per_worker=DASK_THREADS,
                           processes=True, dashboard_address=None)
    client = Client(cluster)
    client.wait_for_workers(DASK_WORKERS)
    tmp = f"{address_file}.tmp"
    Path(tmp).write_text(cluster.scheduler_address + "\n")
    os.replace(tmp, address_file)
    sys.stdin.read()  # until the bench closes it

    def executed(dask_worker: Any) -> int:
        return dask_worker.state.executed_count

    def prefixes(dask_scheduler: Any) -> dict:
        return {name: dict(tp.state_counts)
                for name, tp in dask_scheduler.task_prefixes.items()}

    report: dict = {}
    with contextlib.suppress(Exception):
        report["executed"] = client.run(executed)
        report["task_prefixes"] = client.run_on_scheduler(prefixes)
    print(json.dumps(report), flush=True)
    client.close()
    cluster.close()
    return 0


def spark_shuffle_main(argv: list[str]) -> int:
    """``--_spark-shuffle DATA --artefact REF --out FILE [--seed N] [--no-remedies]
    [--overwrite] [--json]``: ``astrid shuffle``'s flags, the surrogate made by
    ``spark_shuffle_parquet`` in ``local[2]`` and written as one Parquet file at FILE;
    the report as JSON on stdout (Spark's output goes to stderr); exit 2 on an astrid
    error (a refused release choice among them), as ``astrid shuffle``."""
    from astrid_airflow import AstridError

    p = argparse.ArgumentParser(prog="bench_release_scale.py --_spark-shuffle")
    p.add_argument("data")
    p.add_argument("--artefact", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--no-remedies", action="store_true")
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument("--driver-memory", default=SPARK_DRIVER_MEMORY)
    args = p.parse_args(argv)
    stdout = os.dup(1)
    os.dup2(2, 1)  # Spark's, py4j's and the JVM's output go to the log
    try:
        report = spark_shuffle(args)
    except AstridError as exc:
        print(f"spark shuffle: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    os.write(stdout, (json.dumps(report, default=str) + "\n").encode())
    return 0


def spark_shuffle(args: argparse.Namespace) -> dict:
    started = time.perf_counter()
    from astrid_airflow import StoreError, spark_shuffle_parquet
    from astrid_airflow.release import load_artefact, release_recipe

    artefact, _ = load_artefact(args.artefact)
    remedies = not args.no_remedies
    release_recipe(artefact, remedies)  # a refused choice: exit 2 before Spark starts
    out = Path(args.out).resolve()
    if out.exists() and not args.overwrite:
        raise StoreError(f"Refusing to overwrite existing {str(out)!r} (--overwrite).")
    parts_dir = out.with_suffix(".spark")
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers of mapInPandas/Arrow
    t0 = time.perf_counter()
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(SPARK_MASTER).appName("astrid-release-scale")
             .config("spark.driver.memory", args.driver_memory)
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", str(SPARK_SHUFFLE_PARTITIONS))
             .getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    startup = time.perf_counter() - t0
    try:
        res = spark_shuffle_parquet(args.data, artefact, parts_dir, random_state=args.seed,
                                    spark=spark, overwrite=True, metrics=True,
                                    remedies=remedies)
        version = spark.version
    finally:
        t0 = time.perf_counter()
        spark.stop()
        stop = time.perf_counter() - t0
    t0 = time.perf_counter()
    single = single_parquet(parts_dir, out, like=Path(args.data))
    shutil.rmtree(parts_dir)
    single_seconds = time.perf_counter() - t0
    return {"out": str(out), "rows": res.rows, "groups": res.groups,
            "intact_row_proportion": res.intact_row_proportion,
            "accuracy_original": None, "accuracy_surrogate": None,
            "utility_note": "not computed on the Spark path (validate's check runs)",
            "seed": res.seed, "suppression": res.suppression,
            "remedies": remedies and artefact.recipe is not None,
            "engine": f"spark {version} {SPARK_MASTER}, driver {args.driver_memory}",
            "spark_startup_seconds": round(startup, 2),
            "spark_shuffle_seconds": round(res.seconds, 2),
            "spark_stop_seconds": round(stop, 2),
            "single_file_seconds": round(single_seconds, 2), "single_file": single,
            "seconds": round(time.perf_counter() - started, 2)}


def single_parquet(parts_dir: Path, out: Path, like: Path) -> dict:
    """Spark's part files streamed into one Parquet file ``out`` (atomically), cast to
    ``like``'s Arrow schema when they fit it (Spark's own schema otherwise)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts = sorted(p for p in parts_dir.iterdir()
                   if p.suffix == ".parquet" and not p.name.startswith((".", "_")))
    target = pq.read_schema(like)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    writer, cast, rows = None, True, 0
    try:
        for part in parts:
            for batch in pq.ParquetFile(part).iter_batches(batch_size=1 << 17):
                table = pa.Table.from_batches([batch])
                if writer is None:
                    try:
                        table.cast(target)
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
                        cast = False
                    writer = pq.ParquetWriter(tmp, target if cast else table.schema)
                writer.write_table(table.cast(target) if cast else table)
                rows += table.num_rows
        if writer is None:  # no rows at all
            writer = pq.ParquetWriter(tmp, target)
    finally:
        if writer is not None:
            writer.close()
    os.replace(tmp, out)
    return {"parts": len(parts), "parts_bytes": sum(p.stat().st_size for p in parts),
            "rows": rows, "bytes": out.stat().st_size,
            "schema": "the batch's" if cast else "Spark's"}


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


def stage_commands(work: Path, rows: int, extra_learn: list[str], scheduler: str | None = None,
                   spark: bool = False) -> dict[str, list[str]]:
    """The stages' command lines; ``scheduler``: learn's fits on that Dask cluster
    (instead of ``--jobs 2``); ``spark``: the shuffle with ``spark_shuffle_parquet``
    (this script's ``--_spark-shuffle``, with ``astrid shuffle``'s flags)."""
    astrid = str(Path(sys.executable).parent / "astrid")
    ref, batch = str(work / "reference.parquet"), str(work / "batch.parquet")
    store, staged = str(work / "store"), str(work / "staging" / "surrogate.parquet")
    artefact = f"{store}/{NAME}"
    parallel = ["--scheduler", scheduler] if scheduler else ["--jobs", "2"]
    shuffle = [sys.executable, str(Path(__file__).resolve()), "--_spark-shuffle"] if spark \
        else [astrid, "shuffle"]
    return {
        "learn": [astrid, "learn", ref, "--target", "class", "--store", store, "--name",
                  NAME, *parallel, "--seed", "0", "--json", *learn_flags(rows),
                  *extra_learn],
        "shuffle": [*shuffle, batch, "--artefact", artefact, "--out", staged,
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
                              "suppression", "engine", "spark_startup_seconds",
                              "spark_shuffle_seconds", "spark_stop_seconds",
                              "single_file_seconds", "single_file") if k in o}


def run_cli(work: Path, rows: int, stages: list[str], extra_learn: list[str],
            env: dict[str, str], scaleout: dict | None = None) -> list[dict]:
    """The stages in order; ``scaleout`` (a dict, filled with the Dask cluster's
    record): learn on a Dask cluster started for it, the shuffle on Spark."""
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    (work / "staging").mkdir(exist_ok=True)
    (work / "public").mkdir(exist_ok=True)
    cluster = DaskCluster(logs, env) if scaleout is not None and "learn" in stages else None
    out: list[dict] = []
    try:
        scheduler = cluster.start() if cluster else None
        cmds = stage_commands(work, rows, extra_learn, scheduler=scheduler,
                              spark=scaleout is not None)
        for stage in STAGES:
            if stage not in stages:
                continue
            failed = [r for r in out if r["exit"] != 0]
            if failed:
                out.append({"stage": stage, "skipped": f"{failed[0]['stage']} exited "
                            f"{failed[0]['exit']}", "exit": None})
                continue
            if stage == "learn" and cluster:
                row = cluster.measure_learn(
                    lambda keep: run_stage("learn", cmds["learn"], logs, env, keep=keep))
                scaleout["dask_cluster"] = cluster.stop()
            else:
                row = run_stage(stage, cmds[stage], logs, env)
            row["summary"] = summary_of(stage, row.pop("output", None))
            out.append(row)
            if stage == "shuffle" and row["exit"] == 2:  # the choice refused: nothing to
                out += raw_release(cmds, work, logs, env)  # publish; time the raw release
    finally:
        if cluster and cluster.proc is not None:  # learn failed to start or run
            scaleout["dask_cluster"] = cluster.stop()
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
                       key=lambda p: (json.loads(p.read_text())["rows"], p.name)):
        r = json.loads(path.read_text())
        mib = r["tables"]["reference"]["memory_bytes"] / 2**20
        label = ", scale-out: learn fits on Dask, shuffle on Spark" if r.get("scaleout") \
            else ""
        lines.append(f"\n**{r['rows']:,} x 30{label}** (`{path.name}`; table {mib:,.0f} MiB in "
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
        if r.get("scaleout"):
            lines.append("\n" + scaleout_note(r))
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
        "`release_scale_<rows>x30.json`; `_scaleout` files (`--scaleout`): learn's fits on "
        "a local Dask cluster (its CPU and memory in learn's), the shuffle on local Spark, "
        "no DAG run.\n" + "\n".join(lines) + "\n")


def scaleout_note(r: dict) -> str:
    """The --scaleout line under a result's table: the cluster and the Spark session."""
    so, parts = r["scaleout"], []
    c = so.get("dask_cluster")
    if c:
        parts.append(
            f"Dask `LocalCluster` ({c['workers']} worker processes x "
            f"{c['threads_per_worker']} thread): start-up {c.get('startup_seconds')} s "
            f"(not in learn's wall), CPU {c.get('cpu_seconds_during_learn')} s during "
            f"learn (in learn's CPU) and {c.get('cpu_seconds_total')} s in all, peak RSS "
            f"{(c.get('peak_rss_during_learn_bytes') or 0) / 2**20:,.0f} MiB (in learn's); "
            f"tasks executed per worker: {c.get('executed')}")
    for s in r["stages"]:
        sm = s.get("summary") or {}
        if s["stage"].startswith("shuffle") and "spark_startup_seconds" in sm:
            parts.append(
                f"{s['stage']} on {sm.get('engine')}: session start-up "
                f"{sm['spark_startup_seconds']} s, `spark_shuffle_parquet` "
                f"{sm['spark_shuffle_seconds']} s (P_anon included), stop "
                f"{sm['spark_stop_seconds']} s, one Parquet file from "
                f"{(sm.get('single_file') or {}).get('parts')} parts "
                f"{sm['single_file_seconds']} s (all in the stage's wall)")
    parts.append(f"DAG: {so.get('dag')}")
    return "Scale-out: " + "; ".join(parts) + "."


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--_dask-cluster":  # --scaleout's helpers
        sys.exit(dask_cluster_main(sys.argv[2]))
    if len(sys.argv) > 1 and sys.argv[1] == "--_spark-shuffle":
        sys.exit(spark_shuffle_main(sys.argv[2:]))
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
    p.add_argument("--scaleout", action="store_true",
                   help="learn's fits on a local Dask cluster (2 workers x 1 thread), the "
                   "shuffle with spark_shuffle_parquet in local[2]; no DAG run (results "
                   "in release_scale_<rows>x30_scaleout[_TAG].json)")
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
        scaleout = {"dask": {"workers": DASK_WORKERS, "threads_per_worker": DASK_THREADS},
                    "spark": {"master": SPARK_MASTER, "driver_memory": SPARK_DRIVER_MEMORY,
                              "shuffle_partitions": SPARK_SHUFFLE_PARTITIONS},
                    "dag": "not run with --scaleout (the publishing DAG runs the local "
                    "paths)"} if args.scaleout else None
        if scaleout is not None:
            out["scaleout"] = scaleout
        out["stages"] = run_cli(work, args.rows, stages, args.learn_args, env, scaleout)
        out.update(published_check(work, out["stages"]))
        learned = next((s for s in out["stages"] if s["stage"] == "learn"), {})
        out["planted_recovered"] = recovered(out["tables"]["planted"], (learned.get(
            "summary") or {}).get("grouping"))
        if args.dag and not args.scaleout:
            out["dag"] = {"stage": "dag", **run_dag(work, env, args.dag_conf)}
            shutil.rmtree(work / "airflow" / "logs", ignore_errors=True)
        table_bytes = out["tables"]["reference"]["memory_bytes"]
        ratios(out["stages"] + ([out["dag"]] if "dag" in out else []), table_bytes)
        out["load_average_end"] = os.getloadavg()
    RESULTS.mkdir(exist_ok=True)
    name = (f"release_scale_{args.rows}x30{'_scaleout' if args.scaleout else ''}"
            f"{'_' + args.tag if args.tag else ''}.json")
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
    if old.get("scaleout") and out.get("scaleout"):  # e.g. the cluster of an earlier learn
        out["scaleout"] = {**old["scaleout"], **out["scaleout"]}
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

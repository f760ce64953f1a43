"""The bad-input matrix: every way a user can hand the product something broken.

Each case is one input at one layer, with the behaviour it must get:

* ``cli``: ``astrid ...`` exits with status 2 and prints exactly one line on stderr
  (``astrid <command>: error: ...``), nothing on stdout, no traceback;
* ``library``: a typed :class:`~astrid_airflow.AstridError` subclass, one-line message;
* ``operator``: ``AirflowFailException`` (no retries), one-line message;

and in every case **no output is written**: the working directory (hidden temporary
files included) and the in-memory object store (``memory://``) are identical, file by
file, before and after. A few cases are accepted on purpose and must *say* something
(``warning``/``note`` rows); a gate that must *fail* (``gate FAILED`` rows) is judged on
DataFrames, so that it writes no result files either.

One case is not bad input but a terminated task: ``astrid learn`` killed with SIGTERM
(a scheduler's task timeout) while its joblib workers run, in a subprocess. It must
exit 143 (128 + SIGTERM, so the scheduler reports "terminated", not "bad input", which
is exit 2) with one line, no leaked-resource warning, nothing saved and no temporary
file left.

Cases that expose a bug or a missing check are marked ``xfail(strict=True)`` with the
reason; they fail without the fix and turn into an XPASS (a failure, because strict)
once it lands, so the lead removes the mark then.

``docs/bad-input-matrix.md`` is generated from these cases by
``scripts/gen_bad_input_matrix.py``; :func:`test_doc_is_in_sync` fails when it is stale.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from astrid_airflow._errors import (
    ArtefactError,
    AstridError,
    DataError,
    GroupingError,
    ParameterError,
    SchemaMismatchError,
    StoreError,
)

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "bad-input-matrix.md"
TARGET = "class"

# --------------------------------------------------------------------- working dir


def reference_table(n_per_class: int = 30) -> pd.DataFrame:
    """Synthetic example plus an integer and a categorical column."""
    from astrid_airflow import make_synthetic

    rng = np.random.default_rng(0)
    t = make_synthetic(n_per_class, random_state=0)
    t["a5"] = rng.integers(0, 9, len(t))
    t["a6"] = pd.Categorical(rng.choice(["x", "y"], len(t)), categories=["x", "y"])
    return t[["a1", "a2", "a3", "a4", "a5", "a6", TARGET]]


def _try_readonly_mount(path: Path) -> str:
    """Make ``path`` unwritable even for root: a read-only tmpfs mount if we may mount,
    else (non-root) mode 0555. Returns how, or "" when neither works."""
    path.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") and os.geteuid() == 0:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(path)],
                           capture_output=True)
        if r.returncode == 0:
            return "mount"
    if os.geteuid() != 0:
        path.chmod(0o555)
        return "chmod"
    return ""


def release_readonly(path: Path, how: str) -> None:
    if how == "mount":
        subprocess.run(["umount", str(path)], capture_output=True)
    elif how == "chmod":
        path.chmod(0o755)


def make_workdir(root: Path) -> dict[str, Any]:
    """Inputs shared by every case: reference table, a learned artefact, a surrogate."""
    from astrid_airflow import GroupingArtefact, astrid
    from astrid_airflow.release._store import ArtefactStore
    from astrid_airflow.release._surrogate import shuffle_file

    root.mkdir(parents=True, exist_ok=True)
    t = reference_table()
    t.to_csv(root / "ref.csv", index=False)
    t.to_parquet(root / "ref.parquet", index=False)
    result = astrid(t, target=TARGET, classifier="nb", n_search=2, n_test=3, random_state=0,
                    progress=False)
    artefact = GroupingArtefact.from_result(result, t, created_at="2026-01-01T00:00:00Z")
    from astrid_airflow.gate._suite import gate_extra_files

    store = ArtefactStore(root / "store")
    store.save("m", artefact, extra_files=gate_extra_files(artefact))
    store.save("legacy", artefact)  # as saved before the gate existed: no suite.json
    (root / "artefact.json").write_text(artefact.to_json())
    shuffle_file(root / "ref.parquet", artefact, root / "surr.parquet", random_state=0)
    (root / "afile").write_text("a regular file")
    how = _try_readonly_mount(root / "ro")
    return {"root": root, "artefact": artefact, "table": t, "readonly": how}


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` (hidden ones too) with size and mtime, and every file of
    the in-memory object store (``memory://...``, with size and a hash of its bytes).

    Empty directories (e.g. a staging directory an operator creates before it fails)
    are not outputs; a directory with anything in it shows through its files.
    """
    from fsspec.implementations.memory import MemoryFileSystem

    out = {}
    for key, f in list(MemoryFileSystem.store.items()):
        data = f.getvalue()
        out[f"memory://{key}"] = (len(data), hash(data))
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns)
    return out


# ------------------------------------------------------------------------- the cases

@dataclass(frozen=True)
class Case:
    """One bad input.

    ``prepare(work)`` writes what the case needs into the working dir and returns the
    argv (``cli``) or a thunk (``library``/``operator``). ``expect`` is an exception class,
    ``"exit 2"``, ``"warning"`` or ``"note"`` (accepted, but reported), ``"gate FAILED"``
    (a library call returning a failed :class:`GateResult`) or ``"exit 143"`` (a CLI
    command run in a subprocess and sent SIGTERM once its joblib workers run); ``match``
    is a regex the message must contain.
    """

    id: str
    layer: str
    input: str
    prepare: Callable[[dict], Any]
    expect: Any
    match: str
    bug: str | None = None
    needs_readonly: bool = False
    # for accepted cases: ``verify(root, new_files)`` inspects the outputs before they are
    # removed and returns what is wrong with them ("" when nothing is)
    verify: Callable[[Path, tuple], str] | None = None


def _csv(work, name, frame):
    frame.to_csv(work["root"] / name, index=False)
    return name


def _pq(work, name, table):
    if isinstance(table, pd.DataFrame):
        table.to_parquet(work["root"] / name, index=False)
    else:
        pq.write_table(table, work["root"] / name)
    return name


def _t(work):
    return work["table"].copy()


def _with_small_class(work, rows):
    t = _t(work)
    extra = t.iloc[:rows].assign(**{TARGET: 2})
    return pd.concat([t, extra], ignore_index=True)


def _nested(work, name="nested.parquet"):
    t = _t(work)
    arrays = {c: pa.array(t[c].astype(str) if c == "a6" else t[c]) for c in t.columns}
    arrays["a1"] = pa.array([[float(v), 0.0] for v in t["a1"]])
    return _pq(work, name, pa.table(arrays))


def _dup_parquet(work):
    t = _t(work)
    cols = [pa.array(t["a1"]), pa.array(t["a2"]), pa.array(t["a2"]), pa.array(t[TARGET])]
    return _pq(work, "dup.parquet", pa.Table.from_arrays(cols, names=["a1", "a2", "a2",
                                                                      TARGET]))


def _art_text(work, change):
    d = json.loads(work["artefact"].to_json())
    change(d)
    return json.dumps(d, indent=2)


def _write(work, name, data):
    p = work["root"] / name
    p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return name


LEARN = ["--target", TARGET, "--classifier", "nb", "--r-search", "2", "--r-test", "3",
         "--seed", "0", "--quiet"]


def _learn(path, *extra):
    return ["learn", path, *LEARN, *extra]


def _shuffle(path, out="out.parquet", ref="store/m", *extra):
    return ["shuffle", path, "--artefact", ref, "--out", out, "--seed", "0", "--no-utility",
            *extra]


def _lib(fn):
    """A library call run with the working dir as cwd."""
    return fn


def _astrid(data, **kw):
    from astrid_airflow import astrid

    args = dict(target=TARGET, classifier="nb", n_search=2, n_test=3, random_state=0,
                progress=False)
    args.update(kw)
    return lambda: astrid(data, **args)


def _test_grouping(data, grouping="a1,a2;a3;a4;a5;a6", **kw):
    from astrid_airflow import test_grouping

    args = dict(target=TARGET, classifier="nb", n_permutations=3, random_state=0,
                progress=False)
    args.update(kw)
    return lambda: test_grouping(data, grouping=grouping, **args)


def _ctx():
    ti = types.SimpleNamespace(dag_id="bad_input", run_id="manual__1", task_id="t",
                               map_index=-1)
    return {"ti": ti, "run_id": "manual__1"}


def _op(kind, **kw):
    def thunk():
        if kind == "learn":
            from astrid_airflow.operators.learn import AstridLearnOperator as Op

            kw.setdefault("n_search", 2)
            kw.setdefault("n_test", 3)
            kw.setdefault("classifier", "nb")
            kw.setdefault("name", "m")
            kw.setdefault("random_state", 0)
        elif kind == "shuffle":
            from astrid_airflow.operators.shuffle import GoldenEyeShuffleOperator as Op

            kw.setdefault("artefact", "m@latest")
            kw.setdefault("utility", False)
        elif kind == "gate":
            from astrid_airflow.operators.gate import SurrogateGateOperator as Op

            kw.setdefault("artefact", "m@latest")
            kw.setdefault("original", "ref.parquet")
        else:
            from astrid_airflow.operators.publish import PublishSurrogateOperator as Op
        kw.setdefault("task_id", kind)
        if kind != "publish":
            kw.setdefault("store", "store")
        return Op(**kw).execute(_ctx())
    return thunk


def _fail():
    from astrid_airflow.operators._compat import AirflowFailException

    return AirflowFailException


BUG_ALL_NAN = ("missing check: an all-missing attribute column is accepted silently by "
               "check_table/astrid (expected DataError naming the column)")
BUG_CONSTANT = ("missing check: a constant attribute column is accepted silently "
                "(expected DataError naming it, suggesting --clean)")
BUG_DUP_CSV = ("read_table(CSV) lets pandas rename a duplicated header 'a2' to 'a2.1' "
               "silently (expected DataError: duplicated column name)")
BUG_DUP_PARQUET = ("read_table(Parquet) with duplicated column names raises a multi-line "
                   "ArrowInvalid dump (expected one line: duplicated column name)")
BUG_ID_LIKE = ("missing check: no warning that an ID-like column (all values unique) makes "
               "every row linkable")
BUG_CARDINALITY = ("missing check: a categorical with ~n/2 levels is one-hot encoded "
                   "(dense n x levels matrix) without a warning or error")
BUG_UNSEEN_NOTE = ("astrid shuffle drops the artefact check's notes: unseen categories in "
                   "a new batch are not reported (expected a note naming column and values)")
BUG_EMPTY_SURROGATE = ("make_surrogate accepts an empty table and returns an empty "
                       "surrogate (the CLI and operators reject it: 'The table is empty')")
BUG_NUMPY_REPR = ("check_table's single-class message shows the label as 'np.int64(1)' "
                  "(a NumPy repr; counts.index[0] is a NumPy scalar again after .tolist())")
BUG_GATE_MISSING = ("SurrogateGateOperator hashes the surrogate before checking it exists: "
                    "a missing file raises a raw, retryable FileNotFoundError")


def _suite_of(w, name, change, *, policy=None, legacy=False):
    """Save the artefact as ``store/<name>`` with its suite, then edit that suite.json."""
    from astrid_airflow.gate._policy import GatePolicy
    from astrid_airflow.gate._suite import gate_extra_files
    from astrid_airflow.release._store import ArtefactStore

    store, art = ArtefactStore(w["root"] / "store"), w["artefact"]
    if legacy:  # saved without a suite; the gate then wrote the default one
        version = store.save(name, art)
        store.add_file(name, version, "suite.json", gate_extra_files(art)["suite.json"])
    else:
        version = store.save(name, art, extra_files=gate_extra_files(
            art, GatePolicy(**(policy or {}))))
    path = w["root"] / "store" / name / version / "suite.json"
    path.chmod(0o644)
    suite = json.loads(path.read_text())
    if change is None:
        path.unlink()
    else:
        change(suite)
        path.write_text(json.dumps(suite, indent=2) + "\n")
    return f"store/{name}"


def _exp(suite, name):
    return next(e for e in suite["expectations"] if e["type"] == name)


_INTACT = "expect_surrogate_intact_row_proportion_to_be_at_most"


def _validate(ref, surrogate="surr.parquet", *extra):
    return ["validate", "--original", "ref.parquet", "--surrogate", surrogate,
            "--artefact", ref, "--metrics", "metrics.json", *extra]


def _gate_integrity_cases() -> list[Case]:
    """The release gate must judge what it is told, with the rules it was saved with."""
    c: list[Case] = []
    add = c.append

    def metrics(w):
        _write(w, "metrics.json", '{"accuracy_original": 0.9, "accuracy_surrogate": 0.9}')

    def validate(name, change, *extra, **kw):
        return lambda w: (metrics(w), _validate(_suite_of(w, name, change, **kw),
                                                "surr.parquet", *extra))[1]

    # ------------------------------------------------- suite bound to its artefact version
    add(Case("cli-suite-literal-threshold", "cli",
             "suite.json with `threshold: 1.0` written into an expectation, and "
             "`--max-intact 0.01`",
             validate("lit", lambda s: _exp(s, _INTACT)["kwargs"].update(threshold=1.0),
                      "--max-intact", "0.01"),
             "exit 2", r"suite\.json does not match its digest in the manifest"))
    add(Case("cli-suite-weakened-policy", "cli",
             "suite.json whose policy was weakened (`max_intact` 0.005 -> 1.0)",
             validate("weak", lambda s: s["meta"]["astrid"]["policy"].update(max_intact=1.0),
                      policy={"max_intact": 0.005}),
             "exit 2", r"suite\.json does not match its digest in the manifest"))
    add(Case("cli-suite-legacy-weakened", "cli",
             "version saved without a suite; the default suite.json then edited to "
             "`max_intact: 1.0`",
             validate("legw", lambda s: s["meta"]["astrid"]["policy"].update(max_intact=1.0),
                      legacy=True),
             "exit 2", r"not the default suite.*policy\.max_intact is 1\.0, expected 0\.01"))
    add(Case("cli-suite-other-fingerprint", "cli",
             "suite.json with the fingerprint of another table",
             validate("fp", lambda s: s["meta"]["astrid"]["artefact"].update(
                 fingerprint={"rows": 3, "sha256": "0" * 64})),
             "exit 2", r"suite\.json does not match its digest in the manifest"))
    add(Case("cli-suite-extra-expectation", "cli", "suite.json with an extra expectation",
             validate("extra", lambda s: s["expectations"].append(
                 {"type": "expect_table_row_count_to_be_between",
                  "kwargs": {"min_value": 0}})),
             "exit 2", r"suite\.json does not match its digest in the manifest"))
    add(Case("cli-suite-missing-expectation", "cli",
             "suite.json without the group-integrity expectation",
             validate("miss", lambda s: s["expectations"].pop()),
             "exit 2", r"suite\.json does not match its digest in the manifest"))
    add(Case("cli-suite-deleted", "cli",
             "suite.json deleted from a version that was saved with one",
             validate("del", None, policy={"max_intact": 0.0}),
             "exit 2", r"suite\.json is listed but missing"))
    add(Case("lib-suite-literal-threshold", "library",
             "`validate_surrogate` with a threshold written into suite.json",
             lambda w: (lambda ref: lambda: __import__("astrid_airflow").validate_surrogate(
                 "ref.parquet", "surr.parquet", ref, random_state=0))(
                 _suite_of(w, "liblit", lambda s: _exp(s, _INTACT)["kwargs"].update(
                     threshold=1.0))),
             StoreError, r"suite\.json does not match its digest in the manifest"))
    add(Case("op-gate-weakened-suite", "operator", "Gate: suite.json policy weakened",
             lambda w: (_suite_of(w, "opweak", lambda s: s["meta"]["astrid"]["policy"].update(
                 max_accuracy_drop=1.0)),
                 _op("gate", surrogate="surr.parquet", artefact="opweak@latest"))[1],
             "fail", r"StoreError: .*suite\.json does not match its digest"))
    # ------------------------------------ the gate judges exactly the bytes published
    def surr(w):
        return pd.read_parquet(w["root"] / "surr.parquet")

    def indexed(w, name=None):
        s = surr(w)
        s.index = pd.Index(w["table"]["a1"].to_numpy(), name=name)
        return s

    def hidden_bytes(w):
        raw = (w["root"] / "surr.parquet").read_bytes()
        footer = int.from_bytes(raw[-8:-4], "little") + 8
        hidden = w["table"].to_csv(index=False).encode()
        return _write(w, "hidden.parquet", raw[:-footer] + hidden + raw[-footer:])

    def kv(w):
        t = pa.Table.from_pandas(surr(w), preserve_index=False)
        return _pq(w, "kv.parquet", t.replace_schema_metadata(
            {**t.schema.metadata, b"original": w["table"].to_csv(index=False).encode()}))

    def field_meta(w):
        t = pa.Table.from_pandas(surr(w), preserve_index=False)
        f = t.schema.field("a3").with_metadata({"original": w["table"]["a3"].to_json()})
        return _pq(w, "fieldmeta.parquet", t.cast(t.schema.set(2, f)))

    def file_case(cid, what, make, match, layer="cli"):
        if layer == "cli":
            return Case(cid, "cli", what, lambda w: (metrics(w), _validate("store/m",
                                                                          make(w)))[1],
                        "exit 2", match)
        if layer == "library":
            return Case(cid, "library", what, lambda w: (
                lambda path: lambda: __import__("astrid_airflow").validate_surrogate(
                    "ref.parquet", path, w["artefact"], random_state=0))(make(w)),
                DataError, match)
        return Case(cid, "operator", what, lambda w: _op("gate", surrogate=make(w)), "fail",
                    match)

    add(file_case("cli-validate-parquet-index-column",
                  "Parquet surrogate storing the original a1 as its (pandas) index",
                  lambda w: (indexed(w).to_parquet(w["root"] / "idx.parquet"),
                             "idx.parquet")[1],
                  r"Not publishable: .* index column '__index_level_0__'"))
    add(file_case("cli-validate-parquet-named-index",
                  "Parquet surrogate with a named index column `a1_original`",
                  lambda w: (indexed(w, "a1_original").to_parquet(w["root"] / "nidx.parquet"),
                             "nidx.parquet")[1], r"index column 'a1_original'"))
    add(file_case("cli-validate-parquet-kv-metadata",
                  "Parquet surrogate with the original table in its key-value metadata",
                  kv, r"key-value metadata 'original'"))
    add(file_case("cli-validate-parquet-hidden-bytes",
                  "Parquet surrogate with the original CSV between row groups and footer",
                  hidden_bytes, r"\d+ bytes that no column chunk references"))
    add(file_case("cli-validate-parquet-extra-column", "Parquet surrogate with an extra column",
                  lambda w: _pq(w, "xcol.parquet", surr(w).assign(
                      z=w["table"]["a1"].to_numpy())), r"extra column 'z'"))
    add(file_case("cli-validate-parquet-unused-categories",
                  "Parquet surrogate whose a6 categories hide the original a1 values",
                  lambda w: _pq(w, "cats.parquet", surr(w).assign(a6=lambda d: d["a6"].cat
                                .add_categories([f"{v:.6f}" for v in w["table"]["a1"]]))),
                  r"value\(s\) in the dictionary of column 'a6'"))
    add(file_case("cli-validate-csv-index-column",
                  "CSV surrogate written with pandas' default index column",
                  lambda w: (surr(w).to_csv(w["root"] / "idx.csv"), "idx.csv")[1],
                  r"an unnamed column"))
    add(file_case("cli-validate-csv-long-rows",
                  "CSV surrogate whose rows carry one more field than the header",
                  lambda w: (indexed(w).to_csv(w["root"] / "long.csv", index_label=False),
                             "long.csv")[1], r"row 2 has 8 fields, the header 7"))
    add(file_case("lib-validate-field-metadata",
                  "`validate_surrogate` of a Parquet file with field metadata",
                  field_meta, r"field metadata on column 'a3'", layer="library"))
    add(file_case("op-gate-parquet-index-column", "Gate: staged Parquet with an index column",
                  lambda w: (indexed(w).to_parquet(w["root"] / "opidx.parquet"),
                             "opidx.parquet")[1], r"DataError: Not publishable: .*index column",
                  layer="operator"))
    # ------------------------------------------ user strings are text in every page
    hostile = "<img src=x onerror=alert(1)><script>alert(2)</script>"

    def hostile_files(w):
        art = w["artefact"].to_json().replace('"a3"', json.dumps(hostile))
        _write(w, "hostile.json", art)
        _pq(w, "hostile_ref.parquet", w["table"].rename(columns={"a3": hostile}))
        _pq(w, "hostile_surr.parquet", surr(w).rename(columns={"a3": hostile}))
        metrics(w)
        return ["validate", "--original", "hostile_ref.parquet", "--surrogate",
                "hostile_surr.parquet", "--artefact", "hostile.json", "--metrics",
                "metrics.json", "--seed", "0",
                # a raw surrogate: the per-group disclosure and attack checks relaxed, as
                # GatePolicy.raw_release_demo() does (still measured and shown)
                "--max-share-below-k", "1", "--max-class-disclosure-share", "1",
                "--max-largest-group-unique-share", "1", "--max-singling-out-risk", "1",
                "--max-linkability-risk", "1", "--max-inference-risk", "1",
                "--max-class-from-one-column-risk", "1", "--allow-weaker-policy"]

    def html_of(root, files):
        return {f: (root / f).read_text(errors="replace") for f in files
                if f.endswith(".html")}

    def escaped(root, files):
        pages = html_of(root, files)
        if not pages:
            return f"no HTML page written: {files}"
        raw = [f for f, text in pages.items() if "<script>alert(2)" in text
               or "<img src=x" in text]
        return f"the column name is raw HTML in {raw}" if raw else ""

    def no_javascript_link(root, files):
        pages = html_of(root, files)
        if not pages:
            return f"no HTML page written: {files}"
        bad = [f for f, text in pages.items()
               if re.search(r"""(href|src)\s*=\s*["']?\s*javascript:""", text, re.I)]
        return f"a javascript: link in {bad}" if bad else ""

    add(Case("cli-validate-hostile-column-name", "cli",
             "a column named `<img src=x onerror=...><script>...` (Data Docs escape it)",
             hostile_files, "note", r"gate PASSED", verify=escaped))
    add(Case("cli-report-javascript-link", "cli",
             "`astrid report --data-docs 'javascript:alert(1)'`",
             lambda w: ["report", "store/m", "--out", "jsreport", "--data-docs",
                        "javascript:alert(1)"], "note",
             r"note: --data-docs 'javascript:alert\(1\)' is not an http\(s\), file or "
             r"relative link", verify=no_javascript_link))
    return c


def _cases() -> list[Case]:
    ro = "ro/store"
    c: list[Case] = []
    add = c.append
    # ---------------------------------------------------------------- CLI: tables
    add(Case("cli-missing-file", "cli", "`astrid learn nope.csv`",
             lambda w: _learn("nope.csv"), "exit 2", r"Unreadable file 'nope.csv': no such file"))
    add(Case("cli-unsupported-suffix", "cli", "`astrid learn data.txt`",
             lambda w: _learn(_write(w, "data.txt", "a,b\n1,2\n")), "exit 2",
             r"expected a \.csv, \.parquet or \.arff"))
    add(Case("cli-corrupt-arff", "cli", "ARFF file with a malformed @data line",
             lambda w: _learn(_write(w, "bad.arff", "@relation x\n@attribute a numeric\n"
                                     "@attribute class {p,q}\n@data\nfoo,bar,baz\n")),
             "exit 2", r"Unreadable file 'bad\.arff'"))
    add(Case("cli-missing-target", "cli", "`--target` names no column",
             lambda w: ["learn", "ref.csv", "--target", "label", "--quiet"], "exit 2",
             r"Target column 'label' is not in the table"))
    add(Case("cli-one-class", "cli", "target with a single class",
             lambda w: _learn(_csv(w, "one.csv", _t(w).assign(**{TARGET: 1}))), "exit 2",
             r"single class \(1\)"))
    for rows in (1, 2, 3):
        add(Case(f"cli-class-with-{rows}-rows", "cli", f"a class with {rows} row(s)",
                 lambda w, rows=rows: _learn(_csv(w, f"small{rows}.csv",
                                                  _with_small_class(w, rows))),
                 "exit 2", r"Class\(es\) \[2\] .* fewer than 4 rows"))
    add(Case("cli-empty-table", "cli", "CSV with a header and no rows",
             lambda w: _learn(_csv(w, "empty.csv", _t(w).iloc[:0])), "exit 2",
             r"The table is empty \(0 rows\)"))
    add(Case("cli-zero-columns", "cli", "empty CSV file (no columns)",
             lambda w: _learn(_write(w, "nocols.csv", "")), "exit 2",
             r"No columns to parse"))
    add(Case("cli-nan-target", "cli", "a missing value in the target",
             lambda w: _learn(_csv(w, "nant.csv", _t(w).astype({TARGET: float}).assign(
                 **{TARGET: lambda d: d[TARGET].where(d.index != 3)}))), "exit 2",
             r"Target column 'class' has 1 missing value"))
    add(Case("cli-all-nan-column", "cli", "an attribute column with no values",
             lambda w: _learn(_csv(w, "allnan.csv", _t(w).assign(a7=np.nan))), "exit 2",
             r"a7"))
    add(Case("cli-constant-column", "cli", "a constant attribute column",
             lambda w: _learn(_csv(w, "const.csv", _t(w).assign(a7=1.0))), "exit 2",
             r"a7.*constant|constant.*a7"))
    add(Case("cli-duplicated-columns-csv", "cli", "CSV header `a1,a2,a2,...`",
             lambda w: _learn(_write(w, "dup.csv", "a1,a2,a2,class\n" + "".join(
                 f"{i},{i % 3},{i % 5},{i % 2}\n" for i in range(40)))), "exit 2",
             r"[Dd]uplicated column"))
    add(Case("cli-duplicated-columns-parquet", "cli", "Parquet file with two `a2` columns",
             lambda w: _learn(_dup_parquet(w)), "exit 2", r"[Dd]uplicat"))
    add(Case("cli-nested-parquet", "cli", "Parquet with a list<double> column",
             lambda w: _learn(_nested(w)), "exit 2", r"nested values"))
    add(Case("cli-unknown-classifier", "cli", "`--classifier xgboost`",
             lambda w: ["learn", "ref.csv", "--target", TARGET, "--classifier", "xgboost"],
             "exit 2", r"invalid choice: 'xgboost'"))
    add(Case("cli-zero-r-search", "cli", "`--r-search 0`",
             lambda w: ["learn", "ref.csv", "--target", TARGET, "--r-search", "0", "--quiet"],
             "exit 2", r"Invalid n_search: 0"))
    add(Case("cli-negative-r-test", "cli", "`--r-test -5`",
             lambda w: ["learn", "ref.csv", "--target", TARGET, "--r-test", "-5", "--quiet"],
             "exit 2", r"Invalid n_test: -5"))
    add(Case("cli-alpha-zero", "cli", "`--alpha 0`",
             lambda w: ["learn", "ref.csv", "--target", TARGET, "--alpha", "0", "--quiet"],
             "exit 2", r"Invalid alpha: 0\.0\. Must be a number in \(0, 1\)"))
    add(Case("cli-alpha-above-one", "cli", "`--alpha 1.5`",
             lambda w: ["learn", "ref.csv", "--target", TARGET, "--alpha", "1.5", "--quiet"],
             "exit 2", r"Invalid alpha: 1\.5"))
    add(Case("cli-store-read-only", "cli", "`--store` on a read-only filesystem",
             lambda w: _learn("ref.csv", "--store", ro, "--name", "m"), "exit 2",
             r"Cannot write to store .*(Read-only|permission)", needs_readonly=True))
    add(Case("cli-store-under-a-file", "cli", "`--store afile/store` (a path under a file)",
             lambda w: _learn("ref.csv", "--store", "afile/store", "--name", "m"), "exit 2",
             r"Cannot write to store .*Not a directory"))
    add(Case("cli-store-bad-name", "cli", "`--name ../escape`",
             lambda w: _learn("ref.csv", "--store", "store", "--name", "../escape"), "exit 2",
             r"Invalid artefact name '\.\./escape'"))
    # ------------------------------------------------------------ CLI: groupings
    test = ["test", "ref.csv", "--target", TARGET, "--r-test", "3", "--grouping"]
    add(Case("cli-grouping-not-partition", "cli", "`--grouping` leaving columns out",
             lambda w: [*test, "a1,a2;a3"], "exit 2",
             r"not a partition .* in no group \['a4', 'a5', 'a6'\]"))
    add(Case("cli-grouping-unknown-column", "cli", "`--grouping` naming an unknown column",
             lambda w: [*test, "a1,a2;a3;a4;a5;a6;zz"], "exit 2", r"unknown column\(s\) \['zz'\]"))
    add(Case("cli-grouping-overlap", "cli", "a column in two groups",
             lambda w: [*test, "a1,a2;a2,a3;a4;a5;a6"], "exit 2",
             r"'a2' appears in more than one group"))
    add(Case("cli-grouping-malformed", "cli", "`--grouping 'a1,,a2;a3'`",
             lambda w: [*test, "a1,,a2;a3"], "exit 2", r"Malformed grouping"))
    # -------------------------------------------------------- CLI: new batches
    add(Case("cli-surrogate-exists", "cli", "`--out` names an existing file",
             lambda w: _shuffle("ref.parquet", out="surr.parquet"), "exit 2",
             r"Refusing to overwrite existing '.*surr\.parquet'"))
    add(Case("cli-batch-missing-column", "cli", "new batch without column a4",
             lambda w: _shuffle(_pq(w, "miss.parquet", _t(w).drop(columns=["a4"]))),
             "exit 2", r"missing column\(s\) \['a4'\]"))
    add(Case("cli-batch-extra-column", "cli", "new batch with an extra column",
             lambda w: _shuffle(_pq(w, "extra.parquet", _t(w).assign(z=1))), "exit 2",
             r"unexpected column\(s\) \['z'\]"))
    add(Case("cli-batch-type-drift", "cli", "integer column a5 arriving as strings",
             lambda w: _shuffle(_pq(w, "drift.parquet", _t(w).assign(a5=lambda d: d.a5.astype(
                 str)))), "exit 2", r"column 'a5' should be integer \(int64\) but is string"))
    add(Case("cli-batch-nan-target", "cli", "new batch with a missing class label",
             lambda w: _shuffle(_pq(w, "nanb.parquet", pa.table(
                 {**{c: w["table"][c] for c in w["table"].columns if c != TARGET},
                  TARGET: pa.array([None, *w["table"][TARGET][1:]], pa.int64())}))),
             "exit 2", r"Target column 'class' has 1 missing value"))
    add(Case("cli-batch-empty", "cli", "new batch with no rows",
             lambda w: _shuffle(_pq(w, "emptyb.parquet", _t(w).iloc[:0])), "exit 2",
             r"The table is empty"))
    add(Case("cli-batch-nested", "cli", "new batch: Parquet with a list column",
             lambda w: _shuffle(_nested(w, "nestedb.parquet")), "exit 2",
             r"column 'a1' should be float .* but is other \(list"))
    add(Case("cli-batch-unseen-category", "cli", "new batch with an unseen category of a6",
             lambda w: _shuffle(_pq(w, "unseen.parquet", _t(w).assign(
                 a6=pd.Categorical(["z"] * len(w["table"]))))), "note", r"a6.*z"))
    # ------------------------------------------------------------ CLI: artefacts
    add(Case("cli-artefact-corrupt", "cli", "artefact file that is not JSON",
             lambda w: _shuffle("ref.parquet", ref=_write(w, "corrupt.json", "{not json")),
             "exit 2", r"Corrupt or truncated artefact JSON"))
    add(Case("cli-artefact-truncated", "cli", "artefact JSON cut in half",
             lambda w: _shuffle("ref.parquet", ref=_write(
                 w, "trunc.json", w["artefact"].to_json()[:700])), "exit 2",
             r"Corrupt or truncated artefact JSON: .* at line \d+ column \d+"))
    add(Case("cli-artefact-empty", "cli", "empty artefact file",
             lambda w: _shuffle("ref.parquet", ref=_write(w, "empty.json", "")), "exit 2",
             r"the file is empty"))
    add(Case("cli-artefact-binary", "cli", "artefact file with non-UTF-8 bytes",
             lambda w: _shuffle("ref.parquet", ref=_write(w, "bin.json", b"\xff\xfe\x00")),
             "exit 2", r"not UTF-8"))
    add(Case("cli-artefact-future-schema", "cli", "artefact with `schema_version: 2`",
             lambda w: _shuffle("ref.parquet", ref=_write(w, "future.json", _art_text(
                 w, lambda d: d.update(schema_version=2)))), "exit 2",
             r"schema_version 2 is newer .* Upgrade astrid-airflow"))
    add(Case("cli-artefact-missing-keys", "cli", "artefact JSON without `grouping`",
             lambda w: _shuffle("ref.parquet", ref=_write(w, "nogroup.json", _art_text(
                 w, lambda d: d.pop("grouping")))), "exit 2", r"grouping"))
    add(Case("cli-artefact-unknown-name", "cli", "`--artefact store/nobody`",
             lambda w: _shuffle("ref.parquet", ref="store/nobody"), "exit 2",
             r"No artefact named 'nobody'"))
    add(Case("cli-artefact-unknown-version", "cli", "`--artefact store/m@v0009`",
             lambda w: _shuffle("ref.parquet", ref="store/m@v0009"), "exit 2",
             r"No version v0009 of 'm'"))
    add(Case("cli-zero-copies", "cli", "`--n-copies 0`",
             lambda w: _shuffle("ref.parquet", "out.parquet", "store/m", "--n-copies", "0"),
             "exit 2", r"Invalid --n-copies: 0"))
    add(Case("cli-validate-threshold", "cli", "`astrid validate --max-intact 2`",
             lambda w: ["validate", "--original", "ref.parquet", "--surrogate", "surr.parquet",
                        "--artefact", "store/m", "--max-intact", "2"], "exit 2",
             r"Invalid max_intact: 2\.0\. Must be a number in \[0, 1\]"))
    add(Case("cli-validate-threshold-no-suite", "cli",
             "`astrid validate --max-intact 2`, artefact version without a stored suite",
             lambda w: ["validate", "--original", "ref.parquet", "--surrogate", "surr.parquet",
                        "--artefact", "store/legacy", "--max-intact", "2"], "exit 2",
             r"Invalid max_intact: 2\.0"))
    add(Case("cli-validate-missing-surrogate", "cli", "`astrid validate` of a missing file",
             lambda w: ["validate", "--original", "ref.parquet", "--surrogate", "gone.parquet",
                        "--artefact", "store/m"], "exit 2",
             r"Unreadable file 'gone\.parquet': no such file"))
    add(Case("cli-list-missing-store", "cli", "`astrid artefacts list nostore`",
             lambda w: ["artefacts", "list", "nostore"], "exit 2", r"No artefact store at"))
    add(Case("cli-synth-exists", "cli", "`astrid synth --out` an existing file",
             lambda w: ["synth", "--out", "ref.csv"], "exit 2", r"exists; pass --overwrite"))
    # ------------------------------------------------------------------- library
    add(Case("lib-not-a-table", "library", "`read_table([1, 2])`",
             lambda w: (lambda: __import__("astrid_airflow").read_table([1, 2])), DataError,
             r"Cannot read a table from list"))
    add(Case("lib-non-string-columns", "library", "DataFrame with integer column names",
             lambda w: _astrid(_t(w).set_axis([0, 1, 2, 3, 4, 5, TARGET], axis=1)),
             DataError, r"Column names must be strings; got \[0, 1, 2, 3, 4"))
    add(Case("lib-duplicated-columns", "library", "DataFrame with two `a1` columns",
             lambda w: _astrid(_t(w).set_axis(["a1", "a1", "a3", "a4", "a5", "a6", TARGET],
                                              axis=1)), DataError,
             r"Duplicated column name\(s\): \['a1'\]"))
    add(Case("lib-zero-columns", "library", "`astrid(pd.DataFrame())`",
             lambda w: _astrid(pd.DataFrame()), DataError, r"Target column 'class' is not"))
    add(Case("lib-only-target", "library", "table with the target column only",
             lambda w: _astrid(_t(w)[[TARGET]]), DataError, r"no attribute columns"))
    add(Case("lib-one-attribute", "library", "ASTRID on one attribute",
             lambda w: _astrid(_t(w)[["a1", TARGET]]), DataError,
             r"at least two attribute columns"))
    add(Case("lib-target-not-str", "library", "`target=0`",
             lambda w: _astrid(_t(w), target=0), DataError, r"must be a column name"))
    add(Case("lib-class-with-1-row", "library", "`test_grouping` with a 1-row class",
             lambda w: _test_grouping(_with_small_class(w, 1)), DataError,
             r"fewer than 2 rows"))
    add(Case("lib-nan-target", "library", "`astrid` with a missing class label",
             lambda w: _astrid(_t(w).astype({TARGET: float}).assign(
                 **{TARGET: lambda d: d[TARGET].where(d.index != 0)})), DataError,
             r"has 1 missing value"))
    add(Case("lib-all-nan-column", "library", "`astrid` with an all-NaN column",
             lambda w: _astrid(_t(w).assign(a7=np.nan)), DataError, r"a7"))
    add(Case("lib-constant-column", "library", "`astrid` with a constant column",
             lambda w: _astrid(_t(w).assign(a7="same")), DataError, r"a7"))
    add(Case("lib-id-like-column", "library", "`astrid` with an ID column (all unique)",
             lambda w: _astrid(_t(w).assign(id=[f"row{i}" for i in range(len(w["table"]))])),
             "warning", r"'id'.*(unique|linkab)"))
    add(Case("lib-huge-cardinality", "library",
             "`test_grouping` (svm) with a 1000-level categorical in 2000 rows",
             lambda w: _test_grouping(_t(w).sample(2000, replace=True, random_state=0)
                                      .reset_index(drop=True)
                                      .assign(a7=[f"v{i // 2}" for i in range(2000)]),
                                      grouping="a1,a2;a3;a4;a5;a6;a7", classifier="svm",
                                      n_permutations=1),
             ("warning", DataError), r"a7.*(categor|levels|cardinality)"))
    add(Case("lib-nested-values", "library", "`astrid` on a DataFrame holding lists",
             lambda w: _astrid(_t(w).assign(a1=[[1, 2]] * len(w["table"]))), DataError,
             r"nested values"))
    add(Case("lib-zero-r", "library", "`astrid(n_search=0)`",
             lambda w: _astrid(_t(w), n_search=0), ParameterError, r"Invalid n_search: 0"))
    add(Case("lib-negative-r", "library", "`test_grouping(n_permutations=-1)`",
             lambda w: _test_grouping(_t(w), n_permutations=-1), ParameterError,
             r"Invalid n_permutations: -1"))
    add(Case("lib-fractional-r", "library", "`test_grouping(n_permutations=2.5)`",
             lambda w: _test_grouping(_t(w), n_permutations=2.5), ParameterError,
             r"Invalid n_permutations: 2\.5"))
    add(Case("lib-alpha-one", "library", "`astrid(alpha=1.0)`",
             lambda w: _astrid(_t(w), alpha=1.0), ParameterError, r"Invalid alpha: 1\.0"))
    add(Case("lib-alpha-nan", "library", "`astrid(alpha=nan)`",
             lambda w: _astrid(_t(w), alpha=float("nan")), ParameterError,
             r"Invalid alpha: nan"))
    add(Case("lib-alpha-string", "library", "`astrid(alpha='0.05')`",
             lambda w: _astrid(_t(w), alpha="0.05"), ParameterError, r"Invalid alpha: '0\.05'"))
    add(Case("lib-test-size", "library", "`test_grouping(test_size=1.5)`",
             lambda w: _test_grouping(_t(w), test_size=1.5), ParameterError,
             r"Invalid test_size: 1\.5"))
    add(Case("lib-unknown-classifier", "library", "`astrid(classifier='xgboost')`",
             lambda w: _astrid(_t(w), classifier="xgboost"), ParameterError,
             r"Unknown classifier 'xgboost'"))
    add(Case("lib-bad-classifier-param", "library", "`classifier_params={'nope': 1}`",
             lambda w: _astrid(_t(w), classifier="rf", classifier_params={"nope": 1}),
             ParameterError, r"Invalid classifier parameters"))
    add(Case("lib-negative-seed", "library", "`astrid(random_state=-1)`",
             lambda w: _astrid(_t(w), random_state=-1), ParameterError,
             r"Invalid random_state: -1"))
    add(Case("lib-zero-jobs", "library", "`astrid(n_jobs=0)`",
             lambda w: _astrid(_t(w), n_jobs=0), ParameterError, r"Invalid n_jobs: 0"))
    add(Case("lib-grouping-overlap", "library", "`Grouping([['a'], ['a', 'b']])`",
             lambda w: (lambda: __import__("astrid_airflow").Grouping([["a"], ["a", "b"]])),
             GroupingError, r"'a' appears in more than one group"))
    add(Case("lib-grouping-not-partition", "library", "`test_grouping` with a4..a6 left out",
             lambda w: _test_grouping(_t(w), grouping="a1,a2;a3"), GroupingError,
             r"in no group \['a4', 'a5', 'a6'\]"))
    add(Case("lib-artefact-not-utf8", "library", "`GroupingArtefact.from_json(b'\\xff')`",
             lambda w: (lambda: __import__("astrid_airflow").GroupingArtefact.from_json(
                 b"\xff")), ArtefactError, r"not UTF-8"))
    add(Case("lib-artefact-truncated", "library", "artefact JSON cut at 200 characters",
             lambda w: (lambda: __import__("astrid_airflow").GroupingArtefact.from_json(
                 w["artefact"].to_json()[:200])), ArtefactError, r"truncated"))
    add(Case("lib-artefact-future", "library", "artefact with `schema_version: 99`",
             lambda w: (lambda: __import__("astrid_airflow").GroupingArtefact.from_json(
                 _art_text(w, lambda d: d.update(schema_version=99)))), ArtefactError,
             r"schema_version 99 is newer"))
    add(Case("lib-artefact-bad-alpha", "library", "artefact with `alpha: 1.5`",
             lambda w: (lambda: __import__("astrid_airflow").GroupingArtefact.from_json(
                 _art_text(w, lambda d: d.update(alpha=1.5)))), ArtefactError, r"alpha"))
    add(Case("lib-artefact-grouping-not-partition", "library",
             "artefact whose grouping leaves a column out",
             lambda w: (lambda: __import__("astrid_airflow").GroupingArtefact.from_json(
                 _art_text(w, lambda d: d.update(grouping=d["grouping"][1:])))),
             ArtefactError, r"partition|no group"))
    add(Case("lib-schema-type-drift", "library", "`check_table` with a5 as strings",
             lambda w: (lambda: w["artefact"].check_table(_t(w).assign(a5=lambda d: d.a5
                                                                        .astype(str)))),
             SchemaMismatchError, r"column 'a5' should be integer"))
    add(Case("lib-unseen-category", "library", "`check_table` with an unseen category",
             lambda w: (lambda: w["artefact"].check_table(_t(w).assign(
                 a6=pd.Categorical(["z"] * len(w["table"]))))), "note",
             r"Column 'a6' has 1 value\(s\) outside its recorded categories: \['z'\]"))
    add(Case("lib-surrogate-extra-column", "library", "`make_surrogate` with an extra column",
             lambda w: (lambda: __import__("astrid_airflow").make_surrogate(
                 _t(w).assign(z=0), w["artefact"], random_state=0)), SchemaMismatchError,
             r"unexpected column\(s\) \['z'\]"))
    add(Case("lib-surrogate-nan-target", "library", "`make_surrogate` with a NaN label",
             lambda w: (lambda: __import__("astrid_airflow").make_surrogate(
                 _t(w).assign(**{TARGET: lambda d: d[TARGET].astype("Int64").where(
                     d.index != 0)}), "a1,a2;a3;a4;a5;a6", target=TARGET, random_state=0)),
             DataError, r"has 1 missing value"))
    add(Case("lib-surrogate-empty", "library", "`make_surrogate` of an empty table",
             lambda w: (lambda: __import__("astrid_airflow").make_surrogate(
                 _t(w).iloc[:0], w["artefact"], random_state=0)), DataError, r"empty"))
    add(Case("lib-shuffle-file-exists", "library", "`shuffle_file(out=existing)`",
             lambda w: (lambda: __import__("astrid_airflow").shuffle_file(
                 "ref.parquet", w["artefact"], "surr.parquet", random_state=0)), StoreError,
             r"Refusing to overwrite"))
    add(Case("lib-store-read-only", "library", "`ArtefactStore(read-only).save`",
             lambda w: (lambda: __import__("astrid_airflow").ArtefactStore(ro).save(
                 "m", w["artefact"])), StoreError, r"Read-only|permission",
             needs_readonly=True))
    add(Case("lib-store-unknown-name", "library", "`ArtefactStore.load('nobody')`",
             lambda w: (lambda: __import__("astrid_airflow").ArtefactStore("store").load(
                 "nobody")), StoreError, r"No artefact named 'nobody'"))
    add(Case("lib-gate-threshold", "library", "`validate_surrogate(policy={'max_intact': -0.1})`",
             lambda w: (lambda: __import__("astrid_airflow").validate_surrogate(
                 "ref.parquet", "surr.parquet", w["artefact"], policy={"max_intact": -0.1})),
             ParameterError, r"Invalid max_intact: -0\.1"))
    # ----------------------------------------------------------------- operators
    op = "operator"
    add(Case("op-learn-missing-file", op, "Learn: reference file missing",
             lambda w: _op("learn", reference="nope.csv"), "fail",
             r"Input file '.*nope\.csv' does not exist"))
    add(Case("op-learn-missing-target", op, "Learn: `target='label'`",
             lambda w: _op("learn", reference="ref.csv", target="label", force=True), "fail",
             r"DataError: Target column 'label'"))
    add(Case("op-learn-one-class", op, "Learn: one class",
             lambda w: _op("learn", reference=_csv(w, "one_op.csv", _t(w).assign(
                 **{TARGET: 0})), force=True), "fail", r"single class"))
    add(Case("op-learn-zero-r", op, "Learn: `n_test='0'` (templated)",
             lambda w: _op("learn", reference="ref.csv", n_test="0", force=True), "fail",
             r"Invalid n_test: 0"))
    add(Case("op-learn-alpha", op, "Learn: `alpha='1.5'`",
             lambda w: _op("learn", reference="ref.csv", alpha="1.5", force=True), "fail",
             r"Invalid alpha: 1\.5"))
    add(Case("op-learn-classifier", op, "Learn: `classifier='xgboost'`",
             lambda w: _op("learn", reference="ref.csv", classifier="xgboost", force=True),
             "fail", r"Unknown classifier 'xgboost'"))
    add(Case("op-learn-read-only-store", op, "Learn: store on a read-only filesystem",
             lambda w: _op("learn", reference="ref.csv", store=ro), "fail",
             r"StoreError: Cannot write to store", needs_readonly=True))
    add(Case("op-shuffle-missing-column", op, "Shuffle: batch without a4",
             lambda w: _op("shuffle", table=_csv(w, "miss_op.csv", _t(w).drop(columns="a4")),
                           out="staging/s.parquet"), "fail",
             r"SchemaMismatchError: .*missing column\(s\) \['a4'\]"))
    add(Case("op-shuffle-nested", op, "Shuffle: Parquet batch with a list column",
             lambda w: _op("shuffle", table=_nested(w, "nested_op.parquet"),
                           out="staging/s.parquet"), "fail", r"but is other \(list"))
    add(Case("op-shuffle-corrupt-artefact", op, "Shuffle: corrupt artefact in the store",
             lambda w: (_write(w, "store/bad/v0001/artefact.json", "{trunc") if
                        (w["root"] / "store/bad/v0001").mkdir(parents=True, exist_ok=True)
                        is None else None,
                        _op("shuffle", table="ref.parquet", artefact="bad@v0001",
                            out="staging/s.parquet"))[1], "fail",
             r"StoreError: .*no manifest\.json: .*not written by ArtefactStore\.save"))
    add(Case("op-shuffle-unknown-version", op, "Shuffle: `artefact='m@v0042'`",
             lambda w: _op("shuffle", table="ref.parquet", artefact="m@v0042",
                           out="staging/s.parquet"), "fail", r"No version v0042 of 'm'"))
    add(Case("op-shuffle-seed", op, "Shuffle: `random_state='-4'`",
             lambda w: _op("shuffle", table="ref.parquet", random_state="-4",
                           out="staging/s.parquet"), "fail", r"Invalid random_state: -4"))
    add(Case("op-gate-threshold", op, "Gate: `policy={'max_intact': '2'}`",
             lambda w: _op("gate", surrogate="surr.parquet", policy={"max_intact": "2"}),
             "fail", r"Invalid max_intact: 2\.0"))
    add(Case("op-gate-unknown-threshold", op, "Gate: `policy={'max_nothing': 1}`",
             lambda w: _op("gate", surrogate="surr.parquet", policy={"max_nothing": 1}),
             "fail", r"Unknown gate threshold\(s\) \['max_nothing'\]"))
    add(Case("op-gate-missing-surrogate", op, "Gate: staged surrogate missing",
             lambda w: _op("gate", surrogate="gone.parquet"), "fail", r"gone\.parquet"))
    add(Case("op-publish-ungated", op, "Publish: surrogate without a gate receipt",
             lambda w: _op("publish", surrogate="surr.parquet", destination="pub/s.parquet"),
             "fail", r"no gate receipt"))
    add(Case("op-publish-failed-gate", op, "Publish: receipt says the gate failed",
             lambda w: (_write(w, "failed.gate.json", json.dumps(
                 {"success": False, "failed": ["privacy: intact rows"]})),
                 _op("publish", surrogate=_pq(w, "failed.parquet", _t(w)),
                     destination="pub/s.parquet"))[1], "fail",
             r"FAILED the release gate"))
    # ------------------------------------------ store and inputs (issue 18, b-inputs)
    # names and versions: fullmatch, ASCII digits, checked before any work
    add(Case("cli-learn-name-newline", "cli", "`astrid learn --name $'nl\\n'`",
             lambda w: _learn("ref.csv", "--store", "store", "--name", "nl\n"), "exit 2",
             r"Invalid artefact name 'nl\\n'"))
    add(Case("cli-learn-name-before-work", "cli",
             "`astrid learn nope.csv --name ../../x`: the name is refused before reading",
             lambda w: _learn("nope.csv", "--store", "store", "--name", "../../x"), "exit 2",
             r"Invalid artefact name '\.\./\.\./x'"))
    add(Case("cli-ref-non-ascii-version", "cli", "`--artefact 'store/m@v٠٠٠١'` (Arabic-Indic "
             "digits)", lambda w: _shuffle("ref.parquet", ref="store/m@v٠٠٠١"), "exit 2",
             r"No artefact at .*not an artefact\.json"))
    add(Case("cli-planted-non-ascii-version", "cli",
             "planted version dir `v٠٠٠٩` (copy of v0001 with a corrupt artefact): "
             "`artefacts list` ignores it", lambda w: ["artefacts", "list", _planted(
                 w, "nastore", "v٠٠٠٩", b"{corrupt")], "note",
             r"(?s)^(?!.*ERROR)(?!.*٠).*m\s+v0001"))
    # symbolic links inside a store are never followed
    add(Case("cli-validate-symlinked-version", "cli",
             "`validate --artefact lnstore/m@v0009`, v0009 a symlink to a directory outside",
             lambda w: _validate_files("ref.parquet", "surr.parquet",
                                 _linked_version(w, "lnstore") + "/m@v0009"), "exit 2",
             r"symbolic link inside the artefact store"))
    add(Case("cli-shuffle-symlinked-version-path", "cli",
             "`shuffle --artefact lnstore2/m/v0009` (the version dir is a symlink)",
             lambda w: _shuffle("ref.parquet", ref=_linked_version(w, "lnstore2") +
                                "/m/v0009"), "exit 2",
             r"symbolic link inside the artefact store"))
    add(Case("lib-store-symlinked-name", "library",
             "`ArtefactStore.load('alias')`, name dir `alias` a symlink to `m`",
             lambda w: (lambda root: lambda: __import__("astrid_airflow").ArtefactStore(
                 root).load("alias"))(_linked_name(w)), StoreError,
             r"symbolic link inside the artefact store"))
    add(Case("cli-store-root-symlink-loop", "cli", "`artefacts list loopstore` (a link to "
             "itself: ELOOP)", lambda w: ["artefacts", "list", _loop(w, "loopstore")],
             "exit 2", r"Too many levels of symbolic links"))
    add(Case("cli-list-skips-loop-entry", "cli",
             "`artefacts list` of a store holding a symlink loop entry", lambda w: [
                 "artefacts", "list", _loop_inside(w)], "note", r"m\s+v0001"))
    add(Case("cli-input-symlink-loop", "cli", "`astrid learn loop.csv` (ELOOP)",
             lambda w: _learn(_loop(w, "loop.csv")), "exit 2",
             r"Unreadable file 'loop\.csv': Too many levels of symbolic links"))
    add(Case("cli-input-directory", "cli", "`astrid learn adir.csv` (a directory)",
             lambda w: _learn(_mkdir(w, "adir.csv")), "exit 2",
             r"Unreadable file 'adir\.csv': it is a directory"))
    # JSON from disk: depth-limited, one line, one bad version never hides the others
    add(Case("cli-artefact-deep-json", "cli", "artefact JSON nested 100k levels deep",
             lambda w: _shuffle("ref.parquet", ref=_write(w, "deep.json", _deep())),
             "exit 2", r"Corrupt artefact JSON: nested deeper than 64 levels"))
    add(Case("cli-list-deep-json-version", "cli",
             "`artefacts list` with one version's artefact.json nested 100k deep", lambda w: [
                 "artefacts", "list", _planted(w, "deepstore", "v0002", _deep().encode())],
             "note", r"(?s)m\s+v0001\s+\d{4}-.*v0002\s+ERROR.*not written by"))
    add(Case("cli-validate-deep-suite", "cli", "`validate` with suite.json nested 100k deep",
             lambda w: _validate_files("ref.parquet", "surr.parquet", _deep_suite(w) + "/m"),
             "exit 2", r"suite\.json does not match its digest in the manifest"))
    add(Case("cli-validate-deep-metrics", "cli", "`validate --metrics` nested 100k deep",
             lambda w: [*_validate_files("ref.parquet", "surr.parquet", "store/m"), "--metrics",
                        _write(w, "deepm.json", _deep())], "exit 2",
             r"--metrics 'deepm\.json': nested deeper than 64"))
    # non-finite numbers are refused where a table is read
    add(Case("cli-learn-inf", "cli", "`astrid learn` with `inf` in an attribute",
             lambda w: _learn(_csv(w, "inf.csv", _t(w).assign(
                 a1=lambda d: d.a1.where(d.index != 3, np.inf)))), "exit 2",
             r"Infinite values \(inf/-inf\) in 'inf\.csv', column\(s\) \{'a1': 1\}"))
    add(Case("cli-validate-inf", "cli", "`astrid validate`, surrogate with `-inf`",
             lambda w: _validate_files("ref.parquet", _pq(w, "infs.parquet", _t(w).assign(
                 a2=lambda d: d.a2.where(d.index != 5, -np.inf)))), "exit 2",
             r"Infinite values .*'infs\.parquet'.*'a2': 1"))
    add(Case("cli-shuffle-inf", "cli", "`astrid shuffle` of a CSV with `inf`",
             lambda w: _shuffle(_csv(w, "infb.csv", _t(w).assign(a3=np.inf))), "exit 2",
             r"Infinite values .*'a3': 60"))
    # disk full while writing: one line, nothing left behind
    add(Case("lib-shuffle-disk-full", "library", "`shuffle_file` when the disk fills up "
             "mid-write (ENOSPC)", lambda w: _disk_full(lambda: __import__(
                 "astrid_airflow").shuffle_file("ref.parquet", w["artefact"], "full.parquet",
                                                 random_state=0)), StoreError,
             r"Cannot write '.*full\.parquet': No space left on device"))
    # one reader: every command reads what learn reads, with the same types
    add(Case("cli-shuffle-arff", "cli", "`astrid shuffle` of an ARFF file (read as learn "
             "reads it: a5 INTEGER becomes float)", lambda w: _shuffle(_arff(w)), "exit 2",
             r"column 'a5' should be integer \(int64\) but is float"))
    add(Case("cli-tz-roundtrip", "cli", "CSV with `+02:00` timestamps: learn, shuffle, "
             "`validate` passes", lambda w: _tz_roundtrip(w), "note", r"gate PASSED"))
    # validate: empty tables are bad input; messages stay one readable line
    add(Case("cli-validate-header-only", "cli", "`validate` with header-only original and "
             "surrogate", lambda w: _validate_files(_csv(w, "h.csv", _t(w).iloc[:0]), "h.csv"),
             "exit 2", r"The original table is empty \(0 rows\)"))
    add(Case("cli-learn-float-target-1000", "cli", "`astrid learn` with a float target of "
             "1,000 distinct values", lambda w: _learn(_csv(w, "ftarget.csv", _t(w).sample(
                 1000, replace=True, random_state=0).assign(**{TARGET: np.linspace(
                     0, 1, 1000)}))), "exit 2",
             r"(?s)^(?=.{0,700}$).*… and 995 more .*… and 995 more"))
    # outputs: bounded, never over an input, never inside a store
    add(Case("cli-fuse-rows-huge", "cli", "`astrid fuse --rows 100000000`",
             lambda w: _fuse(w, "fused.parquet", "--rows", "100000000"), "exit 2",
             r"Invalid n_rows: 100000000\. At most 10 times"))
    add(Case("cli-fuse-out-is-part", "cli", "`astrid fuse --out` one of its parts "
             "(`--overwrite`)", lambda w: _fuse(w, "part1.csv", "--overwrite"), "exit 2",
             r"Refusing to write 'part1\.csv': it is the input"))
    add(Case("cli-shuffle-out-is-input", "cli", "`shuffle in.csv --out in.csv --overwrite`",
             lambda w: _shuffle("ref.csv", "ref.csv", "store/m", "--overwrite"), "exit 2",
             r"Refusing to write 'ref\.csv': it is the input 'ref\.csv'"))
    add(Case("cli-shuffle-out-hardlink-input", "cli",
             "`shuffle ref.csv --out hard.csv --overwrite`, hard.csv a hard link to ref.csv",
             lambda w: _shuffle("ref.csv", _link(w, "hard.csv", hard=True), "store/m",
                                "--overwrite"), "exit 2", r"it is the input 'ref\.csv'"))
    add(Case("cli-shuffle-out-symlink-input", "cli",
             "`shuffle ref.csv --out soft.csv --overwrite`, soft.csv a symlink to ref.csv",
             lambda w: _shuffle("ref.csv", _link(w, "soft.csv", hard=False), "store/m",
                                "--overwrite"), "exit 2", r"it is the input 'ref\.csv'"))
    add(Case("cli-shuffle-out-into-version", "cli", "`shuffle --out store/m/v0001/s.parquet`",
             lambda w: _shuffle("ref.parquet", "store/m/v0001/s.parquet"), "exit 2",
             r"inside the artefact store version directory"))
    add(Case("cli-synth-out-into-name-dir", "cli", "`synth --out store/m/x.csv`",
             lambda w: ["synth", "--out", "store/m/x.csv"], "exit 2",
             r"inside the artefact store name directory"))
    add(Case("cli-validate-out-dir-in-version", "cli", "`validate --out-dir store/m/v0001`",
             lambda w: [*_validate_files("ref.parquet", "surr.parquet", "store/m"), "--out-dir",
                        "store/m/v0001", "--metrics", _write(w, "acc.json", json.dumps(
                            {"accuracy_original": 0.9, "accuracy_surrogate": 0.9}))],
             "exit 2", r"inside the artefact store version directory"))
    add(Case("cli-validate-linked-suite", "cli", "`validate`, the version's suite.json a "
             "symlink to a suite outside the store", lambda w: _validate_files(
                 "ref.parquet", "surr.parquet", _linked_suite(w) + "/m"), "exit 2",
             r"suite\.json': a symbolic link inside the artefact store"))
    add(Case("cli-validate-result-over-metrics", "cli",
             "`validate --metrics surr.validation.json` (the result would replace it)",
             lambda w: [*_validate_files("ref.parquet", "surr.parquet"), "--metrics", _write(
                 w, "surr.validation.json", json.dumps(
                     {"accuracy_original": 0.9, "accuracy_surrogate": 0.9}))], "exit 2",
             r"Refusing to write '.*surr\.validation\.json': it is the input"))
    add(Case("cli-shuffle-n-copies-huge", "cli", "`astrid shuffle --n-copies 5000`",
             lambda w: _shuffle("ref.parquet", "many.parquet", "store/m", "--n-copies",
                                "5000"), "exit 2", r"Invalid n_copies: 5000\. At most 100"))
    add(Case("cli-input-fifo", "cli", "`astrid learn fifo.csv` (a named pipe: would block)",
             lambda w: _learn(_fifo(w, "fifo.csv")), "exit 2",
             r"Unreadable file 'fifo\.csv': not a regular file"))
    add(Case("cli-report-out-holds-input", "cli",
             "`astrid report --out rep --overwrite` with `--original rep/ref.csv`",
             lambda w: ["report", "store/m", "--original", _in_dir(w, "rep", "ref.csv"),
                        "--surrogate", "surr.parquet", "--out", "rep", "--overwrite"],
             "exit 2", r"Refusing to write 'rep': it holds the input 'rep/ref\.csv'"))
    add(Case("cli-shuffle-csv-not-utf8", "cli", "`astrid shuffle` of a Latin-1 CSV (read "
             "as learn reads it: refused, not bytes)", lambda w: _shuffle(_write(
                 w, "latin1.csv", _t(w).assign(a6="café").to_csv(index=False).encode(
                     "latin-1"))), "exit 2", r"\['a6'\] are not UTF-8 text"))
    return c


def _remote_store(work) -> str:
    """``memory://badinput-store`` holding ``m`` (v0001), the work artefact with its suite."""
    from astrid_airflow.gate._suite import gate_extra_files
    from astrid_airflow.release._store import ArtefactStore

    url = "memory://badinput-store"
    store = ArtefactStore(url)
    if not store._fs.exists("/badinput-store/m/v0001/artefact.json"):
        store.save("m", work["artefact"], extra_files=gate_extra_files(work["artefact"]))
    return url


def _coarser_release(work) -> pd.DataFrame:
    """The original with a1 shuffled within class and every other column still aligned:
    coarser than the artefact's grouping (rows of the other groups stay linked)."""
    t = _t(work)
    rng = np.random.default_rng(0)
    for label in t[TARGET].unique():
        rows = np.flatnonzero(t[TARGET].to_numpy() == label)
        t.loc[t.index[rows], "a1"] = t["a1"].to_numpy()[rng.permutation(rows)]
    return t


def _terminated_learn(work) -> list[str]:
    """A table large enough for memory-mapped worker arrays (training split > 1 MB)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40_000, 8))
    table = pd.DataFrame(X, columns=[f"x{i}" for i in range(8)])
    table[TARGET] = ((X[:, 0] * X[:, 1] > 0) ^ (X[:, 2] > 0.5)).astype(int)
    if not (work["root"] / "big.parquet").exists():
        _pq(work, "big.parquet", table)
    # every row, exact mode: the large-table defaults (40,000 rows > 20,000) would sample
    return ["learn", "big.parquet", "--target", TARGET, "--classifier", "nb", "--jobs", "2",
            "--seed", "0", "--r-search", "20", "--r-test", "50", "--sample", "none",
            "--exact", "--quiet", "--store", "store", "--name", "big"]


def _legacy(work, name) -> str:
    """``store/<name>``: the work artefact saved without a suite (as before the gate)."""
    from astrid_airflow.release._store import ArtefactStore

    store = ArtefactStore(work["root"] / "store")
    if name not in store.names():
        store.save(name, work["artefact"])
    return f"store/{name}"


def _rest_cases() -> list[Case]:
    """The rest of issue 18: a terminated learn, validation that refuses before writing,
    bounded sizes, the store's immutability on object stores, a coarser release."""
    c: list[Case] = []
    add = c.append
    add(Case("cli-learn-sigterm", "cli",
             "`astrid learn --jobs 2` sent SIGTERM while its joblib workers fit (a "
             "scheduler's task timeout)", _terminated_learn, "exit 143",
             r"^astrid learn: terminated \(SIGTERM\): workers stopped, temporary files "
             r"removed, nothing saved$"))
    # validation refuses bad input before writing anything, even the default suite.json
    # of a version saved without one (store/legacy)
    add(Case("cli-validate-legacy-bad-original", "cli",
             "`validate` of a version saved without suite.json, original without a4",
             lambda w: _validate_files(_pq(w, "noa4.parquet", _t(w).drop(columns="a4")),
                                       "surr.parquet", _legacy(w, "legacy1")), "exit 2",
             r"missing column\(s\) \['a4'\]"))
    add(Case("lib-validate-legacy-bad-seed", "library",
             "`validate_surrogate(..., random_state=-1)`, a version without suite.json",
             lambda w: (lambda ref: lambda: __import__("astrid_airflow").validate_surrogate(
                 "ref.parquet", "surr.parquet", ref, random_state=-1))(_legacy(w, "legacy2")),
             ParameterError, r"Invalid random_state: -1"))
    add(Case("lib-validate-legacy-bad-metrics", "library",
             "`validate_surrogate(..., metrics={'accuracy': 1})`, a version without suite.json",
             lambda w: (lambda ref: lambda: __import__("astrid_airflow").validate_surrogate(
                 "ref.parquet", "surr.parquet", ref, random_state=0,
                 metrics={"accuracy": 1}))(_legacy(w, "legacy3")), ParameterError,
             r"Invalid metrics"))
    # sizes: bounded like fuse --rows and shuffle --n-copies
    # (just above the bound: should the bound go, the case fails without filling memory)
    add(Case("cli-synth-n-per-class-huge", "cli", "`astrid synth --n-per-class 2000000`",
             lambda w: ["synth", "--out", "huge.parquet", "--n-per-class", "2000000"],
             "exit 2", r"Invalid n_per_class: 2000000\. At most 1,000,000 rows per class"))
    add(Case("lib-synth-n-per-class-huge", "library", "`make_synthetic(1_000_001)`",
             lambda w: (lambda: __import__("astrid_airflow").make_synthetic(1_000_001)),
             ParameterError, r"Invalid n_per_class: 1000001"))
    # nothing is written into a store except through it: object stores too
    add(Case("cli-shuffle-out-into-remote-version", "cli",
             "`shuffle --out memory://badinput-store/m/v0001/s.parquet` (a store on an "
             "object store)", lambda w: _shuffle("ref.parquet", _remote_store(w) +
                                                 "/m/v0001/s.parquet"), "exit 2",
             r"inside the artefact store version directory 'memory://.*/m/v0001'"))
    add(Case("cli-synth-out-into-remote-name-dir", "cli",
             "`synth --out memory://badinput-store/m/x.csv`",
             lambda w: ["synth", "--out", _remote_store(w) + "/m/x.csv"], "exit 2",
             r"inside the artefact store name directory 'memory://.*/m'"))
    add(Case("lib-store-inside-remote-version", "library",
             "`ArtefactStore('memory://badinput-store/m/v0001').save('n', ...)`",
             lambda w: (lambda url: lambda: __import__("astrid_airflow").ArtefactStore(
                 url + "/m/v0001").save("n", w["artefact"]))(_remote_store(w)), StoreError,
             r"inside the artefact store version directory"))
    # a planted non-ASCII version directory is not a version: the next learn saves v0002
    add(Case("cli-learn-beside-planted-version", "cli",
             "`learn --store nastore --name m` beside a planted `v٠٠٠٩` (saves v0002, "
             "not v0010)", lambda w: _learn("ref.csv", "--store", _planted(
                 w, "nastore", "v٠٠٠٩", b"{corrupt"), "--name", "m"), "note",
             r"saved artefact m@v0002 in nastore"))
    # a release coarser than the artefact's grouping fails the gate
    add(Case("lib-validate-coarser-release", "library",
             "release coarser than the grouping: only a1 shuffled within class, the other "
             "columns still aligned (DataFrames)",
             lambda w: (lambda: __import__("astrid_airflow").validate_surrogate(
                 _t(w), _coarser_release(w), w["artefact"], random_state=0,
                 metrics={"accuracy_original": 0.9, "accuracy_surrogate": 0.9})),
             "gate FAILED", r"gate FAILED: .*expect_surrogate_cross_group_linkage"))
    return c


def _recipe_artefact(work) -> str:
    """``recipe.json``: the work artefact with a recipe suppressing a6 (for generalise)."""
    import dataclasses

    if not (work["root"] / "recipe.json").exists():
        recipe = {"version": 1, "k": 5, "target": TARGET, "notes": [], "steps": [
            {"method": "suppress", "column": "a6", "keep": [], "published_type": "category"}]}
        art = dataclasses.replace(work["artefact"],
                                  release={"status": "given", "recipe": recipe})
        (work["root"] / "recipe.json").write_text(art.to_json())
    return "recipe.json"


def _risk(control, *extra):
    return ["risk", "--original", "ref.csv", "--surrogate", "surr.parquet", "--artefact",
            "store/m", "--control", control, "--seed", "0", "--n-attacks", "20", *extra]


def _hardening_cases() -> list[Case]:
    """Issue 29: bounded inputs, weakened policies, outputs over inputs, --control."""
    c: list[Case] = []
    add = c.append
    weak = json.dumps({"max_share_below_k": 1.0, "max_class_disclosure_share": 1.0})
    # bounded inputs: regular files only, small files small, attack counts capped
    add(Case("cli-policy-fifo", "cli", "`learn --policy fifo.json` (a named pipe)",
             lambda w: _learn("ref.csv", "--store", "store", "--name", "p", "--policy",
                              _fifo(w, "fifo.json")), "exit 2",
             r"Invalid --policy 'fifo\.json': not a regular file"))
    add(Case("cli-policy-dev-zero", "cli", "`learn --policy /dev/zero` (read for ever)",
             lambda w: _learn("ref.csv", "--store", "store", "--name", "p", "--policy",
                              "/dev/zero"), "exit 2",
             r"Invalid --policy '/dev/zero': not a regular file"))
    add(Case("cli-policy-oversized", "cli", "`learn --policy big.json` (100 KB of JSON)",
             lambda w: _learn("ref.csv", "--store", "store", "--name", "p", "--policy",
                              _write(w, "big.json", "[" + "0," * 50_000 + "0]")), "exit 2",
             r"Invalid --policy 'big\.json': larger than 64 KiB"))
    add(Case("cli-policy-deep", "cli", "`learn --policy` nested 20 levels deep",
             lambda w: _learn("ref.csv", "--store", "store", "--name", "p", "--policy",
                              _write(w, "deep.json", _deep(20))), "exit 2",
             r"nested deeper than 8 levels"))
    add(Case("cli-policy-not-object", "cli", "`learn --policy` holding a JSON list",
             lambda w: _learn("ref.csv", "--store", "store", "--name", "p", "--policy",
                              _write(w, "list.json", "[1, 2]")), "exit 2",
             r"expected a JSON object of GatePolicy fields"))
    add(Case("cli-report-metrics-fifo", "cli", "`report --surrogate-metrics fifo.json`",
             lambda w: ["report", "store/m", "--surrogate-metrics", _fifo(w, "fifo.json"),
                        "--out", "rep"], "exit 2",
             r"Invalid surrogate metrics 'fifo\.json': not a regular file"))
    add(Case("cli-validate-metrics-dev-zero", "cli", "`validate --metrics /dev/zero`",
             lambda w: [*_validate_files("ref.parquet", "surr.parquet"), "--metrics",
                        "/dev/zero"], "exit 2", r"Invalid --metrics '/dev/zero': not a regular"))
    add(Case("cli-risk-n-attacks-huge", "cli", "`risk --n-attacks 100000000`",
             lambda w: ["risk", "--original", "ref.csv", "--surrogate", "surr.parquet",
                        "--artefact", "store/m", "--n-attacks", "100000000"], "exit 2",
             r"Invalid --n-attacks: 100000000\. At most 100,000"))
    add(Case("lib-policy-attack-n-huge", "library", "`GatePolicy(attack_n=100_000_000)`",
             lambda w: (lambda: __import__("astrid_airflow").GatePolicy(attack_n=10**8)),
             ParameterError, r"Invalid attack_n: 100000000\. At most 100,000"))
    # weakened policies need the explicit flag; k = 1 is no k-anonymity check
    add(Case("cli-policy-weaker-no-flag", "cli",
             "`learn --policy` weaker than the default, without --allow-weaker-policy",
             lambda w: _learn("ref.csv", "--store", "store", "--name", "p", "--policy",
                              _write(w, "weak.json", weak)), "exit 2",
             r"weaker than the default policy: max_share_below_k 1 \(default 0\), "
             r"max_class_disclosure_share 1 \(default 0\); pass --allow-weaker-policy"))
    add(Case("cli-validate-weaker-no-flag", "cli",
             "`validate --max-intact 1` without --allow-weaker-policy",
             lambda w: [*_validate_files("ref.parquet", "surr.parquet"), "--max-intact", "1"],
             "exit 2", r"weaker than the default policy: max_intact 1 \(default 0\.01\)"))
    add(Case("cli-validate-disclosure-k-1", "cli", "`validate --disclosure-k 1`",
             lambda w: [*_validate_files("ref.parquet", "surr.parquet"), "--disclosure-k",
                        "1", "--allow-weaker-policy"], "exit 2",
             r"Invalid disclosure_k: 1\. Must be an integer >= 2"))
    add(Case("lib-policy-disclosure-k-1", "library", "`GatePolicy(disclosure_k=1)`",
             lambda w: (lambda: __import__("astrid_airflow").GatePolicy(disclosure_k=1)),
             ParameterError, r"Invalid disclosure_k: 1\. Must be an integer >= 2"))
    add(Case("lib-validate-weaker-no-flag", "library",
             "`validate_surrogate(..., policy={'max_inference_risk': 0.9}, "
             "allow_weaker_policy=False)`",
             lambda w: (lambda: __import__("astrid_airflow").validate_surrogate(
                 "ref.parquet", "surr.parquet", "store/m", random_state=0,
                 policy={"max_inference_risk": 0.9}, allow_weaker_policy=False)),
             ParameterError, r"max_inference_risk 0\.9 \(default 0\.5\)"))
    add(Case("op-gate-weaker-no-flag", "operator",
             "Gate: `policy={'max_intact': '1'}` without allow_weaker_policy",
             lambda w: _op("gate", surrogate="surr.parquet", policy={"max_intact": "1"}),
             "fail", r"weaker than the default policy: max_intact 1 .*"
             r"allow_weaker_policy=True"))
    add(Case("op-learn-weaker-no-flag", "operator",
             "Learn: `gate_policy={'max_linkability_risk': 0.5}` without allow_weaker_policy",
             lambda w: _op("learn", reference="ref.csv", name="opw",
                           gate_policy={"max_linkability_risk": 0.5}), "fail",
             r"max_linkability_risk 0\.5 \(default 0\.1\)"))
    # an output never replaces an input; control rows are not original rows
    add(Case("cli-generalise-out-is-input", "cli", "`generalise ref.csv --out ref.csv "
             "--overwrite`", lambda w: ["generalise", "ref.csv", "--artefact",
                                        _recipe_artefact(w), "--out", "ref.csv",
                                        "--overwrite"], "exit 2",
             r"Refusing to write 'ref\.csv': it is the input 'ref\.csv'"))
    add(Case("cli-generalise-out-hardlink-input", "cli",
             "`generalise ref.csv --out hard.csv --overwrite`, hard.csv a hard link to it",
             lambda w: ["generalise", "ref.csv", "--artefact", _recipe_artefact(w), "--out",
                        _link(w, "hard.csv", hard=True), "--overwrite"], "exit 2",
             r"it is the input 'ref\.csv'"))
    add(Case("cli-risk-control-is-original", "cli", "`risk --control ref.csv` (the original "
             "itself: every risk understated)", lambda w: _risk("ref.csv"), "exit 2",
             r"--control shares 60 of its 60 rows with the original"))
    add(Case("cli-risk-control-half-original", "cli", "`risk --control` holding 20 original "
             "rows among 40", lambda w: _risk(_csv(w, "half.csv", pd.concat(
                 [_t(w).iloc[:20], _t(w).iloc[30:50].assign(a1=lambda d: d["a1"] + 1000)]))),
             "exit 2", r"--control shares 20 of its 40 rows with the original"))
    return c


CASES = _cases() + _gate_integrity_cases() + _rest_cases() + _hardening_cases()


# ------------------------------------------------------------------------- running

@dataclass
class Outcome:
    kind: str  # "exit", "raise", "ok"
    type: str = ""
    message: str = ""
    lines: int = 0
    rc: Any = None
    stdout: str = ""
    warnings: tuple = ()
    new_files: tuple = ()
    changed_files: tuple = ()
    accepted_outputs: tuple = ()
    exc: Any = None
    verify_error: str = ""


def run_case(case: Case, work: dict) -> Outcome:
    """Run one case in the working dir and describe what happened."""
    root = work["root"]
    with contextlib.chdir(root):
        action = case.prepare(work)
        before = snapshot(root)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if case.layer == "cli" and case.expect == "exit 143":
                out = _run_cli_terminated(action, root)
            elif case.layer == "cli":
                out = _run_cli(action)
            else:
                try:
                    value = action()
                except Exception as exc:  # the point: what comes out
                    out = Outcome("raise", type=type(exc).__name__, message=str(exc),
                                  lines=len(str(exc).splitlines()))
                    out.exc = exc
                else:
                    notes = getattr(value, "notes", None)
                    out = Outcome("ok", message="; ".join(notes) if notes else "")
                    if hasattr(value, "success") and hasattr(value, "failed"):  # GateResult
                        out.message = ("gate PASSED" if value.success else
                                       f"gate FAILED: {', '.join(value.failed)}")
        after = snapshot(root)
    out.warnings = tuple(str(w.message) for w in caught
                         if not _ignorable_warning(str(w.message)))
    out.new_files = tuple(sorted(set(after) - set(before)))
    expect = case.expect if isinstance(case.expect, tuple) else (case.expect,)
    if out.kind in ("ok", "exit") and out.rc in (None, 0) and \
            ({"note", "warning"} & set(expect)):
        # accepted on purpose: its outputs are fine, but must not leak into other cases
        if case.verify is not None:
            out.verify_error = case.verify(root, out.new_files)
        for rel in sorted(out.new_files, reverse=True):
            (root / rel).unlink()
        out.accepted_outputs, out.new_files = out.new_files, ()
    out.changed_files = tuple(sorted(k for k in before if k in after and before[k] != after[k]))
    return out


def _ignorable_warning(text: str) -> bool:
    # Airflow's own notices when operators run outside a task runner.
    return "outside of the Task Runner" in text or "Task Runner" in text


def _run_cli(argv: list[str]) -> Outcome:
    from astrid_airflow.cli import main

    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code
    text = err.getvalue()
    return Outcome("exit", rc=rc, message=text.strip(), lines=len(text.splitlines()),
                   stdout=out.getvalue())


def _run_cli_terminated(argv: list[str], root: Path) -> Outcome:
    """Run ``astrid ARGV`` in a subprocess and send SIGTERM once its joblib workers run.

    The child's temporary directory (``TMPDIR``, ``JOBLIB_TEMP_FOLDER``) is under
    ``root``, so a memory-mapped folder or file left behind shows as an output.
    """
    import signal

    temp = root / ".sigterm-tmp"
    temp.mkdir(exist_ok=True)
    env = dict(os.environ, TMPDIR=str(temp), JOBLIB_TEMP_FOLDER=str(temp))
    proc = subprocess.Popen([sys.executable, "-m", "astrid_airflow.cli", *argv], cwd=root,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 120
        while not any(p.name.startswith("astrid-fits-") for p in temp.iterdir()):
            if proc.poll() is not None or time.monotonic() > deadline:
                break  # finished (or never started) before its workers: check() says so
            time.sleep(0.05)
        else:
            time.sleep(1.5)  # the workers are fitting, their arrays memory-mapped
            proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return Outcome("exit", rc=proc.returncode, message=err.strip(),
                   lines=len(err.splitlines()), stdout=out)


def check(case: Case, out: Outcome) -> None:
    """Assert ``out`` is the behaviour ``case`` requires."""
    assert not out.new_files, f"output written: {out.new_files}"
    assert not out.changed_files, f"files changed: {out.changed_files}"
    assert not out.verify_error, out.verify_error
    expect = case.expect if isinstance(case.expect, tuple) else (case.expect,)
    if expect == ("exit 143",):  # terminated, not bad input: 128 + SIGTERM
        assert out.rc == 143, (out.rc, out.message)
        assert out.lines == 1, f"expected one line on stderr, got {out.lines}: {out.message}"
        assert "leaked" not in out.message and "Traceback" not in out.message, out.message
        assert out.stdout == "", out.stdout
        assert re.search(case.match, out.message), out.message
        return
    if expect == ("gate FAILED",):
        assert out.kind == "ok", (out.type, out.message)
        assert re.search(case.match, out.message), out.message
        return
    if case.layer == "cli" and "note" in expect:
        assert out.rc == 0, (out.rc, out.message)
        assert re.search(case.match, out.message + "\n" + out.stdout), (out.message,
                                                                        out.stdout)
        return
    if case.layer == "cli":
        assert out.rc == 2, (out.rc, out.message)
        assert out.lines == 1, f"expected one line on stderr, got {out.lines}: {out.message}"
        assert "Traceback" not in out.message and out.stdout == "", out.stdout
        assert re.match(r"astrid [a-z]+: error: ", out.message), out.message
        assert re.search(case.match, out.message), out.message
        return
    if "warning" in expect or "note" in expect:
        texts = list(out.warnings) + ([out.message] if out.kind == "ok" else [])
        hit = any(re.search(case.match, t) for t in texts)
        errors = [e for e in expect if isinstance(e, type)]
        if out.kind == "raise" and errors:
            assert any(out.type == e.__name__ for e in errors), (out.type, out.message)
            assert re.search(case.match, out.message), out.message
            return
        assert out.kind == "ok", (out.type, out.message)
        assert hit, texts
        return
    assert out.kind == "raise", f"accepted silently: {out}"
    assert out.lines == 1, f"message is not one line: {out.message!r}"
    assert re.search(case.match, out.message), out.message
    if expect == ("fail",):
        assert out.type == "AirflowFailException", (out.type, out.message)
    else:
        (cls,) = expect
        assert isinstance(out.exc, cls) and isinstance(out.exc, AstridError), out.type


# ---------------------------------------------------------------------------- tests

@pytest.fixture(scope="module")
def work(tmp_path_factory):
    w = make_workdir(tmp_path_factory.mktemp("bad_input"))
    w["outcomes"] = {}
    yield w
    release_readonly(w["root"] / "ro", w["readonly"])


def _param(case: Case):
    marks = [pytest.mark.xfail(strict=True, reason=f"BUG: {case.bug}")] if case.bug else []
    return pytest.param(case, id=case.id, marks=marks)


def test_matrix_is_large_and_covers_every_layer():
    layers = {c.layer for c in CASES}
    assert layers == {"cli", "library", "operator"}
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_bad_input(case, work):
    if case.needs_readonly and not work["readonly"]:
        pytest.skip("cannot make a read-only directory here (root without mount)")
    out = run_case(case, work)
    work["outcomes"][case.id] = out
    check(case, out)


def test_doc_is_in_sync(work):
    """``docs/bad-input-matrix.md`` lists every case with its current message."""
    if len(work["outcomes"]) < len([c for c in CASES if not c.needs_readonly
                                    or work["readonly"]]):
        pytest.skip("run the whole matrix to check the doc")
    expected = render_doc(CASES, work["outcomes"], work["root"])
    assert DOC.is_file(), "run scripts/gen_bad_input_matrix.py"
    assert _table_part(DOC.read_text()) == _table_part(expected), \
        "docs/bad-input-matrix.md is stale: run scripts/gen_bad_input_matrix.py"


# ------------------------------------------------------------------------------ doc

def _table_part(text: str) -> str:
    text = text[text.index("| # |"):] if "| # |" in text else text
    # The read-only store is a read-only mount as root and a 0555 directory otherwise.
    return re.sub(r"Read-only file system|permission denied", "<unwritable>", text)


def _expected_text(case: Case) -> str:
    expect = case.expect if isinstance(case.expect, tuple) else (case.expect,)
    parts = []
    for e in expect:
        if isinstance(e, type):
            parts.append(f"`{e.__name__}`")
        elif e == "fail":
            parts.append("`AirflowFailException`")
        elif e == "exit 2":
            parts.append("exit 2, one line")
        elif e == "note":
            parts.append("accepted, with a note")
        elif e == "gate FAILED":
            parts.append("the gate FAILS (nothing written)")
        elif e == "exit 143":
            parts.append("exit 143, one line (terminated, not bad input)")
        else:
            parts.append("a warning")
    return " or ".join(parts)


def _cell(text: str, root: Path) -> str:
    text = text.replace(str(root), "<tmp>").replace("|", "\\|").replace("\n", " ⏎ ")
    # digest prefixes of suites change with any policy field: the doc names them
    text = re.sub(r"\b[0-9a-f]{12}…", "<digest>…", text)
    return text if len(text) <= 300 else text[:297] + "..."


def _actual_text(out: Outcome | None, root: Path) -> str:
    if out is None:
        return "(not run here)"
    if out.kind == "exit":
        if out.rc == 0:
            said = out.message or "nothing on stderr"
            return f"exit 0 (accepted); stderr: {_cell(said, root)}"
        return f"exit {out.rc}: {_cell(out.message, root)}"
    if out.kind == "raise":
        return f"`{out.type}`: {_cell(out.message, root)}"
    if out.message.startswith("gate FAILED"):
        return f"{_cell(out.message, root)} (nothing written)"
    said = "; ".join(out.warnings) or out.message
    return "accepted" + (f"; says: {_cell(said, root)}" if said else " silently")


def render_doc(cases: list[Case], outcomes: dict[str, Outcome], root: Path) -> str:
    n_bugs = sum(1 for c in cases if c.bug)
    head = [
        "# Bad-input matrix",
        "",
        "Generated by `scripts/gen_bad_input_matrix.py` from the cases in",
        "`tests/test_bad_input_matrix.py` (which also checks that this file is in sync).",
        "Every case also checks that **no output is written** (every file under the",
        "working directory, hidden temporary files included, is identical before and",
        "after). The CLI must exit 2 with one line on stderr; the library must raise a",
        "typed `AstridError` subclass",
        "with a one-line message; the operators must raise `AirflowFailException` (no",
        "retries). The in-memory object store (`memory://`) is checked the same way.",
        "A gate that must fail is judged on DataFrames, so it writes no result files.",
        "`astrid learn` killed with SIGTERM while its workers run is a terminated task,",
        "not bad input: exit 143 (128 + SIGTERM, what a scheduler reports as",
        "\"terminated\"), one line, no leaked-resource warning, nothing saved and no",
        "temporary file left. Rows marked **BUG** are `xfail(strict=True)` tests for",
        f"defects found here and reported to the lead ({n_bugs} rows); their *message*",
        "column shows today's behaviour. `<tmp>` stands for the test's working directory.",
        "",
        f"{len(cases)} cases: {sum(c.layer == 'cli' for c in cases)} CLI, "
        f"{sum(c.layer == 'library' for c in cases)} library, "
        f"{sum(c.layer == 'operator' for c in cases)} operator.",
        "",
        "| # | layer | input | expected | message (actual) |",
        "|---|---|---|---|---|",
    ]
    rows = []
    for i, c in enumerate(cases, 1):
        expected = _expected_text(c)
        if c.bug:
            expected = f"**BUG** — {expected}: {c.bug}"
        rows.append(f"| {i} | {c.layer} | {c.input.replace('|', '/')} | {expected} | "
                    f"{_actual_text(outcomes.get(c.id), root)} |")
    return "\n".join(head + rows) + "\n"


# ----------------------------------------- helpers of the store and input cases (b-inputs)

def _validate_files(original, surrogate, ref="store/m"):
    return ["validate", "--original", original, "--surrogate", surrogate, "--artefact", ref]


def _deep(levels: int = 100_000) -> str:
    return "[" * levels + "]" * levels


def _copy_store(work, root_name):
    """A private copy of ``store/m`` (v0001), so planted entries touch no other case."""
    dest = work["root"] / root_name
    if not dest.exists():
        shutil.copytree(work["root"] / "store" / "m" / "v0001", dest / "m" / "v0001")
    return dest


def _planted(work, root_name, version, artefact_bytes):
    """A store whose ``m`` has v0001 and a planted ``version`` holding ``artefact_bytes``."""
    dest = _copy_store(work, root_name)
    vdir = dest / "m" / version
    if not vdir.exists():
        vdir.mkdir()
        (vdir / "artefact.json").write_bytes(artefact_bytes)
    return root_name


def _linked_version(work, root_name):
    """``root_name/m/v0009`` is a symlink to ``outside_<root_name>`` (an artefact copy
    without a suite: following the link, validate would write suite.json there)."""
    dest = _copy_store(work, root_name)
    outside = work["root"] / f"outside_{root_name}"
    if not outside.exists():
        outside.mkdir()
        shutil.copy(dest / "m" / "v0001" / "artefact.json", outside / "artefact.json")
        (dest / "m" / "v0009").symlink_to(outside, target_is_directory=True)
    return root_name


def _linked_name(work):
    dest = _copy_store(work, "alstore")
    if not (dest / "alias").is_symlink():
        (dest / "alias").symlink_to(dest / "m", target_is_directory=True)
    return "alstore"


def _loop(work, name):
    p = work["root"] / name
    if not p.is_symlink():
        p.symlink_to(name)
    return name


def _loop_inside(work):
    dest = _copy_store(work, "lpstore")
    if not (dest / "loop").is_symlink():
        (dest / "loop").symlink_to("loop")
    return "lpstore"


def _mkdir(work, name):
    (work["root"] / name).mkdir(exist_ok=True)
    return name


def _link(work, name, *, hard):
    p = work["root"] / name
    if not os.path.lexists(p):
        if hard:
            os.link(work["root"] / "ref.csv", p)
        else:
            p.symlink_to("ref.csv")
    return name


def _deep_suite(work):
    dest = _copy_store(work, "dsstore")
    suite = dest / "m" / "v0001" / "suite.json"
    suite.chmod(0o644)
    suite.write_text(_deep())
    return "dsstore"


def _disk_full(thunk):
    """Run ``thunk`` with the surrogate writer failing with ENOSPC after a first chunk,
    as a full disk does (the patch is undone when the call returns)."""
    import errno

    from astrid_airflow.release import _surrogate

    real = _surrogate.arrow_writer

    class Full:
        def __init__(self, kind, path, schema):
            self.inner = real(kind, path, schema)

        def write_table(self, table):
            self.inner.write_table(table)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def close(self):
            self.inner.close()

    def run():
        _surrogate.arrow_writer = Full
        try:
            return thunk()
        finally:
            _surrogate.arrow_writer = real
    return run


def _arff(work):
    t = _t(work)
    lines = ["@relation ref"]
    for c in t.columns:
        if c in ("a6", TARGET):
            levels = ",".join(str(v) for v in sorted(t[c].astype(str).unique()))
            lines.append(f"@attribute {c} {{{levels}}}")
        else:
            lines.append(f"@attribute {c} {'INTEGER' if c == 'a5' else 'REAL'}")
    lines.append("@data")
    lines += [",".join(str(v) for v in row) for row in t.astype(str).itertuples(index=False)]
    return _write(work, "ref.arff", "\n".join(lines) + "\n")


def _fuse(work, out, *extra):
    """``astrid fuse`` with one CSV part per group of the work artefact."""
    t = _t(work)
    parts = []
    for g, cols in enumerate(work["artefact"].grouping.groups, 1):
        parts.append(f"{g}={_csv(work, f'part{g}.csv', t[[*cols, TARGET]])}")
    return ["fuse", "--artefact", "store/m", "--part", *parts, "--out", out, "--seed", "0",
            *extra]


def _tz_roundtrip(work):
    """A store learned on a CSV with ``+02:00`` timestamps and its shuffled CSV."""
    from astrid_airflow import GroupingArtefact, astrid, read_table
    from astrid_airflow.gate._policy import GatePolicy
    from astrid_airflow.gate._suite import gate_extra_files
    from astrid_airflow.release._store import ArtefactStore
    from astrid_airflow.release._surrogate import shuffle_file

    root = work["root"]
    if not (root / "tzs.csv").exists():
        t = _t(work)
        t["ts"] = pd.date_range("2024-03-01", periods=len(t), freq="h",
                                tz="Europe/Berlin").astype(str)
        t.to_csv(root / "tz.csv", index=False)
        table = read_table(str(root / "tz.csv"))
        with warnings.catch_warnings():  # 'ts' is ID-like on purpose (all unique)
            warnings.simplefilter("ignore")
            result = astrid(table, target=TARGET, classifier="nb", n_search=2, n_test=3,
                            random_state=0, progress=False)
        artefact = GroupingArtefact.from_result(result, table,
                                                created_at="2026-01-01T00:00:00Z")
        # a raw surrogate: stored with the explicit raw-release policy (docs/privacy.md)
        ArtefactStore(root / "tzstore").save(
            "t", artefact,
            extra_files=gate_extra_files(artefact, GatePolicy.raw_release_demo()))
        shuffle_file(root / "tz.csv", artefact, root / "tzs.csv", random_state=0)
    return _validate_files("tz.csv", "tzs.csv", "tzstore/t")


def _linked_suite(work):
    dest = _copy_store(work, "lsstore")
    suite = dest / "m" / "v0001" / "suite.json"
    if not suite.is_symlink():
        outside = work["root"] / "outside_suite.json"
        shutil.copy(suite, outside)
        suite.unlink()
        suite.symlink_to(outside)
    return "lsstore"


def _fifo(work, name):
    p = work["root"] / name
    if not p.exists():
        os.mkfifo(p)
    return name


def _in_dir(work, directory, name):
    d = work["root"] / directory
    d.mkdir(exist_ok=True)
    shutil.copy(work["root"] / name, d / name)
    return f"{directory}/{name}"

"""The inputs and calls the bad-input matrix's cases build: odd tables and files, linked,
looping and planted stores, a full disk, a deep suite."""

from __future__ import annotations

import json
import os
import shutil
import warnings

import pandas as pd
import pyarrow as pa

from tests.project.bad_input_support import (
    TARGET,
    _csv,
    _pq,
    _t,
    _write,
)


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
    # the stored raw-release policy is weaker than the default: the CLI needs the flag
    return [*_validate_files("tz.csv", "tzs.csv", "tzstore/t"), "--allow-weaker-policy"]


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

"""The bad-input matrix's cases for the gate's integrity, the store, publishing and
the hardening of issue 29."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from astrid_airflow._errors import (
    DataError,
    ParameterError,
    StoreError,
)
from tests.project.bad_input_inputs import (
    _deep,
    _fifo,
    _link,
    _planted,
    _validate_files,
)
from tests.project.bad_input_support import (
    _INTACT,
    TARGET,
    Case,
    _csv,
    _learn,
    _op,
    _pq,
    _shuffle,
    _t,
    _write,
)


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
    add(Case("cli-validate-stored-weaker-no-flag", "cli",
             "a version saved with a policy weaker than the default (`max_intact` 1.0), "
             "validated without --allow-weaker-policy (issue 53)",
             lambda w: (_write(w, "metrics.json", '{"accuracy_original": 0.9, '
                               '"accuracy_surrogate": 0.9}'),
                        _validate(_weak_store(w), "surr.parquet"))[1],
             "exit 2", r"stored gate policy is weaker than the default policy: max_intact 1 "
             r"\(default 0\.01\); pass --allow-weaker-policy"))
    # stores are signed by default: one no key in force signed is refused (issue 53)
    add(Case("cli-shuffle-unsigned-store", "cli",
             "`shuffle` from a version whose manifest carries no signature (saved before "
             "signing was the default, or rewritten without the key; issue 53)",
             lambda w: ["shuffle", "ref.parquet", "--artefact", _unsigned_store(w),
                        "--out", "u.parquet", "--seed", "0", "--no-utility"], "exit 2",
             r"the manifest's signature does not hold: it is not signed\..*Pass "
             r"--allow-unsigned"))
    add(Case("lib-load-rewritten-store", "library",
             "`ArtefactStore.load` of a version whose artefact.json was edited and every "
             "digest of its manifest rewritten, the signature kept (issue 53)",
             lambda w: (lambda name: lambda: _store_of(w).load(name))(_rewritten_store(w)),
             StoreError, r"its signature does not match its content"))
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


def _weak_store(w) -> str:
    """``store/weakstored``: the artefact saved with a weaker policy in its suite."""
    from astrid_airflow.gate._policy import GatePolicy
    from astrid_airflow.gate._suite import gate_extra_files
    from astrid_airflow.release._store import ArtefactStore

    store = ArtefactStore(w["root"] / "store")
    if "weakstored" not in store.names():
        store.save("weakstored", w["artefact"], extra_files=gate_extra_files(
            w["artefact"], GatePolicy(max_intact=1.0)))
    return "store/weakstored"


def _validate(ref, surrogate="surr.parquet", *extra):
    return ["validate", "--original", "ref.parquet", "--surrogate", surrogate,
            "--artefact", ref, "--metrics", "metrics.json", *extra]


def _store_of(w):
    from astrid_airflow.release._store import ArtefactStore

    return ArtefactStore(w["root"] / "store")


def _version_copy(w, name: str) -> Path:
    """A writable copy of ``store/m/v0001`` as ``store/<name>/v0001`` (its manifest
    still names ``m``: :func:`rewrite_manifest` renames it, as a writer without the key
    would)."""
    import shutil

    src, dst = w["root"] / "store" / "m", w["root"] / "store" / name
    if not dst.exists():
        shutil.copytree(src, dst)
        for f in (dst / "v0001").iterdir():
            f.chmod(0o644)
    return dst / "v0001"


def _unsigned_store(w) -> str:
    """``store/unsigned``: the artefact of ``store/m``, its manifest without signature."""
    from tests.release.test_store_integrity import rewrite_manifest

    rewrite_manifest(_version_copy(w, "unsigned"), name="unsigned")
    return "store/unsigned"


def _rewritten_store(w) -> str:
    """``rewritten``: ``store/m``'s artefact with its ``artefact.json`` edited and every
    digest rewritten, the old signature kept."""
    from tests.release.test_store_integrity import rewrite_manifest

    vdir = _version_copy(w, "rewritten")
    art = json.loads((vdir / "artefact.json").read_text())
    art["created_at"] = "2026-01-02T00:00:00Z"
    (vdir / "artefact.json").write_text(json.dumps(art))
    rewrite_manifest(vdir, name="rewritten", keep_signature=True)
    return "rewritten"

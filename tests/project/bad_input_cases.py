"""The bad-input matrix's cases for reading, learning, shuffling and the operators."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa

from astrid_airflow._errors import (
    ArtefactError,
    DataError,
    GroupingError,
    ParameterError,
    SchemaMismatchError,
    StoreError,
)
from tests.project.bad_input_inputs import (
    _arff,
    _art_text,
    _astrid,
    _deep,
    _deep_suite,
    _disk_full,
    _dup_parquet,
    _fifo,
    _fuse,
    _in_dir,
    _link,
    _linked_name,
    _linked_suite,
    _linked_version,
    _loop,
    _loop_inside,
    _mkdir,
    _nested,
    _planted,
    _test_grouping,
    _tz_roundtrip,
    _validate_files,
    _with_small_class,
)
from tests.project.bad_input_support import (
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
    # the synthesis budget (issue 51): epsilon and delta refused before any fit
    add(Case("cli-learn-synthesis-epsilon-zero", "cli",
             "`astrid learn --synthesis-epsilon 0`",
             lambda w: _learn("ref.csv", "--store", "store", "--name", "m",
                              "--synthesis-epsilon", "0"), "exit 2",
             r"Invalid --synthesis-epsilon: 0\.0\. The privacy budget must be > 0"))
    add(Case("cli-learn-synthesis-delta-large", "cli",
             "`astrid learn --synthesis-epsilon 1 --synthesis-delta 0.5` (delta >= 1/n)",
             lambda w: _learn("ref.csv", "--store", "store", "--name", "m",
                              "--synthesis-epsilon", "1", "--synthesis-delta", "0.5"),
             "exit 2", r"Invalid delta: 0\.5\. Must be below 1/n"))
    add(Case("cli-learn-synthesis-budget-without-synthesis", "cli",
             "`astrid learn --synthesis-epsilon 1 --no-synthesis`",
             lambda w: _learn("ref.csv", "--store", "store", "--name", "m",
                              "--synthesis-epsilon", "1", "--no-synthesis"), "exit 2",
             r"--synthesis-epsilon and --no-synthesis exclude each other"))
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

"""Every way a surrogate file can carry data besides its columns is refused (or fails).

The gate must judge exactly the bytes that are published (issue 18). Each carrier below
hides the *original* rows somewhere a table reader does not show them; each must be
refused by :func:`astrid_airflow.gate._file_shape.check_publishable` with a reason naming it,
while every file the project writes itself passes.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from astrid_airflow import GroupingArtefact, make_surrogate, make_synthetic, shuffle_file
from astrid_airflow._errors import DataError, GateError
from astrid_airflow.engine._grouping import Grouping
from astrid_airflow.gate._file_shape import check_publishable, publishability_problems
from astrid_airflow.gate._gate import validate_surrogate
from astrid_airflow.gate._policy import GatePolicy

TARGET = "class"


@pytest.fixture(scope="module")
def original() -> pd.DataFrame:
    t = make_synthetic(40, random_state=0)
    t["a5"] = pd.Categorical(np.where(np.arange(len(t)) % 3, "x", "y"), categories=["x", "y"])
    return t[["a1", "a2", "a3", "a4", "a5", TARGET]]


@pytest.fixture(scope="module")
def artefact(original) -> GroupingArtefact:
    g = Grouping.parse("a1,a2;a3;a4;a5")
    result = {"grouping": g.to_list(), "k": g.k, "table": [], "target": TARGET,
              "classifier": "nb", "scoring": "accuracy", "alpha": 0.05, "n_search": 2,
              "n_test": 3, "random_state": 0}
    return GroupingArtefact.from_result(result, original, created_at="2026-01-01T00:00:00Z")


@pytest.fixture(scope="module")
def surrogate(original, artefact) -> pd.DataFrame:
    return make_surrogate(original, artefact, random_state=1)


def _original_csv(original) -> str:
    return original.to_csv(index=False)


# ------------------------------------------------------------- the project's own files

def test_files_the_project_writes_are_publishable(tmp_path, original, artefact, surrogate):
    original.to_parquet(tmp_path / "ref.parquet", index=False)
    original.to_parquet(tmp_path / "ref_range.parquet")  # pandas default: a RangeIndex
    original.to_csv(tmp_path / "ref.csv", index=False)
    written = []
    for src in ("ref.parquet", "ref_range.parquet", "ref.csv"):
        for suffix in ("parquet", "csv"):
            out = tmp_path / f"s_{src.replace('.', '_')}.{suffix}"
            shuffle_file(tmp_path / src, artefact, out, random_state=0)
            written.append(out)
    written += [tmp_path / p for p in shuffle_file(
        tmp_path / "ref.parquet", artefact, tmp_path / "copies.parquet", random_state=0,
        n_copies=2)]
    surrogate.to_parquet(tmp_path / "pandas_default.parquet")
    surrogate.to_parquet(tmp_path / "pandas_noindex.parquet", index=False)
    surrogate.to_csv(tmp_path / "pandas.csv", index=False)
    surrogate.to_csv(tmp_path / "bom.csv", index=False, encoding="utf-8-sig")
    written += [tmp_path / n for n in ("pandas_default.parquet", "pandas_noindex.parquet",
                                       "pandas.csv", "bom.csv")]
    # other writer settings of the same columns: row groups, codecs, page versions
    table = pa.Table.from_pandas(surrogate, preserve_index=False)
    for i, settings in enumerate([
            {"row_group_size": 7}, {"compression": "none"}, {"compression": "zstd"},
            {"data_page_version": "2.0"}, {"use_dictionary": False},
            {"write_statistics": False}, {"data_page_size": 64}]):
        pq.write_table(table, tmp_path / f"w{i}.parquet", **settings)
        written.append(tmp_path / f"w{i}.parquet")
    for path in written:
        assert publishability_problems(path, artefact) == [], path
    # and the gate judges them (the copies differ only in their seed)
    # (raw surrogates of continuous data: the per-group disclosure checks are relaxed)
    r = validate_surrogate(original, written[0], artefact, random_state=0,
                           metrics={"accuracy_original": 1.0, "accuracy_surrogate": 1.0},
                           policy=GatePolicy.raw_release_demo())
    assert r.success and r.surrogate_sha256 is not None


def test_a_file_read_from_postgres_keeps_its_sql_types_and_is_publishable(tmp_path, original,
                                                                        artefact):
    from astrid_airflow.io._sql_types import SqlColumn
    from astrid_airflow.io._sql_types import arrow_schema as _arrow_schema

    kinds = {"a1": "float64", "a2": "float64", "a3": "float64", "a4": "float64",
             "a5": "enum", TARGET: "int64"}
    columns = [SqlColumn(c, "mood" if k == "enum" else k, k,
                         ("x", "y") if k == "enum" else ()) for c, k in kinds.items()]
    table = pa.Table.from_pandas(original, preserve_index=False)
    table = table.cast(_arrow_schema(columns).remove_metadata()).replace_schema_metadata(
        _arrow_schema(columns).metadata)
    pq.write_table(table, tmp_path / "from_sql.parquet")
    shuffle_file(tmp_path / "from_sql.parquet", artefact, tmp_path / "s.parquet",
                 random_state=0)
    assert publishability_problems(tmp_path / "s.parquet", artefact) == []


# ------------------------------------------------------------------------ the carriers

def _with_index(s, original, name=None):
    out = s.copy()
    out.index = pd.Index(original["a1"].to_numpy(), name=name)
    return out


def _kv(s, original):
    t = pa.Table.from_pandas(s, preserve_index=False)
    meta = {**(t.schema.metadata or {}), b"original": _original_csv(original).encode()}
    return t.replace_schema_metadata(meta)


def _field_meta(s, original):
    t = pa.Table.from_pandas(s, preserve_index=False)
    i = t.schema.get_field_index("a3")
    field = t.schema.field(i).with_metadata({"original": original["a3"].to_json()})
    return t.cast(t.schema.set(i, field))


def _pandas_meta(s, original, change):
    t = pa.Table.from_pandas(s, preserve_index=False)
    meta = json.loads(t.schema.metadata[b"pandas"])
    change(meta, original)
    return t.replace_schema_metadata({b"pandas": json.dumps(meta).encode()})


def _arrow_schema_only(path, s, original):
    """Metadata only in the serialized ARROW:schema, not in the file's key-value pairs."""
    import base64

    t = pa.Table.from_pandas(s, preserve_index=False).replace_schema_metadata(None)
    inner = t.schema.with_metadata({"original": _original_csv(original)})
    writer = pq.ParquetWriter(path, t.schema, store_schema=False)
    writer.write_table(t)
    writer.add_key_value_metadata(
        {"ARROW:schema": base64.b64encode(inner.serialize().to_pybytes())})
    writer.close()


def _nested(s, original):
    t = pa.Table.from_pandas(s, preserve_index=False)
    i = t.schema.get_field_index("a3")
    struct = pa.StructArray.from_arrays([t.column("a3").combine_chunks(),
                                         pa.array(original["a3"])], ["value", "original"])
    return t.set_column(i, "a3", struct)


def _unused_categories(s, original):
    out = s.copy()
    hidden = [f"{v:.6f}" for v in original["a1"]]
    out["a5"] = out["a5"].cat.add_categories(hidden)
    return out


def _extra_rows_before_footer(path, s, original):
    """A whole Parquet file of the original hidden between the row groups and footer."""
    s.to_parquet(path, index=False)
    hidden = path.with_suffix(".hidden")
    original.to_parquet(hidden, index=False)
    raw = path.read_bytes()
    footer = int.from_bytes(raw[-8:-4], "little") + 8
    path.write_bytes(raw[:-footer] + hidden.read_bytes() + raw[-footer:])
    hidden.unlink()


def _created_by(path, s, original):
    s.to_parquet(path, index=False)
    raw = path.read_bytes()
    mark = pq.ParquetFile(path).metadata.created_by.encode()
    smuggled = (",".join(f"{v:.3f}" for v in original["a1"]).encode() * 4)[:len(mark)]
    path.write_bytes(raw.replace(mark, smuggled))


def _footer_field(path, s, original):
    """An extra Thrift field (id 100, binary) in the footer: readers skip it."""
    s.to_parquet(path, index=False)
    raw = path.read_bytes()
    length = int.from_bytes(raw[-8:-4], "little")
    footer = raw[-8 - length:-8]
    hidden = _original_csv(original).encode()
    size = len(hidden)
    varint = bytearray()
    while True:
        byte, size = size & 0x7F, size >> 7
        varint.append(byte | (0x80 if size else 0))
        if not size:
            break
    field = bytes([0x08, 0xC8, 0x01]) + bytes(varint) + hidden  # id 100 (zigzag 200)
    assert footer[-1:] == b"\x00"  # the STOP of FileMetaData
    footer = footer[:-1] + field + b"\x00"
    path.write_bytes(raw[:-8 - length] + footer + len(footer).to_bytes(4, "little")
                     + b"PAR1")
    assert pq.read_table(path).num_rows == len(s)  # a reader does not notice


def _forged_statistics(path, s, original):
    """The footer's max of a string column replaced by another string of its length."""
    marked = s.assign(a5=s["a5"].cat.rename_categories({"y": "y" * 40}))
    marked.to_parquet(path, index=False)
    raw = path.read_bytes()
    length = int.from_bytes(raw[-8:-4], "little")
    footer = raw[-8 - length:-8]
    secret = (",".join(f"{v:.4f}" for v in original["a1"]).encode())[:40]
    assert footer.count(b"y" * 40) >= 1
    path.write_bytes(raw[:-8 - length] + footer.replace(b"y" * 40, secret) + raw[-8:])



def _footer_of(path):
    raw = path.read_bytes()
    length = int.from_bytes(raw[-8:-4], "little")
    return raw, raw[-8 - length:-8]


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _more_rows_declared(path, s, original):
    """The footer's row count raised by one over what its row groups hold."""
    s.to_parquet(path, index=False)
    raw, footer = _footer_of(path)
    old = b"\x16" + _varint(2 * len(s))  # FileMetaData.num_rows: field 3, i64, zigzag
    new = b"\x16" + _varint(2 * (len(s) + 1))
    assert len(new) == len(old) and old in footer
    footer = footer.replace(old, new, 1)
    path.write_bytes(raw[:-8 - len(footer)] + footer + raw[-8:])
    assert pq.ParquetFile(path).metadata.num_rows == len(s) + 1


def _chunk_in_another_file(path, s, original):
    """The first column chunk says it is stored in another file (ColumnChunk.file_path)."""
    s.to_parquet(path, index=False)
    raw, footer = _footer_of(path)
    n_columns = pq.ParquetFile(path).metadata.num_columns
    # row_groups list of one RowGroup, its columns list, the first chunk's field 2
    start = b"\x19\x1c\x19" + bytes([(n_columns << 4) | 0x0C]) + b"\x26"
    assert footer.count(start) == 1
    name = b"original.parquet"
    footer = footer.replace(start, start[:-1] + b"\x18" + bytes([len(name)]) + name
                            + b"\x16", 1)  # file_path (field 1), then field 2 by delta
    path.write_bytes(raw[:-8 - len(_footer_of(path)[1])] + footer
                     + len(footer).to_bytes(4, "little") + b"PAR1")
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).file_path == "original.parquet"


PARQUET = {
    "index column (RangeIndex replaced by the original a1)": (
        lambda p, s, o: _with_index(s, o).to_parquet(p), r"index column '__index_level_0__'"),
    "named index column": (
        lambda p, s, o: _with_index(s, o, "a1_original").to_parquet(p),
        r"index column 'a1_original'"),
    "multi-index columns": (
        lambda p, s, o: s.set_index([pd.Index(o["a1"].to_numpy(), name="i1"),
                                     pd.Index(o["a2"].to_numpy(), name="i2")])
        .to_parquet(p), r"index column 'i1'"),
    "extra column": (lambda p, s, o: s.assign(a1_original=o["a1"].to_numpy())
                     .to_parquet(p, index=False), r"extra column 'a1_original'"),
    "key-value metadata": (lambda p, s, o: pq.write_table(_kv(s, o), p),
                           r"key-value metadata 'original'"),
    "DataFrame.attrs in the pandas metadata": (
        lambda p, s, o: _set_attrs(s, o).to_parquet(p, index=False),
        r"key-value metadata|'attributes'"),
    "field metadata": (lambda p, s, o: pq.write_table(_field_meta(s, o), p),
                       r"field metadata on column 'a3'"),
    "pandas metadata: a RangeIndex that is not 0..n": (
        lambda p, s, o: pq.write_table(_pandas_meta(s, o, lambda m, o: m.update(
            index_columns=[{"kind": "range", "name": "a1=0.5488", "start": 0,
                            "stop": len(o), "step": 1}])), p), r"pandas metadata index"),
    "pandas metadata: values in a column's metadata": (
        lambda p, s, o: pq.write_table(_pandas_meta(s, o, lambda m, o: m["columns"][0].update(
            metadata={"original": o["a1"].tolist()})), p),
        r"pandas metadata of column 'a1' holding more than its type"),
    "pandas metadata: an extra key": (
        lambda p, s, o: pq.write_table(_pandas_meta(s, o, lambda m, o: m.update(
            original=_original_csv(o))), p), r"pandas metadata key 'original'"),
    "pandas metadata: the original in the creator field": (
        lambda p, s, o: pq.write_table(_pandas_meta(s, o, lambda m, o: m["creator"].update(
            version=_original_csv(o))), p), r"creator/version"),
    "metadata embedded only in ARROW:schema": (
        _arrow_schema_only, r"metadata embedded in ARROW:schema"),
    "nested column hiding the original": (lambda p, s, o: pq.write_table(_nested(s, o), p),
                                          r"nested column 'a3'"),
    "dictionary values no row uses": (
        lambda p, s, o: _unused_categories(s, o).to_parquet(p, index=False),
        r"value\(s\) in the dictionary of column 'a5'"),
    "bytes between the row groups and the footer": (
        _extra_rows_before_footer, r"bytes that no column chunk references"),
    "the writer's created_by field": (_created_by, r"created_by"),
    "an unknown Thrift field in the footer": (_footer_field,
                                              r"an unknown footer field footer\.100"),
    "forged statistics": (_forged_statistics,
                          r"statistics of column 'a5' that are no value of it"),
    "a footer declaring more rows than its row groups hold": (
        _more_rows_declared, r"row groups holding \d+ rows for \d+ declared"),
    "a column chunk stored in another file": (
        _chunk_in_another_file, r"column chunk stored in another file"),
    "a page index (bytes outside the column chunks)": (
        lambda p, s, o: pq.write_table(pa.Table.from_pandas(s, preserve_index=False), p,
                                       write_page_index=True), r"page index"),
}


def _set_attrs(s, original):
    out = s.copy()
    out.attrs["original"] = _original_csv(original)
    return out


CSV = {
    "pandas index column (to_csv default)": (
        lambda p, s, o: s.to_csv(p), r"an unnamed column"),
    "named index column": (lambda p, s, o: _with_index(s, o, "a1_original").to_csv(p),
                           r"extra column 'a1_original'|index column"),
    "rows one field longer than the header (read as an index)": (
        lambda p, s, o: _with_index(s, o).to_csv(p, index_label=False),
        r"row 2 has 7 fields, the header 6"),
    "extra column": (lambda p, s, o: s.assign(z=o["a1"].to_numpy()).to_csv(p, index=False),
                     r"extra column 'z'"),
    "duplicated header names": (
        lambda p, s, o: p.write_text(s.to_csv(index=False).replace("a3,", "a3,a3x,", 1)
                                     .replace("a3x", "a3")),
        r"duplicated column name\(s\) \['a3'\]"),
}


@pytest.mark.parametrize("carrier", list(PARQUET))
def test_parquet_carriers_are_refused(tmp_path, original, artefact, surrogate, carrier):
    write, reason = PARQUET[carrier]
    path = tmp_path / "s.parquet"
    write(path, surrogate, original)
    # the table a reader sees may look perfectly fine...
    with pytest.raises(DataError, match=reason) as err:
        check_publishable(path, artefact)
    assert len(str(err.value).splitlines()) == 1
    assert str(err.value).startswith(f"Not publishable: '{path}' carries more than")


@pytest.mark.parametrize("carrier", list(CSV))
def test_csv_carriers_are_refused(tmp_path, original, artefact, surrogate, carrier):
    write, reason = CSV[carrier]
    path = tmp_path / "s.csv"
    write(path, surrogate, original)
    with pytest.raises(DataError, match=reason) as err:
        check_publishable(path, artefact)
    assert len(str(err.value).splitlines()) == 1


def test_a_directory_of_parquet_parts_is_not_a_publishable_file(tmp_path, original,
                                                                artefact, surrogate):
    # pandas would read every part, hidden ones included, as one table
    (tmp_path / "s.parquet").mkdir()
    surrogate.to_parquet(tmp_path / "s.parquet" / "part-0.parquet", index=False)
    original.to_parquet(tmp_path / "s.parquet" / ".hidden.parquet", index=False)
    with pytest.raises(DataError, match=r"Unreadable file .*s\.parquet"):
        check_publishable(tmp_path / "s.parquet", artefact)


def test_the_gate_refuses_a_carrier_before_judging_and_writes_nothing(tmp_path, original,
                                                                     artefact, surrogate):
    from astrid_airflow import ArtefactStore

    path = tmp_path / "s.parquet"
    _with_index(surrogate, original).to_parquet(path)
    # pandas reads the table back without the index: it equals a fine surrogate
    back = pd.read_parquet(path).reset_index(drop=True)
    pd.testing.assert_frame_equal(back, surrogate.reset_index(drop=True))
    with pytest.raises(DataError, match=r"index column"):
        validate_surrogate(original, path, artefact, random_state=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.parquet"]
    # nor is a default suite written into a version saved without one
    version = ArtefactStore(tmp_path / "store").save("m", artefact)
    with pytest.raises(DataError, match=r"index column"):
        validate_surrogate(original, path, f"{tmp_path}/store/m", random_state=0)
    assert sorted(p.name for p in (tmp_path / "store" / "m" / version).iterdir()) == [
        "artefact.json", "manifest.json"]  # the version's manifest (issue 29), no suite


def test_a_file_changed_while_judged_is_refused(tmp_path, original, artefact, surrogate,
                                                monkeypatch):
    import astrid_airflow.gate._gate as gate

    path = tmp_path / "s.parquet"
    surrogate.to_parquet(path, index=False)
    real = gate._write_outputs

    def run_suite_then_swap(*args, **kwargs):
        result = real_run(*args, **kwargs)
        original.to_parquet(path, index=False)  # swapped after reading, before deciding
        return result

    real_run = gate._run_suite
    monkeypatch.setattr(gate, "_run_suite", run_suite_then_swap)
    with pytest.raises(GateError, match=r"changed while the gate judged it"):
        validate_surrogate(original, path, artefact, random_state=0,
                           metrics={"accuracy_original": 1.0, "accuracy_surrogate": 1.0})
    assert real is gate._write_outputs
    assert not (tmp_path / "s.validation.json").exists()


# ------------------------------------------------------------------------- PostgreSQL

@pytest.fixture
def pg_table(tmp_path, surrogate):
    """The surrogate published into a fresh schema as astrid publishes it."""
    import uuid

    import psycopg

    from astrid_airflow.io._sql_publish import publish_table
    from tests.io.test_sql import postgres_url

    url = postgres_url()  # skips without a server (fails under CI)
    schema = f"t_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    path = tmp_path / "s.parquet"
    surrogate.to_parquet(path, index=False)
    table_url = f"{url}?table={schema}.released"
    publish_table(path, table_url, comment={
        "astrid_release": "manual__1", "sha256": "ab" * 32, "artefact": "m@v0001",
        "run_id": "manual__1", "published_at": "2026-01-01T00:00:00+00:00"})

    def run(sql):
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql)

    yield table_url, f"{schema}.released", run
    run(f"DROP SCHEMA {schema} CASCADE")


@pytest.mark.postgres
def test_a_table_astrid_published_is_publishable(pg_table, artefact):
    table_url, _, _ = pg_table
    assert publishability_problems(table_url, artefact) == []


POSTGRES = {
    "extra column": ("ALTER TABLE {t} ADD COLUMN a1_original double precision DEFAULT 0.5",
                     r"extra column 'a1_original'"),
    "column comment": ("COMMENT ON COLUMN {t}.a1 IS '0.5488,0.7152,0.6028'",
                       r"a comment on column 'a1'"),
    "table comment other than the release record": (
        "COMMENT ON TABLE {t} IS 'a1,a2\n0.5488,0.7152'",
        r"a table comment that is not astrid's release record"),
    "column default": ("ALTER TABLE {t} ALTER COLUMN a1 SET DEFAULT 0.5488135",
                       r"column default\(s\) on \['a1'\]"),
    "check constraint holding a value": (
        "ALTER TABLE {t} ADD CONSTRAINT orig_0_5488 CHECK (a1 <> 0.5488135)",
        r"constraint\(s\) \['orig_0_5488'\]"),
    "inheriting table with the original rows": (
        "CREATE TABLE {t}_orig (orig double precision) INHERITS ({t})",
        r"inheriting table\(s\)"),
    "rule": ("CREATE RULE keep AS ON INSERT TO {t} DO INSTEAD NOTHING", r"rule\(s\) \['keep'\]"),
    "trigger": ("CREATE FUNCTION {t}_f() RETURNS trigger LANGUAGE plpgsql AS "
                "'BEGIN RETURN NEW; END'; CREATE TRIGGER orig BEFORE INSERT ON {t} "
                "FOR EACH ROW EXECUTE FUNCTION {t}_f()", r"trigger\(s\) \['orig'\]"),
    "release record with an extra field": (
        """COMMENT ON TABLE {t} IS '{{"astrid_release": "x", "original": "0.5488"}}'""",
        r"a table comment that is not astrid's release record"),
}


@pytest.mark.postgres
@pytest.mark.parametrize("carrier", list(POSTGRES))
def test_postgres_carriers_are_refused(pg_table, original, artefact, carrier):
    table_url, table, run = pg_table
    sql, reason = POSTGRES[carrier]
    run(sql.format(t=table))
    with pytest.raises(DataError, match=reason):
        check_publishable(table_url, artefact)
    with pytest.raises(DataError, match=reason):
        validate_surrogate(original, table_url, artefact, random_state=0)


# ---------------------------------------------------------------- the Thrift reader

def test_thrift_reader_decodes_a_real_footer_and_refuses_malformed_bytes(tmp_path,
                                                                         surrogate):
    from astrid_airflow.gate._thrift import ThriftError, read_struct

    path = tmp_path / "s.parquet"
    surrogate.to_parquet(path, index=False)
    raw = path.read_bytes()
    length = int.from_bytes(raw[-8:-4], "little")
    meta, end = read_struct(raw[-8 - length:-8])
    assert end == length and meta[3] == len(surrogate)  # num_rows
    assert [e.get(4) for e in meta[2]][1:] == [c.encode() for c in surrogate.columns]
    for bad in (raw[-8 - length:-9], b"\x19\xfc", b"\x1c" * 100 + b"\x00" * 100,
                b"\x0d" + b"\xff" * 12):
        with pytest.raises(ThriftError):
            read_struct(bad)

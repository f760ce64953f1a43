"""Issue 53: successive releases of a destination cannot be differenced.

Publish a batch, then the same batch minus one person: before, both passed and
subtracting the two files' per-class value counts gave that person's class and every
value. Now the gate fingerprints the rows it judged, every release archives them, and
publish refuses a release that adds or drops between 1 and k - 1 distinct rows of a
class next to any earlier release of the destination.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from astrid_airflow.cli import main
from astrid_airflow.release import SourceRows, differencing, source_fingerprints
from tests.cli import test_publish_cli
from tests.pipeline.test_publish_modes import gate_here

staged = test_publish_cli.staged  # the fixture, shared

_ROWS = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.sampled_from("xy")),
                 min_size=1, max_size=40)


def _frame(rows: list) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["a", "b", "class"])


def _brute_force(new: list, old: list, k: int) -> set:
    """(direction, class, count) of every difference of distinct rows below k."""
    out = set()
    for direction, a, b in (("adds", set(new), set(old)), ("drops", set(old), set(new))):
        for label in "xy":
            n = sum(1 for r in a - b if r[2] == label)
            if 0 < n < k:
                out.add((direction, label, n))
    return out


@settings(max_examples=120, deadline=None)
@given(old=_ROWS, new=_ROWS, k=st.integers(1, 6))
def test_a_release_is_refused_exactly_when_a_difference_isolates_fewer_than_k(old, new, k):
    # the claim: any two releases of a destination differ by at least k distinct rows
    # of each class they change, or the later one is refused; duplicates count once
    key = b"k" * 32
    earlier = source_fingerprints(_frame(old), ["a", "b"], "class", key)
    found = differencing(source_fingerprints(_frame(new), ["a", "b"], "class", key),
                         {"r1": earlier}, k)
    got = {(i.direction, i.label, i.rows) for i in found.isolations}
    assert got == _brute_force(new, old, k)
    assert found.safe == (not got) and found.compared == ("r1",)


def test_fingerprints_round_trip_and_another_key_is_not_compared():
    table = _frame([(1, 2, "x"), (1, 2, "x"), (0, 1, "y")])
    rows = source_fingerprints(table, ["a", "b"], "class", b"s" * 32)
    back = SourceRows.from_bytes(rows.to_bytes(), "f")
    assert len(back.fingerprints) == 2  # the duplicate is one person
    assert list(back.fingerprints) == list(rows.fingerprints) and back.keyed
    other = source_fingerprints(table.iloc[:1], ["a", "b"], "class", None)
    found = differencing(other, {"r1": back}, 5)
    assert found.safe and found.not_compared == ("r1",)
    # no row is stored: only 16-byte hashes and classes
    assert set(pd.read_parquet(__import__("io").BytesIO(rows.to_bytes())).columns) == \
        {"fingerprint", "class"}


def _release(tmp, src, table, name, release_id, capsys):
    """Shuffle ``table`` with the store's artefact, gate it and publish it."""
    batch = tmp / f"{name}.parquet"
    table.to_parquet(batch, index=False)
    surrogate = tmp / name / "surrogate.parquet"
    assert main(["shuffle", str(batch), "--artefact", str(tmp / "store" / "syn"), "--out",
                 str(surrogate), "--seed", "1", "--no-utility"]) == 0
    receipt = gate_here(batch, surrogate, tmp / "store" / "syn")
    capsys.readouterr()
    code = main(["publish", str(surrogate), "--destination",
                 str(tmp / "published" / "release.parquet"), "--receipt", str(receipt),
                 "--release-id", release_id, "--json"])
    return code, capsys.readouterr()


def test_the_same_batch_minus_one_person_is_refused(staged, capsys):
    tmp, src, _ = staged
    table = pd.read_parquet(src)
    cols = [c for c in table.columns if c != "class"]
    counts = table.value_counts(subset=[*cols, "class"])
    unique = counts[counts == 1].index  # rows no other row equals
    code, out = _release(tmp, src, table, "day1", "r1", capsys)
    assert code == 0, out.err
    manifest = json.loads((tmp / "published" / "release.release.json").read_text())
    assert manifest["successive_releases"]["compared"] == []
    archive = tmp / "published" / "releases" / "r1"
    assert (archive / "surrogate.source_rows.parquet").is_file()

    target = table.set_index([*cols, "class"]).index.get_loc(unique[0])
    code, out = _release(tmp, src, table.drop(index=target), "day2", "r2", capsys)
    assert code == 2, out
    line = out.err.strip().splitlines()
    assert len(line) == 1 and "differencing" in line[0] and "against release 'r1'" in \
        line[0] and "drops 1 row(s)" in line[0], out.err
    assert not (tmp / "published" / "releases" / "r2").exists()  # nothing written
    current = json.loads((tmp / "published" / "release.release.json").read_text())
    assert current["release_id"] == "r1"

    # k distinct rows of one class dropped: the difference hides each among k
    label = unique[0][-1]
    of_class = [u for u in unique if u[-1] == label]
    k = json.loads((tmp / "day1" / "surrogate.gate.json").read_text())["policy"][
        "disclosure_k"]
    assert len(of_class) >= k  # the fixture's rows are all distinct
    drop = [table.set_index([*cols, "class"]).index.get_loc(u) for u in of_class[:k]]
    code, out = _release(tmp, src, table.drop(index=np.ravel(drop)), "day3", "r3", capsys)
    assert code == 0, out.err
    manifest = json.loads((tmp / "published" / "release.release.json").read_text())
    assert manifest["release_id"] == "r3"
    assert manifest["successive_releases"]["compared"] == ["r1"]
    assert manifest["successive_releases"]["isolations"] == []

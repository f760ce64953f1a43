"""A whole release of a 20,002-row data-platform table through the command line (issue 33).

``make_mixed_table`` (30 attributes: 18 numeric, 12 categorical string columns of 2-300
levels; the class planted in three groups) through ``astrid learn`` with its defaults
(above 20,000 rows they resolve to hgb, ``--sample auto``, adaptive mode and the pair
screen), ``astrid shuffle``, ``astrid validate`` and ``astrid publish`` as a scheduled
job runs them: subprocesses, ``ASTRID_SIGNING_KEY`` set, stderr not a terminal.

At this size the default policy cannot be met: every release of this table that passes
the privacy checks loses about 0.1 accuracy (the partitioned and binned pairs of
continuous columns leave 15,000 training rows too coarse a picture;
``benchmarks/results/release_scale.md``), and at 1,000,000 rows the same table's
release is chosen. So this is what a scheduled job must do with a table its policy
cannot release: the release choice refuses and says which trade-off failed, the shuffle
publishes nothing, and the raw release (``--no-remedies``) is judged by the gate, which
refuses it on privacy, so publish refuses it too. ``test_release_scale_cli.py`` runs the
same pipeline on 1,000 rows, where a release is chosen, gated and published.
"""

from __future__ import annotations

import json

import pytest
from release_cli import astrid, mixed_tables

pytestmark = pytest.mark.e2e  # the real release choice, through the command line

ROWS = 20_002  # above 20,000: the large-table defaults resolve by themselves



@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("release_scale_20k")
    ref, new, planted = mixed_tables(tmp, ROWS)
    store, staging, dest = tmp / "store", tmp / "staging", tmp / "public" / "release.parquet"
    staging.mkdir()
    art = f"{store}/mixed"
    stages = {
        "learn": ["learn", str(ref), "--target", "class", "--store", str(store), "--name",
                  "mixed", "--json", "--jobs", "2", "--seed", "0"],
        "shuffle": ["shuffle", str(new), "--artefact", art, "--out",
                    str(staging / "surrogate.parquet"), "--seed", "1", "--json"],
        "shuffle_raw": ["shuffle", str(new), "--artefact", art, "--out",
                        str(staging / "raw.parquet"), "--seed", "1", "--json",
                        "--no-remedies"],
        "validate_raw": ["validate", "--original", str(new), "--surrogate",
                         str(staging / "raw.parquet"), "--artefact", art, "--seed", "2",
                         "--json", "--no-remedies"],
        "publish_raw": ["publish", str(staging / "raw.parquet"), "--destination", str(dest),
                        "--receipt", str(staging / "raw.gate.json"), "--json"],
    }
    done = {name: astrid(args, tmp) for name, args in stages.items()}
    return {"planted": planted, "staging": staging, "dest": dest, **done}


def test_learn_refuses_the_release_and_says_which_trade_off_failed(run):
    proc = run["learn"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    release = out["release"]
    assert release["status"] == "refused" and release["remedied"] == 0
    assert release["reason"].startswith("privacy")  # names the trade-off
    assert "max_accuracy_drop" in release["reason"] or "policy" in release["reason"]
    # the large-table path, with its progress lines
    assert out["classifier"]["preset"] == "hgb" and out["sample"]["rule"] == "auto"
    assert "astrid release choice: about" in proc.stderr
    blocks = [set(b) for b in out["screen"]["blocks"]]
    for group in run["planted"]:  # each planted group inside one block of the screen
        assert any(set(group) <= b for b in blocks), (group, blocks)


def test_the_shuffle_publishes_nothing_and_says_why_in_one_line(run):
    proc = run["shuffle"]
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("astrid shuffle: error")]
    assert len(lines) == 1 and "passes its privacy policy" in lines[0]
    assert not (run["staging"] / "surrogate.parquet").exists()


def test_the_gate_refuses_the_raw_release_with_a_signed_receipt(run):
    assert run["shuffle_raw"].returncode == 0, run["shuffle_raw"].stderr[-2000:]
    proc = run["validate_raw"]
    assert proc.returncode == 1, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["success"] is False
    failed = {e["category"] for e in out["expectations"] if not e["success"]}
    assert "privacy" in failed
    receipt = json.loads((run["staging"] / "raw.gate.json").read_text())
    assert receipt.get("signature") and receipt["success"] is False


def test_publish_refuses_what_the_gate_refused_and_nothing_is_published(run):
    proc = run["publish_raw"]
    assert proc.returncode != 0
    assert not run["dest"].exists()
    if run["dest"].parent.exists():  # nothing partial either
        assert not list(run["dest"].parent.iterdir())

"""Every stage of a release logs its estimate and a heartbeat with the time left (issue 33).

Shuffle (``stage_surrogate``), validate (``validate_surrogate``) and publish
(``publish_release``) each log ``astrid <stage>: ..., estimated <t> (an estimate: ...)``
once they know their size, then ``astrid progress: <stage>: ..., time left ...`` at least
every ``INTERVAL`` seconds (30 s; 50 ms here) on the ``astrid_airflow`` logger, and the
actual against the estimate at the end. The ``astrid`` command shows them on stderr
unless ``--quiet``.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest

from astrid_airflow import GroupingArtefact, make_synthetic, stage_surrogate, validate_surrogate
from astrid_airflow.engine import _progress
from astrid_airflow.pipeline import PublishRequest, publish_release
from tests.pipeline.test_publish_concurrency import KEY
from tests.pipeline.test_publish_concurrency import stage as staged_with_receipt

SAME = {"accuracy_original": 0.9, "accuracy_surrogate": 0.9}


@pytest.fixture
def lines(caplog, monkeypatch):
    monkeypatch.setattr(_progress, "INTERVAL", 0.05)
    caplog.set_level(logging.INFO, logger="astrid_airflow")
    return caplog


@pytest.fixture(scope="module")
def table():
    return make_synthetic(60, random_state=3)  # 120 rows


def artefact(table) -> GroupingArtefact:
    result = {"grouping": [["a1", "a2"], ["a3"], ["a4"]], "k": 3, "table": [],
              "target": "class", "classifier": {"preset": "nb"}, "scoring": "accuracy",
              "alpha": 0.05, "n_search": 5, "n_test": 10, "random_state": 0}
    return GroupingArtefact.from_result(result, table, created_at="2026-01-01T00:00:00Z")


def slowed(monkeypatch, module, name: str, seconds: float = 0.3) -> None:
    """``module.name`` sleeps ``seconds`` first: a stage longer than the heartbeat."""
    real = getattr(module, name)

    def slow(*args, **kwargs):
        time.sleep(seconds)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, slow)


def check_lines(messages: list[str], stage: str) -> None:
    """The estimate first, then progress lines with the time left, then the actual."""
    mine = [m for m in messages if m.startswith((f"astrid {stage}: ",
                                                 f"astrid progress: {stage}: "))]
    first = next(i for i, m in enumerate(mine) if m.startswith(f"astrid {stage}: "))
    assert all(m.endswith("(the estimate follows once the size is known)")
               for m in mine[:first]), mine
    mine = mine[first:]
    assert ", estimated " in mine[0] and \
        "(an estimate: rates measured on a 2-core machine)" in mine[0], messages
    beats = [m for m in mine if m.startswith(f"astrid progress: {stage}: ")]
    assert beats, messages
    assert all(" planned (" in m and ", elapsed " in m and ", time left " in m
               for m in beats), beats
    assert " steps in " in mine[-1] and "(estimated " in mine[-1], mine


def test_shuffle_logs_its_estimate_and_progress(table, tmp_path, lines, monkeypatch):
    from astrid_airflow.release import _surrogate

    src = tmp_path / "t.parquet"
    table.to_parquet(src)
    slowed(monkeypatch, _surrogate, "_write_shuffled")
    staged = stage_surrogate(src, artefact(table), tmp_path / "s.parquet", random_state=5,
                             n_copies=2, utility=False)
    assert staged.metrics["rows"] == len(table)
    check_lines(lines.messages, "shuffle")
    estimate = next(m for m in lines.messages if m.startswith("astrid shuffle: "))
    assert estimate.startswith(f"astrid shuffle: {len(table)} rows x 5 columns, 2 copies, "
                               "raw release (no recipe); metrics; 6 steps, estimated "), estimate
    writing = [m for m in lines.messages if m.startswith("astrid progress: shuffle: copy 2/2: "
                                                         "writing, steps 3/6 planned")]
    assert writing, lines.messages


def test_shuffle_with_a_recipe_counts_its_steps(tmp_path, lines):
    import dataclasses

    from astrid_airflow import fit_recipe

    table = make_synthetic(500, random_state=3)
    recipe, _ = fit_recipe(table, target="class", grouping="a1,a2;a3;a4", k=2)
    art = dataclasses.replace(artefact(table), release={"status": "given",
                                                        "recipe": recipe.to_dict()})
    src = tmp_path / "t.csv"
    table.to_csv(src, index=False)
    stage_surrogate(src, art, tmp_path / "s.csv", random_state=5, utility=False)
    n = len(recipe.steps)
    # read, the recipe's steps, suppression, swaps, write; then the metrics
    estimate = next(m for m in lines.messages if m.startswith("astrid shuffle: "))
    assert f"recipe of {n} steps and local suppression; metrics; {n + 5} steps" in \
        estimate, lines.messages
    assert lines.messages[-1].startswith(f"astrid shuffle: {n + 5} steps in "), lines.messages


def test_validate_logs_its_estimate_and_progress(table, tmp_path, lines, monkeypatch):
    from astrid_airflow import make_surrogate
    from astrid_airflow.gate import _gate

    slowed(monkeypatch, _gate, "_gx_definition")
    art = artefact(table)
    result = validate_surrogate(table, make_surrogate(table, art, random_state=1), art,
                                random_state=0, metrics=SAME)
    assert result.expectations
    check_lines(lines.messages, "validate")
    estimate = next(m for m in lines.messages if m.startswith("astrid validate: "))
    # read, domain, GX's set-up, 11 metrics (the attacks once, with their own model)
    assert estimate.startswith(f"astrid validate: {len(table)} rows x 5 columns, 15 checks; "
                               "shadow-release attacks; 14 steps, estimated "), estimate
    assert any(m.startswith("astrid progress: validate: setting up Great Expectations, "
                            "steps 2/14") for m in lines.messages), lines.messages
    assert lines.messages[-1].startswith("astrid validate: 14 steps in "), lines.messages


def test_publish_logs_its_estimate_and_progress(tmp_path, lines, monkeypatch):
    from astrid_airflow.pipeline import _integrity

    monkeypatch.setenv("ASTRID_SIGNING_KEY", KEY)
    surrogate = staged_with_receipt(tmp_path, "one", "1")
    slowed(monkeypatch, _integrity, "canonical_of")
    done = publish_release(PublishRequest(surrogate=surrogate,
                                          destination=tmp_path / "pub" / "s.csv",
                                          release_id="r1"))
    assert done.published
    check_lines(lines.messages, "publish")
    assert next(m for m in lines.messages if m.startswith("astrid publish: ")).startswith(
        "astrid publish: a staged file of 0.0 MB; the signed receipt; 4 steps, "
        "estimated "), lines.messages
    assert any(m.startswith("astrid progress: publish: the canonical re-write, steps 2/4")
               for m in lines.messages), lines.messages


def test_publish_gating_here_logs_the_gate_inside(table, tmp_path, lines):
    from astrid_airflow import ArtefactStore, make_surrogate
    from astrid_airflow.gate import gate_extra_files

    art = artefact(table)
    store = tmp_path / "store"
    version = ArtefactStore(store).save("t", art, extra_files=gate_extra_files(art))
    src, surrogate = tmp_path / "t.csv", tmp_path / "staging" / "s.csv"
    surrogate.parent.mkdir()
    table.to_csv(src, index=False)
    make_surrogate(table, art, random_state=1).to_csv(surrogate, index=False)
    publish_release(PublishRequest(surrogate=surrogate, destination=tmp_path / "pub" / "s.csv",
                                   release_id="r1", original=str(src),
                                   artefact=f"{store}/t@{version}", random_state=0))
    starts = [m.split(":")[0] for m in lines.messages if " estimated " in m
              and not m.startswith("astrid progress")]
    assert starts[:2] == ["astrid publish", "astrid validate"], lines.messages
    assert "the gate run here (its own estimate follows)" in \
        next(m for m in lines.messages if m.startswith("astrid publish: "))


def test_nothing_is_logged_when_the_logger_is_quiet(table, tmp_path, caplog, monkeypatch):
    """The library's switch is the logger's level: at WARNING no line at all."""
    monkeypatch.setattr(_progress, "INTERVAL", 0.05)
    caplog.set_level(logging.WARNING, logger="astrid_airflow")
    from astrid_airflow.release import _surrogate

    slowed(monkeypatch, _surrogate, "_write_shuffled")
    src = tmp_path / "t.parquet"
    table.to_parquet(src)
    stage_surrogate(src, artefact(table), tmp_path / "s.parquet", random_state=5,
                    utility=False)
    assert not caplog.messages


# ------------------------------------------------------------------ the command line

@pytest.fixture(scope="module")
def cli_inputs(table, tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    (root / "t.parquet").write_bytes(b"")
    table.to_parquet(root / "t.parquet")
    (root / "artefact.json").write_text(artefact(table).to_json())
    return root


def _shuffle(root: Path, out: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "astrid_airflow.cli", "shuffle",
                           str(root / "t.parquet"), "--artefact", str(root / "artefact.json"),
                           "--out", str(root / out), "--seed", "1", "--no-utility",
                           "--json", *extra], capture_output=True, text=True, timeout=300)


def test_the_command_shows_the_lines_on_stderr_and_quiet_hides_them(cli_inputs):
    shown = _shuffle(cli_inputs, "a.parquet")
    assert shown.returncode == 0, shown.stderr
    err = shown.stderr.splitlines()
    assert err[0].startswith("astrid shuffle: 120 rows x 5 columns, 1 copy, raw release "
                             "(no recipe); metrics; 3 steps, estimated "), err
    assert err[-1].startswith("astrid shuffle: 3 steps in "), err
    quiet = _shuffle(cli_inputs, "b.parquet", "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    # the same output either way: the lines are on stderr only
    a, b = json.loads(shown.stdout), json.loads(quiet.stdout)
    assert {k: v for k, v in a.items() if k not in ("out", "seconds")} == \
        {k: v for k, v in b.items() if k not in ("out", "seconds")}
    assert (cli_inputs / "a.parquet").read_bytes() == (cli_inputs / "b.parquet").read_bytes()

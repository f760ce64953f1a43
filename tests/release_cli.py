"""The command-line release pipeline as a scheduled job runs it: shared by the tests
that run it end to end (tests/pipeline/test_release_scale_cli*.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: The signing key in every stage's environment: publish trusts the signed receipt.
KEY = "release-scale-cli-test-key-0123456789"


def astrid(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``python -m astrid_airflow.cli ARGS`` in ``cwd``, the key set, stderr captured."""
    env = {**os.environ, "ASTRID_SIGNING_KEY": KEY}
    return subprocess.run([sys.executable, "-m", "astrid_airflow.cli", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=3600)


def mixed_tables(tmp: Path, rows: int) -> tuple[Path, Path, list]:
    """The reference (seed 0) and a new batch (seed 1) of ``make_mixed_table`` as
    Parquet in ``tmp``: their paths and the planted groups."""
    from astrid_airflow import make_mixed_table

    reference, planted = make_mixed_table(rows, random_state=0)
    batch, _ = make_mixed_table(rows, random_state=1)
    ref, new = tmp / "reference.parquet", tmp / "batch.parquet"
    reference.to_parquet(ref, index=False)
    batch.to_parquet(new, index=False)
    return ref, new, planted

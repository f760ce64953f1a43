"""Regenerate docs/bad-input-matrix.md from the cases in tests/project/test_bad_input_matrix.py.

Runs every case (a few seconds) in a temporary working directory, exactly as the test
does, and writes the table of input -> expected behaviour -> actual message. The test
``test_doc_is_in_sync`` fails when the file is stale.

    .venv/bin/python scripts/gen_bad_input_matrix.py
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    # Airflow reads its configuration at import: keep it away from ~/airflow, as the
    # test suite's conftest does.
    home = tempfile.mkdtemp(prefix="astrid_airflow_home_")
    os.environ.setdefault("AIRFLOW_HOME", home)
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    # stores are signed by default: a key file of the run's own, not the user's
    os.environ.setdefault("ASTRID_KEY_FILE", os.path.join(home, "signing.key"))
    sys.path.insert(0, str(REPO))  # the matrix's modules import each other as tests.project.*
    # as under pytest (its log capture is a root handler): the CLI adds no progress lines
    # to stderr, so the messages are the test's (cli._common.progress_lines)
    logging.getLogger().addHandler(logging.NullHandler())
    spec = importlib.util.spec_from_file_location(
        "test_bad_input_matrix", REPO / "tests" / "project" / "test_bad_input_matrix.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    with tempfile.TemporaryDirectory(prefix="bad_input_") as tmp:
        work = mod.make_workdir(Path(tmp) / "work")
        try:
            outcomes = {}
            for case in mod.CASES:
                if case.needs_readonly and not work["readonly"]:
                    continue
                outcomes[case.id] = mod.run_case(case, work)
            text = mod.render_doc(mod.CASES, outcomes, work["root"])
        finally:
            mod.release_readonly(work["root"] / "ro", work["readonly"])
    mod.DOC.write_text(text, encoding="utf-8")
    print(f"wrote {mod.DOC.relative_to(REPO)} ({len(mod.CASES)} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

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

import re
from pathlib import Path

import pytest

from tests.project.bad_input_cases import (
    _cases,
)
from tests.project.bad_input_cases_release import (
    _gate_integrity_cases,
    _hardening_cases,
    _rest_cases,
)
from tests.project.bad_input_support import (
    REPO,
    Case,
    Outcome,
    check,
    make_workdir,
    release_readonly,
    run_case,
)

DOC = REPO / "docs" / "bad-input-matrix.md"


CASES = _cases() + _gate_integrity_cases() + _rest_cases() + _hardening_cases()


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
        "`tests/project/test_bad_input_matrix.py` (which also checks that this file is in sync).",
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

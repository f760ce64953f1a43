"""Every count of a gate policy is bounded: a typo of a few zeros is refused at once,
not run until killed (``--utility-repeats 100000`` once ran for hours)."""

from __future__ import annotations

import pytest

from astrid_airflow import GatePolicy, ParameterError
from astrid_airflow.cli import main
from astrid_airflow.gate._policy import (
    MAX_DISCLOSURE_K,
    MAX_UTILITY_REPEATS,
    MAX_UTILITY_TEST_ROWS,
)


@pytest.mark.parametrize("field, most", [("utility_repeats", MAX_UTILITY_REPEATS),
                                         ("utility_test_rows", MAX_UTILITY_TEST_ROWS),
                                         ("disclosure_k", MAX_DISCLOSURE_K)])
def test_a_count_above_its_bound_is_refused_and_the_bound_itself_is_accepted(field, most):
    assert getattr(GatePolicy(**{field: most}), field) == most
    with pytest.raises(ParameterError, match=f"Invalid {field}: {most + 1}. At most"):
        GatePolicy(**{field: most + 1})
    with pytest.raises(ParameterError, match=field):
        GatePolicy().with_overrides(**{field: most * 1000})


def test_validate_refuses_an_unbounded_utility_repeats_with_one_line(tmp_path, capsys):
    from astrid_airflow import ArtefactStore, make_surrogate, make_synthetic
    from tests.gate.test_gate import artefact_for

    data = make_synthetic(200, random_state=0)
    artefact = artefact_for(data, "a1,a2;a3;a4")
    ArtefactStore(tmp_path / "store").save("s", artefact)
    data.to_csv(tmp_path / "original.csv", index=False)
    make_surrogate(data, artefact, random_state=1).to_parquet(tmp_path / "s.parquet")
    code = main(["validate", "--original", str(tmp_path / "original.csv"), "--surrogate",
                 str(tmp_path / "s.parquet"), "--artefact", f"{tmp_path / 'store'}/s@latest",
                 "--utility-repeats", "100000"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "Invalid utility_repeats: 100000. At most 100." in err
    assert not list(tmp_path.glob("s.validation*"))  # nothing written

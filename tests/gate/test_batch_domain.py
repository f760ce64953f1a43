"""Batches stay inside the artefact's domain: a class the artefact never saw is refused.

A hostile stager added 4 copies of a target's row under a class the artefact had never
seen: five identical rows met k = 5, no within-class shuffle could separate them, and
the gate passed, publishing the target's full record. Both the shuffle stage and the
gate now refuse such a batch, naming the value and its rows, and write nothing.
"""

from __future__ import annotations

import pandas as pd
import pytest

from astrid_airflow import ArtefactStore, DataError, make_surrogate, make_synthetic
from astrid_airflow.cli import main
from astrid_airflow.gate import validate_surrogate
from tests.gate.test_gate import artefact_for


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    root = tmp_path_factory.mktemp("domain")
    data = make_synthetic(200, random_state=0)
    artefact = artefact_for(data, "a1,a2;a3;a4")
    ArtefactStore(root / "store").save("s", artefact)
    target = data.iloc[[0]]
    batch = pd.concat([data, *[target.assign(**{"class": 7})] * 5], ignore_index=True)
    batch.to_csv(root / "batch.csv", index=False)
    make_surrogate(batch, artefact, random_state=1).to_csv(root / "staged.csv", index=False)
    return root, artefact, batch


def test_the_shuffle_stage_refuses_a_class_the_artefact_never_saw(hostile, capsys):
    root, _, _ = hostile
    out = root / "out" / "surrogate.csv"
    code = main(["shuffle", str(root / "batch.csv"), "--artefact", f"{root / 'store'}/s",
                 "--out", str(out), "--seed", "1", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "class value(s) the artefact never saw: 7 (5 rows)" in err
    assert not out.parent.exists() or not any(out.parent.iterdir())


def test_the_gate_refuses_a_batch_with_a_class_the_artefact_never_saw(hostile, capsys):
    root, artefact, batch = hostile
    with pytest.raises(DataError, match=r"never saw: 7 \(5 rows\)"):
        validate_surrogate(batch, root / "staged.csv", artefact, random_state=0)
    code = main(["validate", "--original", str(root / "batch.csv"), "--surrogate",
                 str(root / "staged.csv"), "--artefact", f"{root / 'store'}/s@latest"])
    assert code == 2 and "never saw" in capsys.readouterr().err
    assert not list(root.glob("staged.validation*")) and not list(root.glob("*.gate.json"))


def test_a_batch_of_known_classes_passes_the_check(hostile):
    _, artefact, batch = hostile
    artefact.refuse_unseen_classes(batch[batch["class"] != 7])

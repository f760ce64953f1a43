"""Write the bundled demo tables in ``astrid_airflow/data/`` (run from the repo root).

* ``synthetic.csv``: the paper's running example (Sec. 5), ``make_synthetic(random_state=0)``,
  1000 rows, columns ``a1..a4, class``; the toy the tests and the paper reproduction use.
* ``synthetic_batch.csv``: a second draw from the same distribution
  (``random_state=1``).
* ``diabetes.csv``: the UCI Pima Indians Diabetes table (768 rows, 8 attributes, class
  ``tested_negative``/``tested_positive``; source, licence and citation in
  ``data/DIABETES.md``), the table the publishing example DAGs learn on and publish a
  surrogate of. Every data line of Weka's ``diabetes.arff``, in the file's order, its
  values written exactly as the file writes them (no row invented, dropped or changed;
  only the header line and LF line endings are new).

``python scripts/make_demo_data.py [UCI_DIR]``: ``UCI_DIR`` holds ``diabetes.arff``
(default ``$ASTRID_UCI_DIR``, else ``../shared/datasets/uci`` beside the repo).
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import sys

from astrid_airflow import make_synthetic

REPO = pathlib.Path(__file__).resolve().parents[1]
OUT = REPO / "astrid_airflow" / "data"
#: sha256 of the Weka ARFF the diabetes tables are cut from (the datasets' README)
DIABETES_SHA256 = "d997e67d1d3768a253160c7eccd9504e1d2755c0a5b6ed79fdaba34220317efd"


def diabetes_rows(arff: pathlib.Path) -> tuple[list[str], list[str]]:
    """The column names and the data lines of ``diabetes.arff``, values as written."""
    data = arff.read_bytes()
    if hashlib.sha256(data).hexdigest() != DIABETES_SHA256:
        raise SystemExit(f"{arff} is not the documented diabetes.arff (sha256 differs)")
    names, rows, in_data = [], [], False
    for raw in data.decode("utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("%"):
            continue
        if not in_data:
            if line.lower().startswith("@attribute"):
                names.append(line.split()[1].strip("'"))
            elif line.lower().startswith("@data"):
                in_data = True
            continue
        rows.append(line)
    if names[-1] != "class" or len(rows) != 768:
        raise SystemExit(f"{arff}: expected 768 rows ending in 'class'")
    return names, rows


def write_diabetes(uci_dir: pathlib.Path) -> None:
    names, rows = diabetes_rows(uci_dir / "diabetes.arff")
    (OUT / "diabetes.csv").write_text("\n".join([",".join(names), *rows]) + "\n")
    print(OUT / "diabetes.csv", len(rows), "rows")


def main(argv: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, seed in (("synthetic.csv", 0), ("synthetic_batch.csv", 1)):
        make_synthetic(random_state=seed).to_csv(OUT / name, index=False, float_format="%.6f")
        print(OUT / name)
    uci = argv[0] if argv else os.environ.get("ASTRID_UCI_DIR") or REPO.parent / "shared" \
        / "datasets" / "uci"
    write_diabetes(pathlib.Path(uci))


if __name__ == "__main__":
    main(sys.argv[1:])

"""Write the bundled demo tables in ``astrid_airflow/data/`` (run from the repo root).

* ``synthetic.csv``: the paper's running example (Sec. 5), ``make_synthetic(random_state=0)``,
  1000 rows, columns ``a1..a4, class``; the reference table the demo DAG learns from.
* ``synthetic_batch.csv``: a second draw from the same distribution
  (``random_state=1``), standing in for the "new batch" a scheduled run shuffles with
  the grouping learned on the reference table.
"""

from __future__ import annotations

import pathlib

from astrid_airflow import make_synthetic

OUT = pathlib.Path(__file__).resolve().parents[1] / "astrid_airflow" / "data"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, seed in (("synthetic.csv", 0), ("synthetic_batch.csv", 1)):
        make_synthetic(random_state=seed).to_csv(OUT / name, index=False, float_format="%.6f")
        print(OUT / name)


if __name__ == "__main__":
    main()

"""Where the example DAGs keep their files (cheap: read at DAG-parse time).

Everything lives under one root, ``$ASTRID_DEMO_ROOT`` (default
``$AIRFLOW_HOME/astrid_demo``), a local path or any URL ``ObjectStoragePath`` takes
(``s3://conn_id@bucket/prefix`` with the Amazon provider installed)::

    <root>/artefacts/<name>/v0001/...            the artefact store
    <root>/staging/<name>/<run>/surrogate.parquet the staged surrogate and gate results
    <root>/published/<name>/surrogate.parquet    the current release (+ releases/<id>/)
    <root>/incoming/<name>/surrogate.parquet     input of the gating-only DAG
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources

__all__ = ["DEMO_ATTACKER_MODEL", "DemoLayout", "bundled_table", "demo_layout", "demo_root"]

ENV_ROOT = "ASTRID_DEMO_ROOT"
#: What an attacker may know of a woman in the diabetes example (issue 49): her age,
#: number of pregnancies and build (BMI) are known to acquaintances; glucose (plas) and
#: insulin (insu) are lab results that must not be learned, as the class (diabetes)
#: always is. Blood pressure, skin fold and pedigree are insensitive.
DEMO_ATTACKER_MODEL = {"quasi_identifiers": ["age", "preg", "mass"],
                       "sensitive": ["plas", "insu"]}
#: Jinja expression for a run id that is safe in a file name on every store.
RUN_SLUG = "{{ run_id | replace(':', '-') | replace('+', '-') }}"


def demo_root() -> str:
    """``$ASTRID_DEMO_ROOT``, else ``$AIRFLOW_HOME/astrid_demo`` (``~/airflow`` default)."""
    root = os.environ.get(ENV_ROOT, "").strip()
    if root:
        return root.rstrip("/") if "://" in root else os.path.abspath(root)
    home = os.environ.get("AIRFLOW_HOME") or os.path.join(os.path.expanduser("~"), "airflow")
    return os.path.join(os.path.abspath(home), "astrid_demo")


def bundled_table(filename: str) -> str:
    """Path of a demo table shipped in ``astrid_airflow/data`` (e.g. ``synthetic.csv``)."""
    path = resources.files("astrid_airflow") / "data" / filename
    return os.fspath(path)


@dataclass(frozen=True)
class DemoLayout:
    """The paths of one named dataset under a demo root."""

    root: str
    name: str

    @property
    def store(self) -> str:
        return f"{self.root}/artefacts"

    @property
    def staging(self) -> str:
        """Staging directory of the current run (a template)."""
        return f"{self.root}/staging/{self.name}/{RUN_SLUG}"

    @property
    def published(self) -> str:
        return f"{self.root}/published/{self.name}/surrogate.parquet"

    @property
    def incoming(self) -> str:
        return f"{self.root}/incoming/{self.name}/surrogate.parquet"


def demo_layout(name: str, root: str | None = None) -> DemoLayout:
    """The demo layout of dataset ``name`` under ``root`` (default :func:`demo_root`)."""
    return DemoLayout(root=root or demo_root(), name=name)

"""``python -m astrid_airflow.cli``."""

from . import console

console()

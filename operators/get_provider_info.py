"""Provider metadata read by Airflow's providers manager (pure function, no imports)."""

from __future__ import annotations


def get_provider_info() -> dict:
    from astrid_airflow import __version__  # cheap: the package exports lazily

    modules = [
        "astrid_airflow.operators.learn",
        "astrid_airflow.operators.shuffle",
        "astrid_airflow.operators.gate",
        "astrid_airflow.operators.publish",
    ]
    return {
        "package-name": "astrid-airflow",
        "name": "ASTRID",
        "description": "ASTRID groupings, GoldenEye surrogate tables and a Great "
        "Expectations release gate.",
        "versions": [__version__],
        "integrations": [{"integration-name": "ASTRID", "tags": ["software"]}],
        "operators": [{"integration-name": "ASTRID", "python-modules": modules}],
    }

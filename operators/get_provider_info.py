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
        # the typed/atomic PostgreSQL path; it uses the postgres connection type, so no
        # connection type of its own
        "hooks": [{"integration-name": "ASTRID",
                   "python-modules": ["astrid_airflow.operators.hooks"]}],
        "triggers": [{"integration-name": "ASTRID",
                      "python-modules": ["astrid_airflow.operators.triggers"]}],
        "extra-links": [
            "astrid_airflow.operators.links.DataDocsLink",
            "astrid_airflow.operators.links.ReleaseReportLink",
            "astrid_airflow.operators.links.ArtefactLink",
        ],
        "config": {
            "astrid": {
                "description": "Settings of the ASTRID provider.",
                "options": {
                    "link_base_url": {
                        "description": "Where the UI's extra links (Data Docs, release "
                        "report, artefact) point: storage prefix to public base URL, as "
                        "PREFIX=URL[,PREFIX=URL] or a JSON object. Unset: the files' own "
                        "locations (file:// or the object-storage URL).",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "s3://bucket/astrid=https://files.example.com/astrid",
                        "default": None,
                    },
                },
            },
        },
    }

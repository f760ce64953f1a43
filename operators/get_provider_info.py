"""Provider metadata read by Airflow's providers manager (pure function, no imports)."""

from __future__ import annotations

from typing import Any

STORE_CONN_TYPE = "astrid"


def store_conn_fields() -> dict[str, Any]:
    """The ``astrid`` connection form (an artefact store): Airflow after 3.1 reads it from
    the provider info (``conn-fields``, ``ui-field-behaviour``), 3.1 from the hook's
    ``get_ui_field_behaviour`` (without its extra field: 3.1 builds that from WTForms,
    which only the FAB provider installs; the extra JSON carries it there)."""
    return {
        "conn-fields": {"storage_conn_id": {
            "label": "Object storage connection",
            "schema": {"type": ["string", "null"]},
            "description": "The connection that opens the store URL (aws_default, "
                           "google_cloud_default...); empty for a local directory."}},
        "ui-field-behaviour": {
            "hidden-fields": ["schema", "login", "password", "port"],
            "relabeling": {"host": "Store URL"},
            "placeholders": {"host": "s3://bucket/astrid or /srv/astrid/artefacts",
                             "extra": '{"storage_conn_id": "aws_default"}'},
        },
    }


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
        # the store hook (the astrid connection type) and the typed/atomic PostgreSQL path
        # (on the postgres connection type)
        "hooks": [{"integration-name": "ASTRID",
                   "python-modules": ["astrid_airflow.operators.hooks"]}],
        # the artefact store as a connection (form + "Test"); databases use their own
        # common.sql connection types (postgres, sqlite...)
        "connection-types": [{
            "connection-type": STORE_CONN_TYPE,
            "hook-class-name": "astrid_airflow.operators.hooks.AstridStoreHook",
            "hook-name": "ASTRID artefact store",
            **store_conn_fields(),
        }],
        "triggers": [{"integration-name": "ASTRID",
                      "python-modules": ["astrid_airflow.operators.triggers"]}],
        # No "plugins" key: Airflow loads a provider's plugins only with [core]
        # lazy_load_providers = False, and then a second copy beside the entry point's
        # ("already registered" import error). The plugin (the extra links' pages) is the
        # `airflow.plugins` entry point in pyproject.toml, loaded everywhere.
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
                        "PREFIX=URL[,PREFIX=URL] or a JSON object. Unset (or for a "
                        "location no prefix maps): the provider plugin's page of the "
                        "file, /astrid/runs/DAG/RUN/TASK/..., absolute under [api] "
                        "base_url when that is set.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "s3://bucket/astrid=https://files.example.com/astrid",
                        "default": None,
                    },
                },
            },
        },
    }

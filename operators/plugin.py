"""The provider's Airflow plugin: a run's Data Docs, release report and artefact, served
by Airflow's own API server behind Airflow's own authentication.

Registered through ``plugins`` in the provider info, so installing the wheel is all it
takes: the API server mounts the FastAPI app below at ``/astrid``. The operators' extra
links point at it by default (``astrid_airflow.operators.links``), so the buttons open
without a web server of one's own; ``[astrid] link_base_url`` still overrides them.

    GET /astrid/runs/{dag_id}/{run_id}/{task_id}/data-docs     the gate's Data Docs page
    GET /astrid/runs/{dag_id}/{run_id}/{task_id}/report/       the release report
    GET /astrid/runs/{dag_id}/{run_id}/{task_id}/report/{file} a file beside it
    GET /astrid/runs/{dag_id}/{run_id}/{task_id}/artefact      the artefact's summary
    (``?map_index=N`` for a mapped task)

Each request reads the locations the task recorded (XCom ``astrid_links``) and the file
from its store (local, or object storage through the path's connection, which the API
server must therefore reach). Airflow does not authenticate plugin apps itself (a
mounted app inherits none of the API's dependencies), so every route depends on
Airflow's ``requires_access_dag(GET, TASK_INSTANCE)``: the UI's session cookie or a
bearer token, and the auth manager's permission on the DAG. Only the recorded files, and
files inside the recorded report's directory, are served.
"""

from __future__ import annotations

import json
import mimetypes
import posixpath
from typing import Any, ClassVar

from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
from airflow.api_fastapi.core_api.security import requires_access_dag
from airflow.plugins_manager import AirflowPlugin
from fastapi import Depends, FastAPI, HTTPException
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from .plugin_paths import PLUGIN_PREFIX, plugin_path

__all__ = ["PLUGIN_PREFIX", "AstridPlugin", "app", "artefact_summary_html", "plugin_path"]

def _recorded(dag_id: str, run_id: str, task_id: str, map_index: int) -> dict[str, str]:
    """The locations the task instance recorded (XCom ``astrid_links``), or 404."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from .links import LINKS_XCOM_KEY

    with create_session() as session:
        row = session.scalars(select(XComModel).where(
            XComModel.dag_id == dag_id, XComModel.run_id == run_id,
            XComModel.task_id == task_id, XComModel.map_index == map_index,
            XComModel.key == LINKS_XCOM_KEY)).first()
        value = XComModel.deserialize_value(row) if row is not None else None
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict) or not value:
        raise HTTPException(404, f"Task {dag_id}.{task_id} of run {run_id} recorded no "
                                 "ASTRID files.")
    return {str(k): str(v) for k, v in value.items()}


def _read(location: str) -> bytes:
    from ._common import as_path

    path = as_path(location, "location")
    try:
        with path.open("rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise HTTPException(404, f"{location} no longer exists in its store.") from None


def _location(dag_id: str, run_id: str, task_id: str, map_index: int, key: str) -> str:
    location = _recorded(dag_id, run_id, task_id, map_index).get(key)
    if not location:
        raise HTTPException(404, f"Task {dag_id}.{task_id} of run {run_id} recorded no "
                                 f"{key.replace('_', ' ')}.")
    return location


def artefact_summary_html(location: str, artefact: dict[str, Any]) -> str:
    """A short HTML page on one artefact version: what was learned, on what, and how."""
    from astrid_airflow.report import text

    result = artefact.get("result") or {}
    release = artefact.get("release") or {}
    fingerprint = artefact.get("fingerprint") or {}
    groups = " ".join("{" + ", ".join(map(str, g)) + "}" for g in artefact.get("grouping", []))
    rows = [
        ("Location", location),
        ("Grouping", groups),
        ("k (groups)", result.get("k")),
        ("Target", artefact.get("target")),
        ("Classifier", json.dumps(artefact.get("classifier"))),
        ("Baseline accuracy a0", result.get("baseline_accuracy")),
        ("p_OG", result.get("p_og")),
        ("Fits", result.get("n_fits")),
        ("Search seconds", result.get("seconds")),
        ("Reference rows", fingerprint.get("rows")),
        ("Reference SHA-256", fingerprint.get("sha256")),
        ("Release status", release.get("status")),
        ("Release choice", json.dumps(release.get("chosen")) if release.get("chosen")
         else None),
        ("Reason", release.get("reason")),
        ("Created", artefact.get("created_at")),
        ("Library version", artefact.get("library_version")),
        ("Files", ", ".join(sorted(artefact.get("files") or {}))),
    ]
    body = "\n".join(f"<tr><th>{text(k)}</th><td>{text(v)}</td></tr>"
                     for k, v in rows if v not in (None, ""))
    return ("<!doctype html><html><head><meta charset='utf-8'><title>ASTRID artefact</title>"
            "<style>body{font-family:sans-serif;margin:2em}th{text-align:left;"
            "padding-right:2em;vertical-align:top}td,th{padding:.25em}</style></head>"
            f"<body><h1>ASTRID artefact</h1><table>{body}</table></body></html>")


def _inside(directory: str, relative: str) -> str:
    """``relative`` under ``directory`` (a path or URL), refusing anything that climbs out."""
    rel = posixpath.normpath(relative)
    if relative.startswith("/") or rel == ".." or rel.startswith("../"):
        raise HTTPException(404, "Not a file of this report.")
    return directory.rstrip("/") + "/" + rel


# FastAPI's own /docs and /openapi.json would be served without authentication: they
# are served below behind the same check as the pages
app = FastAPI(title="ASTRID releases", description="Data Docs, release reports and "
              "artefact summaries of ASTRID tasks, from their stores.",
              docs_url=None, redoc_url=None, openapi_url=None)
_ACCESS = [Depends(requires_access_dag("GET", DagAccessEntity.TASK_INSTANCE))]
_RUN = "/runs/{dag_id}/{run_id}/{task_id}"


@app.get("/openapi.json", dependencies=_ACCESS, include_in_schema=False)
def openapi_schema() -> Response:
    return JSONResponse(app.openapi())


@app.get("/docs", dependencies=_ACCESS, include_in_schema=False)
def api_docs() -> Response:
    # a relative URL: the page is mounted below the API server's plugin prefix
    return get_swagger_ui_html(openapi_url="openapi.json", title="ASTRID releases")


@app.get(_RUN + "/data-docs", dependencies=_ACCESS, response_class=HTMLResponse)
def data_docs(dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> Response:
    location = _location(dag_id, run_id, task_id, map_index, "data_docs")
    return HTMLResponse(_read(location))


@app.get(_RUN + "/report", dependencies=_ACCESS, include_in_schema=False)
def report_root(dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> Response:
    # relative links in the report resolve against the directory
    query = f"?map_index={map_index}" if map_index >= 0 else ""
    return RedirectResponse(f"report/{query}", status_code=307)


@app.get(_RUN + "/report/{file:path}", dependencies=_ACCESS)
def report(dag_id: str, run_id: str, task_id: str, file: str = "",
           map_index: int = -1) -> Response:
    location = _location(dag_id, run_id, task_id, map_index, "report")
    target = _inside(posixpath.dirname(location), file) if file else location
    media = mimetypes.guess_type(posixpath.basename(target))[0]
    return Response(_read(target), media_type=media or "application/octet-stream")


@app.get(_RUN + "/artefact", dependencies=_ACCESS, response_class=HTMLResponse)
def artefact(dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> Response:
    location = _location(dag_id, run_id, task_id, map_index, "artefact")
    try:
        document = json.loads(_read(location))
    except ValueError:
        raise HTTPException(502, f"{location} is not an artefact (invalid JSON).") from None
    return HTMLResponse(artefact_summary_html(location, document))


class AstridPlugin(AirflowPlugin):
    """Mounts :data:`app` on the API server at ``/astrid``."""

    name = "astrid"
    fastapi_apps: ClassVar[list[dict[str, Any]]] = [
        {"app": app, "url_prefix": PLUGIN_PREFIX, "name": "ASTRID releases"}]

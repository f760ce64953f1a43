"""The provider plugin: the extra links open its pages, behind Airflow's authentication.

A tiny DAG whose task records three files as the ASTRID operators do (``push_links``) and
carries their three extra links runs with ``dag.test()``; the task instance's links (read
as the REST API reads them: the serialized task, the run's XComs) must be the plugin's
URLs. Airflow's own API app (``create_app``, the plugin mounted by Airflow's plugin
manager, the simple auth manager) then serves them: 401 without credentials, the
recorded bytes with a token, nothing outside the recorded report's directory.
"""

from __future__ import annotations

import json
import types
from urllib.parse import urlsplit

import pytest

pytestmark = [pytest.mark.airflow,
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]
DAG_ID, TASK_ID = "astrid_plugin_check", "gate"
LINKS = ("Data Docs", "Release report", "Artefact")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("release")
    report = root / "surrogate.report"
    report.mkdir()
    (root / "surrogate.validation.html").write_text("<html><body>validation page</body></html>")
    (report / "index.html").write_text("<html><img src='fig.svg'>report</html>")
    (report / "fig.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    (root / "secret.txt").write_text("not part of the report")
    artefact = root / "store" / "syn" / "v0001" / "artefact.json"
    artefact.parent.mkdir(parents=True)
    artefact.write_text(json.dumps({
        "grouping": [["a1", "a2"], ["a3"]], "target": "class", "classifier": {"preset": "nb"},
        "result": {"k": 2, "baseline_accuracy": 0.9, "n_fits": 451},
        "fingerprint": {"rows": 1000, "sha256": "ab" * 32}, "created_at": "2026-01-01",
        "files": {"suite.json": "00"}, "release": {"status": "remedied"}}))
    return types.SimpleNamespace(root=root, data_docs=root / "surrogate.validation.html",
                                 report=report / "index.html", artefact=artefact)


DAG_FILE = """
from airflow.sdk import DAG, BaseOperator
from astrid_airflow.operators.links import (ArtefactLink, DataDocsLink, ReleaseReportLink,
                                            push_links)


class Recorder(BaseOperator):
    operator_extra_links = (DataDocsLink(), ReleaseReportLink(), ArtefactLink())

    def execute(self, context):
        push_links(self, context, **FILES)


with DAG({dag_id!r}, schedule=None) as dag:
    Recorder(task_id={task_id!r})
"""


@pytest.fixture(scope="module")
def run(airflow_db, files, tmp_path_factory):
    """One run of a DAG file (Airflow 3.3's ``dag.test()`` runs only bundled DAGs)."""
    from airflow_compat import dagbag_class

    folder = tmp_path_factory.mktemp("dags")
    recorded = {"data_docs": str(files.data_docs), "report": str(files.report),
                "artefact": str(files.artefact)}
    (folder / "plugin_check.py").write_text(
        f"FILES = {recorded!r}\n" + DAG_FILE.format(dag_id=DAG_ID, task_id=TASK_ID))
    from airflow import settings

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AIRFLOW__CORE__DAGS_FOLDER", str(folder))
        mp.setattr(settings, "DAGS_FOLDER", str(folder))  # the dags-folder bundle's path
        bag = dagbag_class()(dag_folder=str(folder))
        assert bag.import_errors == {}
        dag = bag.dags[DAG_ID]
        dr = dag.test()
    assert str(dr.state) == "success"
    return types.SimpleNamespace(dag=dag, dr=dr)


@pytest.fixture(scope="module")
def client(run, tmp_path_factory):
    """Airflow's API app with its plugins, the simple auth manager (no all-admins)."""
    from fastapi.testclient import TestClient

    home = tmp_path_factory.mktemp("auth")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS", "False")
        mp.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS", "reviewer:viewer")
        mp.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE",
                  str(home / "passwords.json"))
        from airflow.api_fastapi.app import create_app, get_auth_manager, purge_cached_app

        purge_cached_app()
        app = create_app("core")
        manager = get_auth_manager()
        user = manager.deserialize_user({"sub": "reviewer", "role": "viewer"})
        token = manager.generate_jwt(user)
        with TestClient(app) as http:
            yield types.SimpleNamespace(http=http, token=token)
        purge_cached_app()


def links_of(run) -> dict[str, str]:
    """The task instance's extra links as the REST API reads them (serialized task)."""
    from airflow_compat import dag_serialization

    ser = dag_serialization()
    dag = ser.deserialize_dag(ser.serialize_dag(run.dag))
    task, ti = dag.get_task(TASK_ID), run.dr.get_task_instance(TASK_ID)
    return {name: link.get_link(task, ti_key=ti.key)
            for name, link in task.operator_extra_link_dict.items()}


def test_the_task_instances_extra_links_are_the_plugins_pages(run):
    from astrid_airflow.operators.plugin_paths import plugin_path

    links = links_of(run)
    assert set(links) == set(LINKS)
    run_id = run.dr.run_id
    assert links == {
        "Data Docs": plugin_path(DAG_ID, run_id, TASK_ID, "data_docs"),
        "Release report": plugin_path(DAG_ID, run_id, TASK_ID, "report"),
        "Artefact": plugin_path(DAG_ID, run_id, TASK_ID, "artefact")}
    assert links["Data Docs"].startswith("/astrid/runs/astrid_plugin_check/")


def test_the_pages_need_airflows_authentication(run, client):
    for url in links_of(run).values():
        assert client.http.get(url).status_code == 401, url
        assert client.http.get(url, headers={"Authorization": "Bearer forged"}
                               ).status_code in (401, 403), url


def test_the_pages_serve_the_recorded_files(run, client, files):
    auth = {"Authorization": f"Bearer {client.token}"}
    links = links_of(run)
    docs = client.http.get(links["Data Docs"], headers=auth)
    assert docs.status_code == 200 and docs.content == files.data_docs.read_bytes()
    assert docs.headers["content-type"].startswith("text/html")
    report = client.http.get(links["Release report"], headers=auth)
    assert report.status_code == 200 and report.content == files.report.read_bytes()
    # the report's relative links resolve to files beside it, and only there
    base = urlsplit(links["Release report"]).path
    figure = client.http.get(base + "fig.svg", headers=auth)
    assert figure.status_code == 200 and figure.headers["content-type"] == "image/svg+xml"
    for escape in ("../secret.txt", "..%2Fsecret.txt", "%2E%2E/secret.txt"):
        assert client.http.get(base + escape, headers=auth).status_code == 404, escape
    summary = client.http.get(links["Artefact"], headers=auth)
    assert summary.status_code == 200
    assert "{a1, a2} {a3}" in summary.text and str(files.artefact) in summary.text


def test_a_task_that_recorded_nothing_is_a_404(run, client):
    auth = {"Authorization": f"Bearer {client.token}"}
    missing = f"/astrid/runs/{DAG_ID}/{run.dr.run_id}/other/data-docs"
    assert client.http.get(missing, headers=auth).status_code == 404


def test_the_api_docs_need_the_same_authentication_as_the_pages(client):
    # FastAPI served /docs and /openapi.json to anyone; they list every route
    for url in ("/astrid/docs", "/astrid/openapi.json"):
        assert client.http.get(url).status_code == 401, url
        assert client.http.get(url, headers={"Authorization": "Bearer forged"}
                               ).status_code in (401, 403), url
    auth = {"Authorization": f"Bearer {client.token}"}
    schema = client.http.get("/astrid/openapi.json", headers=auth)
    assert schema.status_code == 200
    assert any(path.endswith("/data-docs") for path in schema.json()["paths"])
    page = client.http.get("/astrid/docs", headers=auth)
    assert page.status_code == 200 and "openapi.json" in page.text
    for hidden in ("/astrid/redoc",):
        assert client.http.get(hidden, headers=auth).status_code == 404

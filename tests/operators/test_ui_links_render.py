"""A finished run's task page in Airflow's own UI shows the ASTRID extra links, and they open.

One publishing run with ``dag.test()`` (its XComs, links included, land in the test
session's SQLite metadata DB), a real ``airflow api-server`` on that DB (started before the
run, so that its start overlaps the run), and headless Chromium on the gate task's Details
tab of the React UI: the rendered DOM must carry the three link buttons ("Data Docs",
"Release report", "Artefact"), pointing at the provider's plugin on that API server, with
no link setting at all (only ``[api] base_url``, which a deployment sets anyway). Chromium
then opens the Data Docs button's URL: the plugin serves the gate's validation page from
the store. The screenshots are saved under ``test-artifacts/`` (and the plugin page's
under ``docs/images/`` for the docs).

The simple auth manager runs with ``all_admins`` so the browser needs no login (local API
server, test DB only); that the plugin's pages refuse a request without Airflow
credentials is tested in ``tests/operators/test_plugin.py``.

Under CI (``CI=true``) a missing Chromium fails the test instead of skipping it.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import types
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from conftest import REPO

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)
ARTIFACTS = REPO / "test-artifacts"
PUBLISH = "astrid_publish_diabetes"
LINKS = ("Data Docs", "Release report", "Artefact")
DOCS_PNG = REPO / "docs" / "images" / "plugin_data_docs.png"

# a whole DAG run, a real API server and Chromium (the shared learned store: the first
# module to ask builds it)
pytestmark = [pytest.mark.airflow, pytest.mark.e2e]


@pytest.fixture(scope="module")
def chromium() -> str:
    if CHROMIUM is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("Chromium is required under CI (apt-get install chromium)")
        pytest.skip("no Chromium on this machine")
    return CHROMIUM


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def base_url() -> str:
    """The API server's URL, known to the run's workers as ``[api] base_url``."""
    return f"http://127.0.0.1:{_free_port()}"


@pytest.fixture(scope="module")
def api_process(airflow_db, tmp_path_factory, base_url):
    """``airflow api-server`` on the test DB, started before the run it will show (its
    start overlaps the run: it reads the run from the DB when asked); stopped (its
    process group) afterwards. Yields the process and its log."""
    port = int(base_url.rsplit(":", 1)[1])
    log = tmp_path_factory.mktemp("api") / "api-server.log"
    from airflow import settings

    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           # the DB this process writes the run into: after the whole suite the server,
           # left to derive it, once saw an unmigrated DB and once one without the run
           "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": settings.SQL_ALCHEMY_CONN,
           "AIRFLOW__API__HOST": "127.0.0.1", "AIRFLOW__API__PORT": str(port),
           "AIRFLOW__API__BASE_URL": base_url,
           "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True"}
    with log.open("wb") as out:
        proc = subprocess.Popen([str(bin_dir / "airflow"), "api-server", "--port", str(port)],
                                env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        yield proc, log
    finally:
        if proc.poll() is None:  # it may have exited already (then the failure says why)
            os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()


@pytest.fixture(scope="module")
def finished_run(api_process, airflow_db, tmp_path_factory, base_url):
    """A successful publishing run recorded in the session's metadata DB.

    The demo root starts with the DAG's learned store (built once per test run): the
    learn task keeps that version, the run chooses no release again (the links are
    this module's subject; tests/dags/test_dags.py runs the DAG's real learn)."""
    from airflow_compat import dagbag_class
    from shared_artefacts import copy_into, diabetes_store

    root = tmp_path_factory.mktemp("astrid_demo")
    copy_into(diabetes_store(tmp_path_factory, signing_key=None), root / "artefacts")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ASTRID_DEMO_ROOT", str(root))
        mp.delenv("AIRFLOW__ASTRID__LINK_BASE_URL", raising=False)
        # links resolve when the task ends, in the worker: it builds them on base_url
        mp.setenv("AIRFLOW__API__BASE_URL", base_url)
        bag = dagbag_class()(dag_folder=str(REPO / "dags"))
        assert bag.import_errors == {}
        dr = bag.dags[PUBLISH].test(run_conf={"seed": 1})
    assert str(dr.state) == "success"
    return types.SimpleNamespace(dr=dr, root=root)


@pytest.fixture(scope="module")
def api_server(api_process, finished_run, base_url):
    """The API server's URL, once it answers (after the run)."""
    proc, log = api_process
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{base_url}/api/v2/monitor/health", timeout=5):
                return base_url
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"api-server did not start:\n{log.read_text()[-3000:]}")
            time.sleep(1)


class _Page:
    """Headless Chromium driven over the DevTools protocol: load a URL, wait for a condition.

    A React page fetches after load, so a fixed wait (``--virtual-time-budget``) is either
    long or flaky: under CI's load Chromium twice outran a 120 s stop with it. Here the test
    polls the DOM in real time until what it checks is there (or a deadline), then reads it.
    """

    def __init__(self, binary: str, profile: str):
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
             "--remote-debugging-port=0", "--window-size=1400,1000", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            self.ws = self._connect()
        except BaseException:
            self.proc.kill()
            self.proc.wait()
            raise
        # keep reading its stderr: a full pipe would block Chromium mid-test
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()
        self._id = 0

    def _connect(self):
        from websockets.sync.client import connect

        for line in self.proc.stderr:  # Chromium announces its endpoint on stderr
            if "DevTools listening on " in line:
                port = urllib.parse.urlsplit(line.split("listening on ", 1)[1].strip()).port
                break
        else:
            raise AssertionError(f"Chromium exited ({self.proc.wait()}) without DevTools")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as r:
            page = next(t for t in json.loads(r.read()) if t["type"] == "page")
        return connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=30)

    def call(self, method: str, **params):
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:  # events arrive in between; the answer carries our id
            answer = json.loads(self.ws.recv(timeout=120))
            if answer.get("id") == self._id:
                assert "error" not in answer, answer
                return answer["result"]

    def evaluate(self, expression: str):
        done = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return done["result"].get("value")

    def load(self, url: str, until: str, deadline: float = 240.0) -> str:
        """Navigate, wait until the JS expression ``until`` is true, return the DOM."""
        self.call("Page.navigate", url=url)
        stop = time.monotonic() + deadline
        while not self.evaluate(until):
            if time.monotonic() > stop:
                raise AssertionError(f"{url}: {until} still false after {deadline:.0f} s; "
                                     f"DOM: {self.dom()[:3000]}")
            time.sleep(0.5)
        return self.dom()

    def dom(self) -> str:
        return self.evaluate("document.documentElement.outerHTML") or ""

    def screenshot(self, png: Path) -> None:
        png.write_bytes(base64.b64decode(self.call("Page.captureScreenshot")["data"]))

    def close(self) -> None:
        self.ws.close()
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def browser(chromium, tmp_path):
    tab = _Page(chromium, str(tmp_path / "profile"))
    yield tab
    tab.close()


def _shows(*texts: str) -> str:
    """JS: every text is some link's text, and the page has finished loading."""
    wanted = json.dumps(list(texts))
    return (f"document.readyState === 'complete' && {wanted}.every(t => "
            "[...document.querySelectorAll('a')].some(a => a.textContent.trim() === t))")


def test_task_page_shows_the_extra_links(browser, api_server, finished_run):
    run_id = urllib.parse.quote(finished_run.dr.run_id, safe="")
    # the task instance's Details tab renders the extra links (as buttons: <a>)
    url = f"{api_server}/dags/{PUBLISH}/runs/{run_id}/tasks/gate/details"
    # what the UI's query reads (the all-admins middleware authorises the request)
    rest = f"{api_server}/api/v2/dags/{PUBLISH}/dagRuns/{run_id}/taskInstances/gate/links"
    try:
        with urllib.request.urlopen(rest, timeout=30) as answer:
            served = json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        served = {"status": exc.code, "body": exc.read().decode(errors="replace")[:2000]}
    (ARTIFACTS / "ui_gate_task_links.json").parent.mkdir(exist_ok=True)
    (ARTIFACTS / "ui_gate_task_links.json").write_text(json.dumps(served, indent=2))
    links = served.get("extra_links", {})
    assert set(links) == set(LINKS), served
    page = f"{api_server}/astrid/runs/{PUBLISH}/{run_id}/gate/"
    assert links == {"Data Docs": page + "data-docs", "Release report": page + "report/",
                     "Artefact": page + "artefact"}, served
    dom = browser.load(url, until=_shows(*LINKS))
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "ui_gate_task_links.html").write_text(dom)
    anchors = dict((text, href.replace("&amp;", "&")) for href, text in
                   re.findall(r'<a\b[^>]*\bhref="([^"]+)"[^>]*>([^<]+)</a>', dom))
    missing = [name for name in LINKS if name not in anchors]
    assert not missing, (missing, anchors)
    assert {name: anchors[name] for name in LINKS} == links, anchors
    png = ARTIFACTS / "ui_gate_task_links.png"
    png.unlink(missing_ok=True)
    browser.screenshot(png)
    assert png.is_file() and png.stat().st_size > 10_000  # a rendered page, not a blank

    # the buttons open: the plugin serves the gate's pages from the store
    recorded = Path(finished_run.root)
    docs_dom = browser.load(anchors["Data Docs"], until="document.readyState === 'complete' && "
                         "document.documentElement.outerHTML.includes('expect_')")
    (ARTIFACTS / "plugin_data_docs.html").write_text(docs_dom)
    validation = next(p for p in recorded.rglob("surrogate.validation.html")
                      if "staging" in p.parts).read_text()
    title = re.search(r"<title>(.*?)</title>", validation, re.S).group(1).strip()
    assert title and title in docs_dom, title
    assert "expect_" in docs_dom  # the expectations the gate ran
    DOCS_PNG.parent.mkdir(exist_ok=True)
    DOCS_PNG.unlink(missing_ok=True)
    browser.screenshot(DOCS_PNG)
    assert DOCS_PNG.is_file() and DOCS_PNG.stat().st_size > 10_000
    for name in ("Release report", "Artefact"):
        with urllib.request.urlopen(anchors[name], timeout=30) as answer:
            assert answer.status == 200 and b"<html" in answer.read(2000).lower(), name

"""Drive a running ``airflow standalone`` through its REST API (used by run_standalone.sh).

Waits until the API server and every component are healthy, gets a token from
``/auth/token`` (the generated admin password is read from AIRFLOW_HOME), waits for the
DAGs to be parsed, unpauses the consumer and the publishing DAG, triggers one run of
the publishing DAG, waits for it to finish, then waits for the consumer run the release
Asset event triggered. Exit status 0 only if both succeeded. Standard library only.

The triggered run gets ``{"seed": SEED}`` (default 1, the seed of the first run in
``tests/dags/test_dags.py``), so its figures are reproducible (docs/airflow.md). The run the
scheduler creates when the DAG is unpaused keeps its derived seed and is not checked.

Usage: ``python scripts/standalone_trigger.py BASE_URL [--timeout SECONDS] [--seed N]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

PUBLISH = "astrid_publish_diabetes"
CONSUME = "astrid_consume_diabetes"


class Api:
    def __init__(self, base: str):
        self.base = base.rstrip("/")
        self.token: str | None = None

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, object]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                text = resp.read().decode()
                return resp.status, (json.loads(text) if text else None)
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(errors="replace")
        except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
            return 0, str(exc)


def log(message: str) -> None:
    print(f"standalone: {message}", flush=True)


def wait_for(what: str, check, timeout: float, every: float = 2.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        ok, last = check()
        if ok:
            return last
        time.sleep(every)
    raise SystemExit(f"standalone: timed out after {timeout:.0f} s waiting for {what} "
                     f"(last answer: {str(last)[:300]})")


def admin_password() -> str:
    home = Path(os.environ["AIRFLOW_HOME"])
    path = home / "simple_auth_manager_passwords.json.generated"
    return json.loads(path.read_text())["admin"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--seed", type=int, default=1,
                        help="seed of the triggered run's shuffle and gate")
    args = parser.parse_args()
    api = Api(args.base_url)
    t0 = time.monotonic()

    def healthy():
        status, body = api.call("GET", "/api/v2/monitor/health")
        if status != 200 or not isinstance(body, dict):
            return False, body
        states = {k: (v or {}).get("status") for k, v in body.items()}
        return all(s == "healthy" for s in states.values()), states

    wait_for("a healthy standalone", healthy, 180)
    log(f"healthy after {time.monotonic() - t0:.0f} s")

    password = wait_for("the generated admin password",
                        lambda: (True, admin_password()) if _password_ready() else (False, None),
                        60)
    status, body = api.call("POST", "/auth/token", {"username": "admin", "password": password})
    if status not in (200, 201) or not isinstance(body, dict):
        raise SystemExit(f"standalone: /auth/token answered {status}: {body}")
    api.token = body["access_token"]

    for dag_id in (CONSUME, PUBLISH):
        wait_for(f"DAG {dag_id} to be parsed",
                 lambda d=dag_id: (api.call("GET", f"/api/v2/dags/{d}")[0] == 200, d), 180)
        status, body = api.call("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})
        if status != 200:
            raise SystemExit(f"standalone: unpausing {dag_id} answered {status}: {body}")
    log("DAGs parsed and unpaused")

    status, body = api.call("POST", f"/api/v2/dags/{PUBLISH}/dagRuns",
                            {"logical_date": None, "conf": {"seed": args.seed}})
    if status not in (200, 201) or not isinstance(body, dict):
        raise SystemExit(f"standalone: triggering {PUBLISH} answered {status}: {body}")
    run_id = body["dag_run_id"]
    log(f"triggered {PUBLISH} run {run_id}")

    def finished(dag_id: str, rid: str):
        _, body = api.call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{rid}")
        state = body.get("state") if isinstance(body, dict) else None
        return state in ("success", "failed"), state

    state = wait_for(f"run {run_id}", lambda: finished(PUBLISH, run_id), args.timeout, 3)
    log(f"{PUBLISH} run {run_id}: {state} ({time.monotonic() - t0:.0f} s since start)")
    if state != "success":
        return 1

    # the task pages' extra links, as the UI reads them
    for task_id, name in (("learn_if_changed", "Artefact"), ("gate", "Data Docs"),
                          ("gate", "Release report")):
        status, body = api.call(
            "GET", f"/api/v2/dags/{PUBLISH}/dagRuns/{run_id}/taskInstances/{task_id}/links")
        links = body.get("extra_links", {}) if isinstance(body, dict) else {}
        if status != 200 or not links.get(name):
            raise SystemExit(f"standalone: no {name!r} link on {task_id} ({status}: {body})")
        log(f"{task_id} link {name}: {links[name]}")

    def consumer_done():
        _, body = api.call("GET", f"/api/v2/dags/{CONSUME}/dagRuns?run_type=asset_triggered")
        runs = body.get("dag_runs", []) if isinstance(body, dict) else []
        done = [r for r in runs if r.get("state") in ("success", "failed")]
        return bool(done), done

    done = wait_for(f"an asset-triggered {CONSUME} run", consumer_done, 180, 3)
    states = sorted({r["state"] for r in done})
    log(f"{CONSUME} (triggered by the release Asset): {', '.join(states)}")
    return 0 if states == ["success"] else 1


def _password_ready() -> bool:
    try:
        admin_password()
    except (OSError, KeyError, ValueError):
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())

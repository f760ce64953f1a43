#!/usr/bin/env bash
# `make demo`: run the publishing DAG end to end on a fresh, throw-away Airflow.
#
# A temporary AIRFLOW_HOME with the embedded default (SQLite metadata DB), `airflow db
# migrate`, then `airflow dags test astrid_publish_diabetes` (no scheduler or webserver
# needed), then a summary of where the artefact, the surrogate, the validation result and
# the Data Docs are, with the key metrics. Nothing outside the temporary directory is
# touched; it is kept so the files can be opened afterwards.
#
# Environment: VENV (default .venv), ASTRID_DEMO_HOME (default: a new temp directory),
# DAGS_TEST_CONF (JSON conf for the run, e.g. '{"n_search": 100, "n_test": 250}'; default
# '{"seed": 1}': shuffle and gate seeds fixed so the printed figures are reproducible; with
# '{"seed": null}' they are derived from the run, see docs/airflow.md).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$REPO/.venv}"
case "$VENV" in /*) ;; *) VENV="$REPO/$VENV" ;; esac
if [ ! -x "$VENV/bin/airflow" ]; then
    echo "demo: no Airflow in $VENV (run 'make install' first)" >&2
    exit 2
fi
export PATH="$VENV/bin:$PATH"

WORK="${ASTRID_DEMO_HOME:-$(mktemp -d "${TMPDIR:-/tmp}/astrid-demo.XXXXXX")}"
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"
export AIRFLOW_HOME="$WORK/airflow"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__DAGS_FOLDER="$REPO/dags"
export ASTRID_DEMO_ROOT="$WORK/astrid_demo"
DAG_ID=astrid_publish_diabetes
LOG="$WORK/dags-test.log"

echo "demo: AIRFLOW_HOME=$AIRFLOW_HOME (SQLite), outputs under $ASTRID_DEMO_ROOT"
started=$(date +%s)
airflow db migrate >"$WORK/db-migrate.log" 2>&1 || {
    echo "demo: 'airflow db migrate' failed; see $WORK/db-migrate.log" >&2
    tail -n 20 "$WORK/db-migrate.log" >&2
    exit 1
}
echo "demo: airflow dags test $DAG_ID (log: $LOG)"
default_conf='{"seed": 1}'
conf=(--conf "${DAGS_TEST_CONF:-$default_conf}")
status=0
airflow dags test "${conf[@]}" "$DAG_ID" >"$LOG" 2>&1 || status=$?
# `dags test` exits 0 even when a task failed: read the final state from the log
if [ "$status" -ne 0 ] || ! grep -q "state=success" <(grep "DagRun Finished" "$LOG"); then
    echo "demo: the DAG run did not succeed; the failing task's message:" >&2
    grep -E "AirflowFailException|Error|FAILED|  - expect_" "$LOG" | tail -n 20 >&2 || true
    echo "demo: full log: $LOG" >&2
    exit 1
fi
echo "demo: DAG run succeeded in $(( $(date +%s) - started )) s"
python "$REPO/scripts/demo_summary.py" "$ASTRID_DEMO_ROOT" diabetes
echo
echo "Open the Data Docs page above in a browser; run 'scripts/run_standalone.sh' to see"
echo "the same DAGs in the Airflow UI (docs/airflow.md)."

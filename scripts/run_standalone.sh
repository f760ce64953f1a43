#!/usr/bin/env bash
# Run the example DAGs under a real `airflow standalone` (scheduler, dag-processor,
# triggerer, API server + UI) on 127.0.0.1, trigger the publishing DAG through the REST
# API, wait until it and the Asset-triggered consumer succeed, then stop everything this
# script started (the whole process group).
#
# Environment:
#   VENV                     virtualenv with astrid-airflow installed (default .venv)
#   ASTRID_STANDALONE_HOME   work directory (default: a new temp directory, kept)
#   ASTRID_STANDALONE_PORT   API/UI port (default 18080)
#   KEEP_RUNNING=1           leave Airflow running after the run (stop with Ctrl-C)
#   ASTRID_STANDALONE_DB     metadata database as a SQLAlchemy URL (e.g. PostgreSQL, with
#                            the LocalExecutor); it is RESET first. Default: SQLite in
#                            the work directory
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$REPO/.venv}"
case "$VENV" in /*) ;; *) VENV="$REPO/$VENV" ;; esac
if [ ! -x "$VENV/bin/airflow" ]; then
    echo "standalone: no Airflow in $VENV (run 'make install' first)" >&2
    exit 2
fi
PORT="${ASTRID_STANDALONE_PORT:-18080}"
WORK="${ASTRID_STANDALONE_HOME:-$(mktemp -d "${TMPDIR:-/tmp}/astrid-standalone.XXXXXX")}"
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"

# standalone starts its components as `airflow <component>` found on PATH
export PATH="$VENV/bin:$PATH"
export AIRFLOW_HOME="$WORK/airflow"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__DAGS_FOLDER="$REPO/dags"
export AIRFLOW__API__HOST=127.0.0.1
export AIRFLOW__API__PORT="$PORT"
# workers call the Execution API here; it must follow the port
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="http://127.0.0.1:$PORT/execution/"
export AIRFLOW__CORE__PARALLELISM=4           # default 32 worker processes on 2 cores
export AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL=5
export ASTRID_DEMO_ROOT="$WORK/astrid_demo"
LOG="$WORK/standalone.log"

if python - "$PORT" <<'EOF'
import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(0)
sys.exit(1)
EOF
then
    echo "standalone: port $PORT is in use; set ASTRID_STANDALONE_PORT" >&2
    exit 2
fi

echo "standalone: AIRFLOW_HOME=$AIRFLOW_HOME, UI http://127.0.0.1:$PORT, log $LOG"
if [ -n "${ASTRID_STANDALONE_DB:-}" ]; then
    export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="$ASTRID_STANDALONE_DB"
    export AIRFLOW__CORE__EXECUTOR=LocalExecutor
    echo "standalone: metadata database ${ASTRID_STANDALONE_DB%%://*}://… (reset), LocalExecutor"
    airflow db reset --yes >"$WORK/db-migrate.log" 2>&1
else
    airflow db migrate >"$WORK/db-migrate.log" 2>&1
fi

# A new session (setsid) so that the whole tree can be stopped with one signal to its
# process group: standalone itself only stops its children on Ctrl-C.
setsid airflow standalone >"$LOG" 2>&1 </dev/null &
PGID=$!

stop() {
    if kill -0 -- "-$PGID" 2>/dev/null; then
        echo "standalone: stopping process group $PGID"
        kill -TERM -- "-$PGID" 2>/dev/null || true
        for _ in $(seq 1 30); do
            kill -0 -- "-$PGID" 2>/dev/null || break
            sleep 1
        done
        if kill -0 -- "-$PGID" 2>/dev/null; then
            kill -KILL -- "-$PGID" 2>/dev/null || true  # idle workers may ignore SIGTERM
        fi
    fi
}
trap stop EXIT
trap 'exit 130' INT TERM

status=0
python "$REPO/scripts/standalone_trigger.py" "http://127.0.0.1:$PORT" || status=$?
if [ "$status" -eq 0 ]; then
    python "$REPO/scripts/demo_summary.py" "$ASTRID_DEMO_ROOT" diabetes || status=$?
else
    echo "standalone: the run did not succeed; last lines of $LOG:" >&2
    tail -n 30 "$LOG" >&2
fi
if [ "${KEEP_RUNNING:-0}" = "1" ] && [ "$status" -eq 0 ]; then
    pw="$(python -c 'import json,sys; print(json.load(open(sys.argv[1]))["admin"])' \
        "$AIRFLOW_HOME/simple_auth_manager_passwords.json.generated")"
    echo "standalone: UI at http://127.0.0.1:$PORT (user admin, password $pw); Ctrl-C stops it"
    wait "$PGID" || true
fi
exit "$status"

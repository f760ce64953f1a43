#!/usr/bin/env bash
# CI: the publishing DAG once under a real scheduler, not only `dags test`.
#
# `airflow standalone` (scheduler with the LocalExecutor, dag-processor, triggerer, API
# server) with the PostgreSQL server of scripts/ci_postgres.sh as its metadata database
# (database `astrid_airflow`, reset first); scripts/run_standalone.sh triggers the run
# through the REST API, waits for it and the Asset-triggered consumer, checks the task
# extra links and stops everything it started. Prints how long each step took.
#
#   source scripts/ci_postgres.sh start && bash scripts/ci_scheduler.sh
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
state="${ASTRID_PG_STATE:-/tmp/astrid-ci-postgres-$(id -u)}"
url="${ASTRID_TEST_POSTGRES_URL:-$(cat "$state/url" 2>/dev/null || true)}"
if [ -z "$url" ]; then
    echo "ci_scheduler: no PostgreSQL server (source scripts/ci_postgres.sh start)" >&2
    exit 2
fi
# a server that stopped during the tests is started again (and its log printed)
if [ -f "$state/url" ]; then
    bash "$REPO/scripts/ci_postgres.sh" revive || exit 1
fi
# same server and role as the tests, its own database; psycopg2 is Airflow's driver
meta="postgresql+psycopg2://${url#postgresql://}"
meta="${meta%/*}/astrid_airflow"
started=$(date +%s)
ASTRID_STANDALONE_DB="$meta" bash "$REPO/scripts/run_standalone.sh"
echo "ci_scheduler: publishing DAG under the scheduler (LocalExecutor, PostgreSQL):" \
     "passed in $(( $(date +%s) - started )) s"

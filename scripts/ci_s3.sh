#!/usr/bin/env bash
# A throw-away S3-compatible server on loopback for the tests marked `s3`.
#
#   source scripts/ci_s3.sh start   # start moto's server, create the bucket, export the URL
#   scripts/ci_s3.sh stop           # stop the server, remove its state directory
#   scripts/ci_s3.sh status         # print the endpoint if the server is up
#
# The server is moto's (`moto_server`, from the `test` extra: moto[server]), in memory,
# on 127.0.0.1 and a free port. It implements S3's conditional writes (If-None-Match,
# If-Match), which the publish protocol uses on object stores. `start` creates the bucket
# `astrid-test` and exports
#
#   ASTRID_TEST_S3_ENDPOINT=http://127.0.0.1:<port>
#
# also written to $ASTRID_S3_STATE/endpoint (default /tmp/astrid-ci-s3-<uid>), where the
# tests look when the variable is not set. Credentials are moto's: any key and secret.
# Sourcing keeps the caller's shell options.
#
# In CI:   source scripts/ci_s3.sh start
#          trap 'scripts/ci_s3.sh stop' EXIT
#          make test

_astrid_s3_state="${ASTRID_S3_STATE:-/tmp/astrid-ci-s3-$(id -u)}"
_astrid_s3_bucket="astrid-test"

_astrid_s3_log() { echo "ci_s3: $*" >&2; }

_astrid_s3_python() {
    local venv="${VENV:-.venv}"
    if [ -x "$venv/bin/python" ]; then echo "$venv/bin/python"; else command -v python3; fi
}

_astrid_s3_alive() {
    [ -f "$_astrid_s3_state/pid" ] && kill -0 "$(cat "$_astrid_s3_state/pid")" 2>/dev/null
}

_astrid_s3_start() {
    local py port endpoint try
    if _astrid_s3_alive && [ -f "$_astrid_s3_state/endpoint" ]; then
        export ASTRID_TEST_S3_ENDPOINT="$(cat "$_astrid_s3_state/endpoint")"
        _astrid_s3_log "already running: $ASTRID_TEST_S3_ENDPOINT"
        return 0
    fi
    py="$(_astrid_s3_python)"
    "$py" -c "import moto.server" 2>/dev/null \
        || { _astrid_s3_log "moto[server] is not installed in $py (pip install -e '.[test]')"; return 1; }
    rm -rf "$_astrid_s3_state"
    mkdir -p "$_astrid_s3_state"
    port="${ASTRID_S3_PORT:-$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
    endpoint="http://127.0.0.1:$port"
    # setsid: its own session, so the caller's job control never signals it
    setsid "$py" -m moto.server -H 127.0.0.1 -p "$port" \
        >"$_astrid_s3_state/server.log" 2>&1 </dev/null &
    echo $! >"$_astrid_s3_state/pid"
    for try in $(seq 1 60); do
        if "$py" - "$endpoint" "$_astrid_s3_bucket" >/dev/null 2>&1 <<'EOF'
import sys, boto3
client = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                      aws_access_key_id="astrid", aws_secret_access_key="astrid")
client.create_bucket(Bucket=sys.argv[2])
EOF
        then
            echo "$endpoint" >"$_astrid_s3_state/endpoint"
            export ASTRID_TEST_S3_ENDPOINT="$endpoint"
            _astrid_s3_log "moto S3 server up: $endpoint (bucket $_astrid_s3_bucket)"
            return 0
        fi
        _astrid_s3_alive || break
        sleep 0.5
    done
    _astrid_s3_log "server did not start:"
    tail -20 "$_astrid_s3_state/server.log" >&2 2>/dev/null || true
    return 1
}

_astrid_s3_stop() {
    if _astrid_s3_alive; then
        kill "$(cat "$_astrid_s3_state/pid")" 2>/dev/null || true
        _astrid_s3_log "stopped"
    fi
    rm -rf "$_astrid_s3_state"
}

_astrid_s3_main() {
    case "${1:-}" in
        start) _astrid_s3_start ;;
        stop) _astrid_s3_stop ;;
        status)
            if _astrid_s3_alive && [ -f "$_astrid_s3_state/endpoint" ]; then
                cat "$_astrid_s3_state/endpoint"
            else
                _astrid_s3_log "not running"; return 1
            fi ;;
        *) echo "usage: [source] $0 start|stop|status" >&2; return 2 ;;
    esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -uo pipefail
    _astrid_s3_main "$@"
    exit $?
fi
_astrid_s3_main "$@"

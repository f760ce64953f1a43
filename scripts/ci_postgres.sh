#!/usr/bin/env bash
# A throw-away PostgreSQL server on loopback for the tests marked `postgres`.
#
#   source scripts/ci_postgres.sh start   # install if missing, start, export the URL
#   scripts/ci_postgres.sh stop           # stop the server, remove its data directory
#   scripts/ci_postgres.sh status         # print the URL if the server is up
#   scripts/ci_postgres.sh revive         # start it again, same data and port, if it stopped
#
# `start` installs Debian's `postgresql` when no server binaries are found (root only),
# runs `initdb` in a fresh directory as the `postgres` user (the server refuses to run as
# root), starts it on 127.0.0.1 on a free port (sockets inside the data directory, so it
# never clashes with a system cluster), creates the role `astrid` (password `astrid`,
# scram-sha-256 over TCP, so wrong passwords are really refused) and the database
# `astrid_test` (and `astrid_airflow`, the metadata database of the scheduler run in
# scripts/ci_scheduler.sh), and exports
#
#   ASTRID_TEST_POSTGRES_URL=postgresql://astrid:astrid@127.0.0.1:<port>/astrid_test
#
# The URL is also written to $ASTRID_PG_STATE/url (default /tmp/astrid-ci-postgres-<uid>),
# where the tests look when the variable is not set. Durability is switched off
# (fsync=off): the data is disposable. Sourcing keeps the caller's shell options.
#
# In CI:   source scripts/ci_postgres.sh start
#          trap 'scripts/ci_postgres.sh stop' EXIT
#          make test

_astrid_pg_state="${ASTRID_PG_STATE:-/tmp/astrid-ci-postgres-$(id -u)}"

_astrid_pg_log() { echo "ci_postgres: $*" >&2; }

_astrid_pg_bindir() {
    local dir
    if command -v pg_config >/dev/null 2>&1; then
        dir="$(pg_config --bindir 2>/dev/null)"
        [ -x "$dir/initdb" ] && { echo "$dir"; return 0; }
    fi
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        [ -x "$dir/initdb" ] && { echo "$dir"; return 0; }
    done
    return 1
}

_astrid_pg_install() {
    if [ "$(id -u)" != "0" ]; then
        _astrid_pg_log "PostgreSQL is not installed and this is not root: apt-get install postgresql"
        return 1
    fi
    _astrid_pg_log "installing Debian's postgresql"
    local try
    for try in 1 2 3 4 5 6 7 8 9 10; do  # another job may hold the dpkg lock for a while
        if DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 &&
           DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
               postgresql >/dev/null 2>&1; then
            return 0
        fi
        _astrid_pg_log "apt-get failed (locked?); retrying in 15 s ($try/10)"
        sleep 15
    done
    _astrid_pg_log "could not install postgresql"
    return 1
}

# Run a command as the server's owner: `postgres` when we are root, else ourselves.
_astrid_pg_as_owner() {
    if [ "$(id -u)" = "0" ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

_astrid_pg_free_port() {
    python3 - <<'EOF'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
EOF
}

# Start the server of the state directory on loopback port $2 (binaries in $1).
_astrid_pg_launch() {
    local bindir="$1" port="$2" data="$_astrid_pg_state/data"
    _astrid_pg_as_owner "$bindir/pg_ctl" -D "$data" -l "$_astrid_pg_state/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $data -c fsync=off \
            -c synchronous_commit=off -c full_page_writes=off -c max_connections=60" start \
        >/dev/null || { _astrid_pg_log "server did not start:"; tail -20 "$_astrid_pg_state/server.log" >&2; return 1; }
}

# The end of the server's log, to say why it stopped.
_astrid_pg_log_tail() {
    _astrid_pg_log "the end of its log ($_astrid_pg_state/server.log):"
    tail -n "${1:-30}" "$_astrid_pg_state/server.log" >&2 2>/dev/null || true
}

# The server was started here but is gone (CI saw it vanish once mid-run, cause unknown):
# say so with its log, and start it again on the same data and port.
_astrid_pg_revive() {
    local bindir data="$_astrid_pg_state/data" port
    { [ -f "$_astrid_pg_state/url" ] && [ -d "$data" ]; } \
        || { _astrid_pg_log "no server was started here: nothing to revive"; return 1; }
    bindir="$(_astrid_pg_bindir)" || { _astrid_pg_log "no PostgreSQL binaries"; return 1; }
    if _astrid_pg_as_owner "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        return 0
    fi
    _astrid_pg_log "the server had stopped; starting it again"
    _astrid_pg_log_tail
    port="$(sed -E 's#.*:([0-9]+)/.*#\1#' "$_astrid_pg_state/url")"
    _astrid_pg_launch "$bindir" "$port" && _astrid_pg_log "up again: $(cat "$_astrid_pg_state/url")"
}

_astrid_pg_start() {
    local bindir data port url
    if [ -f "$_astrid_pg_state/url" ] && [ -f "$_astrid_pg_state/data/postmaster.pid" ]; then
        url="$(cat "$_astrid_pg_state/url")"
        export ASTRID_TEST_POSTGRES_URL="$url"
        _astrid_pg_log "already running: $url"
        return 0
    fi
    bindir="$(_astrid_pg_bindir)" || { _astrid_pg_install || return 1; bindir="$(_astrid_pg_bindir)"; } \
        || { _astrid_pg_log "no initdb after installing postgresql"; return 1; }
    rm -rf "$_astrid_pg_state"
    mkdir -p "$_astrid_pg_state"
    data="$_astrid_pg_state/data"
    mkdir -p "$data"
    printf 'postgres-ci\n' >"$_astrid_pg_state/pwfile"
    if [ "$(id -u)" = "0" ]; then
        chown -R postgres:postgres "$_astrid_pg_state"
        chmod 700 "$_astrid_pg_state"
    fi
    _astrid_pg_as_owner "$bindir/initdb" -D "$data" -U postgres --pwfile="$_astrid_pg_state/pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 \
        >"$_astrid_pg_state/initdb.log" 2>&1 \
        || { _astrid_pg_log "initdb failed:"; cat "$_astrid_pg_state/initdb.log" >&2; return 1; }
    port="${ASTRID_PG_PORT:-$(_astrid_pg_free_port)}"
    _astrid_pg_launch "$bindir" "$port" || return 1
    _astrid_pg_as_owner "$bindir/psql" -q -h "$data" -p "$port" -U postgres -d postgres \
        -v ON_ERROR_STOP=1 \
        -c "CREATE ROLE astrid LOGIN PASSWORD 'astrid'" \
        -c "CREATE DATABASE astrid_test OWNER astrid" \
        -c "CREATE DATABASE astrid_airflow OWNER astrid" >/dev/null \
        || { _astrid_pg_log "could not create the test role/database"; return 1; }
    url="postgresql://astrid:astrid@127.0.0.1:$port/astrid_test"
    echo "$url" >"$_astrid_pg_state/url"
    chmod 644 "$_astrid_pg_state/url"
    export ASTRID_TEST_POSTGRES_URL="$url"
    _astrid_pg_log "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') up: $url"
}

_astrid_pg_stop() {
    local bindir data="$_astrid_pg_state/data"
    if [ -f "$data/postmaster.pid" ] && bindir="$(_astrid_pg_bindir)"; then
        _astrid_pg_as_owner "$bindir/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null \
            || { _astrid_pg_log "pg_ctl stop failed (had the server stopped before?)"
                 _astrid_pg_log_tail; }
        _astrid_pg_log "stopped"
    fi
    rm -rf "$_astrid_pg_state"
}

_astrid_pg_main() {
    case "${1:-}" in
        start) _astrid_pg_start ;;
        stop) _astrid_pg_stop ;;
        revive) _astrid_pg_revive ;;
        status)
            if [ -f "$_astrid_pg_state/url" ] && [ -f "$_astrid_pg_state/data/postmaster.pid" ]; then
                cat "$_astrid_pg_state/url"
            else
                _astrid_pg_log "not running"; return 1
            fi ;;
        *) echo "usage: [source] $0 start|stop|status|revive" >&2; return 2 ;;
    esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -uo pipefail
    _astrid_pg_main "$@"
    exit $?
fi
_astrid_pg_main "$@"

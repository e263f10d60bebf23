#!/usr/bin/env bash
# A throw-away PostgreSQL server for TroupePersistence's PostgreSQL suites and rows.
#
#   scripts/postgres.sh start   installs Debian's postgresql if missing, makes a new data
#                               directory under /tmp, starts the server on 127.0.0.1:$PORT
#                               (default 55432) with trust authentication for local users, creates
#                               the database "troupe", and prints the environment the tests read:
#                               TROUPE_POSTGRES_HOST, _PORT, _USER, _DATABASE
#                               and TROUPE_POSTGRES_RESTART (the command that restarts it)
#   scripts/postgres.sh restart stops the server (fast: connections are cut) and starts it again
#   scripts/postgres.sh stop    stops it and removes the data directory
#
# The server runs as the postgres user (initdb refuses root). Nothing outside /tmp is written.
set -euo pipefail
port=${TROUPE_POSTGRES_PORT:-55432}
state=/tmp/troupe-postgres-$port
sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"

as_postgres() {
    if [ "$(id -un)" = postgres ]; then "$@"
    elif [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"
    else sudo -u postgres "$@"; fi
}

bin_dir() {
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
    [ -n "$dir" ] && echo "$dir"
}

case "${1:-}" in
start)
    if [ -z "$(bin_dir)" ]; then
        echo "postgres.sh: installing Debian's postgresql" >&2
        $sudo_cmd apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq postgresql >/dev/null
    fi
    bin=$(bin_dir)
    if [ -f "$state/data/postmaster.pid" ]; then "$0" stop; fi
    rm -rf "$state" && mkdir -p "$state"
    chown postgres "$state" 2>/dev/null || true
    as_postgres "$bin/initdb" -D "$state/data" -U postgres -A trust --no-sync -E UTF8 >"$state/initdb.log"
    # On failure the server's own log says why (a port in use, shared memory): print it.
    as_postgres "$bin/pg_ctl" -D "$state/data" -l "$state/server.log" -w \
        -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$state -c fsync=on" start >/dev/null ||
        { echo "postgres.sh: the server did not start on 127.0.0.1:$port; its log:" >&2; tail -20 "$state/server.log" >&2; exit 1; }
    as_postgres "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres troupe
    echo "export TROUPE_POSTGRES_HOST=127.0.0.1 TROUPE_POSTGRES_PORT=$port TROUPE_POSTGRES_USER=postgres TROUPE_POSTGRES_DATABASE=troupe"
    # The tests' server restart mid-stream runs this (a fast shutdown, then a start on the same data).
    echo "export TROUPE_POSTGRES_RESTART='TROUPE_POSTGRES_PORT=$port $(cd "$(dirname "$0")" && pwd)/postgres.sh restart'"
    ;;
restart)
    bin=$(bin_dir)
    as_postgres "$bin/pg_ctl" -D "$state/data" -l "$state/server.log" -m fast -w restart >/dev/null ||
        { echo "postgres.sh: the server did not start again on its port; its log:" >&2; tail -20 "$state/server.log" >&2; exit 1; }
    ;;
stop)
    bin=$(bin_dir)
    if [ -n "$bin" ] && [ -f "$state/data/postmaster.pid" ]; then
        as_postgres "$bin/pg_ctl" -D "$state/data" -m fast -w stop >/dev/null || true
    fi
    rm -rf "$state"
    ;;
*)
    echo "usage: scripts/postgres.sh start|restart|stop" >&2
    exit 2
    ;;
esac

#!/usr/bin/env bash
# scripts/pg_server.sh — a throwaway PostgreSQL server on the loopback for the storage tests
# (tests/search/test_study_postgres.cpp), run by scripts/test.sh around ctest:
#
#   eval "$(scripts/pg_server.sh start DIR)"   # prints: export MASE_TEST_PG_URL=postgresql://…
#   scripts/pg_server.sh stop DIR
#
# Debian's server binaries (package postgresql, /usr/lib/postgresql/<v>/bin) in DIR: initdb
# with a password (scram-sha-256, so a wrong password really is refused), a random free port
# on 127.0.0.1, the socket in DIR. PostgreSQL refuses to run as root: as root (CI) the server
# runs as the unprivileged user `postgres` that the package creates, through runuser. Nothing
# is installed or changed outside DIR. Takes about 3 s to start.
set -euo pipefail
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bin" ] && [ -x "$bin/initdb" ] || { echo "pg_server: no PostgreSQL server installed (apt-get install postgresql)" >&2; exit 1; }

as_owner() {  # run a server program as the owner of DIR
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
  start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
    password="mase-$RANDOM$RANDOM"
    echo "$password" >"$dir/pwfile"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$dir/pwfile"
    as_owner "$bin/initdb" -D "$dir/data" -U mase --pwfile="$dir/pwfile" -A scram-sha-256 \
      -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
    started=0
    for try in 1 2 3 4 5; do  # a random port; another if it is taken
      port=$((20000 + RANDOM % 40000))
      if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200 -c fsync=off" \
        start >/dev/null; then started=1; break; fi
    done
    [ $started = 1 ] || { cat "$dir/server.log" >&2; exit 1; }
    as_owner env PGPASSWORD="$password" "$bin/createdb" -h 127.0.0.1 -p "$port" -U mase mase_test
    echo "export MASE_TEST_PG_URL=postgresql://mase:$password@127.0.0.1:$port/mase_test"
    ;;
  stop)
    [ -d "$dir/data" ] && as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    rm -rf "$dir"
    ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# A throwaway PostgreSQL server for the store's tests (Debian's postgresql package; scripts/bootstrap.sh installs it).
#   postgres_server.sh start ENV_FILE   initdb in a new /tmp folder, start it on a Unix socket there and on a free
#                                       loopback port, make the login role `gpubench` (password in ENV_FILE), and
#                                       write ENV_FILE (shell assignments: GPUBENCH_PG_*) for the tests to read
#   postgres_server.sh stop ENV_FILE    stop that server and remove its folder
#   postgres_server.sh kill ENV_FILE    stop it at once (pg_ctl -m immediate): the server-lost test
#   postgres_server.sh restart ENV_FILE start it again after stop/kill, same folder, socket and port
# As root (CI) the server runs as the `postgres` user, which refuses root. Socket connections are trusted; TCP ones
# need the password (scram-sha-256), so the credentials tests have something to get wrong.
set -euo pipefail
cmd="${1:?start|stop|kill|restart}"
env_file="${2:?ENV_FILE}"
log() { echo "[postgres_server] $*" >&2; }

bindir=""
for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do [ -x "$d/initdb" ] && bindir="$d" && break; done
if [ -z "$bindir" ] && command -v initdb >/dev/null 2>&1; then bindir="$(dirname "$(command -v initdb)")"; fi
[ -n "$bindir" ] || { log "no PostgreSQL server here (Debian: apt install postgresql; scripts/test.sh does)"; exit 1; }

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_start() {  # folder port
  as_owner "$bindir/pg_ctl" -D "$1/data" -l "$1/server.log" -w -t 60 start \
    -o "-c listen_addresses=127.0.0.1 -c port=$2 -c unix_socket_directories=$1 -c fsync=off -c max_connections=60 \
        -c full_page_writes=off" >/dev/null || { cat "$1/server.log" >&2; exit 1; }
}

case "$cmd" in
  start)
    dir="$(mktemp -d /tmp/gpubench-pg.XXXXXX)"
    chmod 755 "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    password="pw-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
    as_owner "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >/dev/null
    cat > "$dir/data/pg_hba.conf" <<HBA
local all all trust
host all all 127.0.0.1/32 scram-sha-256
HBA
    pg_start "$dir" "$port"
    as_owner "$bindir/psql" -q -h "$dir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
      -c "CREATE ROLE gpubench LOGIN CREATEDB PASSWORD '$password'" >/dev/null
    mkdir -p "$(dirname "$env_file")"
    cat > "$env_file.tmp" <<ENV
GPUBENCH_PG_DIR=$dir
GPUBENCH_PG_SOCKET=$dir
GPUBENCH_PG_PORT=$port
GPUBENCH_PG_USER=gpubench
GPUBENCH_PG_PASSWORD=$password
GPUBENCH_PG_BIN=$bindir
ENV
    mv "$env_file.tmp" "$env_file"
    log "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on $dir (socket) and 127.0.0.1:$port"
    ;;
  stop|kill|restart)
    [ -f "$env_file" ] || { log "no server recorded in $env_file"; exit 0; }
    # shellcheck disable=SC1090
    . "$env_file"
    if [ "$cmd" = restart ]; then pg_start "$GPUBENCH_PG_DIR" "$GPUBENCH_PG_PORT"; exit 0; fi
    mode=fast
    [ "$cmd" = kill ] && mode=immediate
    as_owner "$bindir/pg_ctl" -D "$GPUBENCH_PG_DIR/data" -m "$mode" -w stop >/dev/null 2>&1 || true
    if [ "$cmd" = stop ]; then rm -rf "$GPUBENCH_PG_DIR"; rm -f "$env_file"; fi
    ;;
  *) log "unknown command $cmd"; exit 2 ;;
esac

# Sourced by the scripts that compare Overtake with PostgreSQL 15 on this machine: a throwaway
# PostgreSQL cluster and an `overtake serve`, both stopped and removed when the script exits.
#
#   start_postgres [-c name=value ...]   initdb in a temporary directory as the `postgres` user
#                                        (trust authentication), then start it on port $pg_port
#   start_overtake [serve options ...]   the release build's `serve` on 127.0.0.1:$ot_port (or,
#                                        to compare two builds, the binary $OVERTAKE names)
#   stop_overtake                        stops it (to start it again with other options)
#
# Ports: $PG_PORT and $OT_PORT if set, else 5432 and 5433.
# Sets $work (the temporary directory), $pgbin, $overtake, $pg_port, $ot_port and, once
# started, $server.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
overtake=${OVERTAKE:-"$root/target/release/overtake"}
pgbin=/usr/lib/postgresql/15/bin
[[ -x $pgbin/initdb ]] || { echo "PostgreSQL 15 not found: apt-get install postgresql-15" >&2; exit 2; }
pg_port=${PG_PORT:-5432}
ot_port=${OT_PORT:-5433}
[[ -x "$overtake" ]] || { echo "build first: cargo build --release" >&2; exit 1; }
work=$(mktemp -d /tmp/overtake-vs.XXXXXX)
chown postgres "$work"
cleanup() {
    su postgres -c "$pgbin/pg_ctl -D $work/pg -m immediate stop" >/dev/null 2>&1 || true
    [[ -n "${server:-}" ]] && kill "$server" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
start_postgres() {
    su postgres -c "$pgbin/initdb -D $work/pg -A trust -U postgres" >/dev/null
    su postgres -c "$pgbin/pg_ctl -D $work/pg -l $work/pg.log -o '-p $pg_port -k $work $*' start" >/dev/null
}
start_overtake() {
    "$overtake" serve --listen "127.0.0.1:$ot_port" "$@" 2>>"$work/overtake.log" &
    server=$!
    sleep 2
}
stop_overtake() {
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=""
}

#!/bin/bash
# Aspen's bimodal workload over the wire: sessions without priorities, some sending short point
# reads, others long scans, all at one level; Overtake under `--policy wait` (a statement runs to
# its end on its worker) and `--policy quantum` (statements of one level share a worker in
# quanta), and PostgreSQL 15 as it comes, with the same clients (pgbench, unchanged).
# `overtake compare bimodal-sql` runs this script and reports what it writes.
#
#   scripts/bimodal-sql.sh CSV SECONDS RATES LONG_RATE [CONFIGS]
#
#   CSV        where each run's figures go, one line per run:
#              server,config,offered_per_sec,short_per_sec,short_p50_us,short_p99_us,
#              short_p999_us,long_per_sec,long_p50_us,long_p99_us,failed
#   SECONDS    each run's length
#   RATES      the short reads' offered rates per second, comma-separated: one run per rate
#   LONG_RATE  the long scans' offered rate per second (the same in every run)
#   CONFIGS    which servers (default: all), from overtake:wait overtake:quantum postgres:default
#
# Open loop: pgbench sends each session's statements on a schedule (`--rate`), and a statement's
# latency counts from when it was due, so a read held up behind a scan is counted as late. Short
# reads: 8 sessions, `SELECT abalance FROM pgbench_accounts WHERE aid = :aid` (a random key);
# long scans: 2 sessions, `SELECT count(*) FROM pgbench_accounts WHERE abalance >= 0` over the
# 200,000 accounts of `pgbench -i -s 2`. Each Overtake run gets a fresh server, loaded by pgbench.
# Needs root (initdb as the postgres user), PostgreSQL 15 and a release build.
set -euo pipefail
csv=${1:?usage: scripts/bimodal-sql.sh CSV SECONDS RATES LONG_RATE [CONFIGS]}
seconds=${2:?seconds}
rates=${3:?rates}
long_rate=${4:?long rate}
configs=${5:-overtake:wait overtake:quantum postgres:default}
source "$(dirname "$0")/servers.sh"
: >"$csv"
cd "$work"
echo '\set aid random(1, 200000)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;' >short.sql
echo 'SELECT count(*) FROM pgbench_accounts WHERE abalance >= 0;' >long.sql

pgb() { # port args...
    local port=$1
    shift
    pgbench -h 127.0.0.1 -p "$port" -U postgres "$@" postgres
}

percentiles() { # log prefix: count p50 p99 p99.9 of the latencies (3rd field) of its logs
    cat "$1".* 2>/dev/null | awk '{print $3}' | sort -n | awk '
        { v[NR] = $1 }
        END {
            if (NR == 0) { print 0, 0, 0, 0; exit }
            i50 = int(0.5 * NR); i99 = int(0.99 * NR); i999 = int(0.999 * NR)
            if (i50 < 1) i50 = 1; if (i99 < 1) i99 = 1; if (i999 < 1) i999 = 1
            print NR, v[i50], v[i99], v[i999]
        }'
}

failed() { # pgbench output: its failed transactions (0 if it reports none)
    awk -F': ' '/number of failed transactions/ { split($2, n, " "); s += n[1] } END { print s + 0 }' "$@"
}

run() { # server port config rate
    local server=$1 port=$2 config=$3 rate=$4
    rm -f short_log.* long_log.*
    pgb "$port" -n -c 2 -j 1 -T "$seconds" -R "$long_rate" -f long.sql -l --log-prefix=long_log >long.out 2>&1 &
    local long=$!
    pgb "$port" -n -c 8 -j 2 -T "$seconds" -R "$rate" -f short.sql -l --log-prefix=short_log >short.out 2>&1 || true
    wait "$long" || true
    read -r sn s50 s99 s999 < <(percentiles short_log)
    read -r ln l50 l99 _ < <(percentiles long_log)
    local failures
    failures=$(failed short.out long.out)
    if [[ $sn -eq 0 ]]; then
        echo "$server $config at $rate/s: no short read finished" >&2
        tail -3 short.out >&2
        return
    fi
    echo "$server,$config,$rate,$(awk -v n="$sn" -v s="$seconds" 'BEGIN { printf "%.1f", n / s }'),$s50,$s99,$s999,$(awk -v n="$ln" -v s="$seconds" 'BEGIN { printf "%.2f", n / s }'),$l50,$l99,$failures" >>"$csv"
    echo "$server $config at $rate/s: short p99 ${s99} us, long p50 ${l50} us" >&2
}

IFS=, read -r -a each_rate <<<"$rates"
for config in $configs; do
    server=${config%%:*}
    setting=${config#*:}
    case $config in
    overtake:wait | overtake:quantum)
        for rate in "${each_rate[@]}"; do
            start_overtake --in-memory --policy "$setting"
            pgb "$ot_port" -i -s 2 >load.log 2>&1 || { tail -5 load.log >&2; exit 1; }
            run overtake "$ot_port" "$setting" "$rate"
            stop_overtake
        done
        ;;
    postgres:default)
        start_postgres
        pgb "$pg_port" -i -s 2 >load.log 2>&1 || { tail -5 load.log >&2; exit 1; }
        for rate in "${each_rate[@]}"; do
            run postgres "$pg_port" default "$rate"
        done
        ;;
    *)
        echo "unknown config $config" >&2
        exit 2
        ;;
    esac
done

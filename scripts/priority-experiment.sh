#!/bin/bash
# The priority experiment over the wire: time-sensitive pgbench clients (TPC-B, rate-limited)
# while background sessions run an analytic query in a loop, on Overtake and on PostgreSQL 15.
#
#   scripts/priority-experiment.sh [seconds per run] [rate per second] [background sessions]
#                                  [time-sensitive workload: tpcb | select]
#
# Configurations: SOLO (no background), SAME (both at one priority), and PRIORITIES (Overtake:
# time-sensitive sessions `-c priority=high`, background `-c priority=background`; PostgreSQL: its
# OS knobs on the backends: background reniced to 19, background SCHED_IDLE, time-sensitive
# SCHED_FIFO). Reports time-sensitive tps, mean, p50 and p99 latency (from pgbench's
# per-transaction log), and background queries per minute. With `select` the time-sensitive
# clients send one prepared point SELECT per transaction (pgbench -S): its latency with background
# sessions less its SOLO latency is how long an urgent statement waits behind a running analytic
# one (the start delay). Needs root (renice, chrt) and a release build.
set -euo pipefail
seconds=${1:-20}
rate=${2:-400}
nbg=${3:-2}
workload=${4:-tpcb}
case "$workload" in
    tpcb) script=() ;;
    select) script=(-S) ;;
    *) echo "unknown workload $workload (tpcb or select)" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
overtake=${OVERTAKE:-"$root/target/release/overtake"}
pgbin=/usr/lib/postgresql/15/bin
work=$(mktemp -d /tmp/priority-exp.XXXXXX)
chown postgres "$work"
query="SELECT t.tid, count(*), sum(a.abalance + t.tbalance) FROM pgbench_accounts a JOIN pgbench_tellers t ON t.bid = a.bid GROUP BY t.tid"
cleanup() {
    jobs -p | xargs -r kill 2>/dev/null || true
    [[ -n "${server:-}" ]] && kill "$server" 2>/dev/null || true
    su postgres -c "$pgbin/pg_ctl -D $work/pg -m immediate stop" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
su postgres -c "$pgbin/initdb -D $work/pg -A trust -U postgres" >/dev/null
su postgres -c "$pgbin/pg_ctl -D $work/pg -l $work/pg.log -o '-p 5432 -k $work -c synchronous_commit=off' start" >/dev/null
"$overtake" serve --in-memory --listen 127.0.0.1:5433 2>"$work/overtake.log" &
server=$!
sleep 2
for port in 5432 5433; do pgbench -h 127.0.0.1 -p "$port" -U postgres -i -s 1 -q postgres >/dev/null 2>&1; done

solo_time() { # port -> seconds for one background query alone
    local t0 t1
    t0=$(date +%s.%N)
    psql -h 127.0.0.1 -p "$1" -U postgres -X -q -c "$query" postgres >/dev/null
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

background() { # port, options, counter file: loops until killed
    while PGOPTIONS="$2" PGAPPNAME=background psql -h 127.0.0.1 -p "$1" -U postgres -X -q -c "$query" postgres >/dev/null 2>&1; do
        echo x >>"$3"
    done
}

# knob: what to do to PostgreSQL's backends once the sessions are connected.
apply_knob() {
    local pids
    case "$1" in
        renice) pids=$(psql -h 127.0.0.1 -p 5432 -U postgres -X -At -c "select pid from pg_stat_activity where application_name = 'background'" postgres)
                for p in $pids; do renice -n 19 -p "$p" >/dev/null; done ;;
        idle) pids=$(psql -h 127.0.0.1 -p 5432 -U postgres -X -At -c "select pid from pg_stat_activity where application_name = 'background'" postgres)
              for p in $pids; do chrt -i -p 0 "$p"; done ;;
        fifo) pids=$(psql -h 127.0.0.1 -p 5432 -U postgres -X -At -c "select pid from pg_stat_activity where application_name = 'pgbench'" postgres)
              for p in $pids; do chrt -f -p 10 "$p"; done ;;
    esac
}

run() { # system port ts-options bg-options with-background knob label
    local system=$1 port=$2 ts=$3 bg=$4 with_bg=$5 knob=$6 label=$7
    local counter="$work/count-$label" log="$work/log-$label"
    : >"$counter"
    local loops=()
    if [[ $with_bg == yes ]]; then
        for _ in $(seq 1 "$nbg"); do
            background "$port" "$bg" "$counter" &
            loops+=("$!")
        done
        sleep 1
    fi
    if [[ $knob == renice || $knob == idle ]]; then apply_knob "$knob"; fi
    if [[ $knob == fifo ]]; then (sleep 1; apply_knob fifo) & loops+=("$!"); fi
    PGOPTIONS="$ts" pgbench -h 127.0.0.1 -p "$port" -U postgres -c 4 -j 2 -R "$rate" -T "$seconds" -M prepared -n "${script[@]}" \
        --log --log-prefix="$log" postgres >"$work/out-$label" 2>&1 || true
    local done_bg
    done_bg=$(wc -l <"$counter")
    for p in "${loops[@]}"; do pkill -P "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
    for p in "${loops[@]}"; do wait "$p" 2>/dev/null || true; done
    sleep 1
    local tps stats
    tps=$(awk '/^tps/ {print $3}' "$work/out-$label")
    if [[ -z $tps ]]; then
        echo "$system $label: pgbench failed:" >&2
        cat "$work/out-$label" >&2
        return 1
    fi
    # pgbench's log: client, transaction, latency (us), ... (with -R, latency includes schedule lag)
    stats=$(cat "$log".* 2>/dev/null | awk '{print $3}' | sort -n | awk '{a[NR]=$1; s+=$1} END {printf "%.3f %.3f %.3f", s/NR/1000, a[int(NR*0.5)]/1000, a[int(NR*0.99)]/1000}')
    rm -f "$log".* 2>/dev/null || true
    read -r mean p50 p99 <<<"$stats"
    printf '%-9s %-22s ts tps %7.1f  mean %7s ms  p50 %7s ms  p99 %7s ms  background queries/min %6.1f\n' \
        "$system" "$label" "$tps" "$mean" "$p50" "$p99" "$(echo "$done_bg * 60 / $seconds" | bc -l)"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); ${seconds}s per run; $workload at ${rate}/s over 4 clients; $nbg background sessions"
echo "background query alone: postgres $(solo_time 5432) s, overtake $(solo_time 5433) s"
run overtake 5433 "" "" no none solo
run postgres 5432 "" "" no none solo
run overtake 5433 "-c priority=normal" "-c priority=normal" yes none same-priority
run postgres 5432 "" "" yes none same-priority
run overtake 5433 "-c priority=high" "-c priority=background" yes none priorities
run postgres 5432 "" "" yes renice background-nice-19
run postgres 5432 "" "" yes idle background-SCHED_IDLE
run postgres 5432 "" "" yes fifo ts-SCHED_FIFO

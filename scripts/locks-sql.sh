#!/bin/bash
# Lock scheduling over the wire: high- and normal-priority TPC-C clients (go-tpc, unchanged) on
# one warehouse, saturated, on Overtake under two-phase locking with each lock policy, and on
# PostgreSQL 15 with the same clients (it has no priority in its lock manager: its two groups
# differ only in name). `overtake compare locks-sql` runs this script and reports what it writes.
#
#   scripts/locks-sql.sh CSV SECONDS HIGH_THREADS LOW_THREADS POLICIES
#
#   CSV           where each run's figures go, a line per client group per run:
#                 server,config,group,per_sec,committed,aborted,mean_us,p50_us,p99_us,seconds
#                 (config: the lock policy, or `postgres`; group: high or low; per_sec and
#                 committed: transactions of all five kinds that committed; aborted: those that
#                 ended in an error (a lock policy's abort, a deadlock); mean_us: the mean
#                 response time of the committed ones; p50_us and p99_us: New-Order's), and
#                 after each Overtake run a line per priority level from overtake_stat_classes,
#                 as scripts/htap.sh writes them
#   SECONDS       each run's length
#   HIGH_THREADS  go-tpc threads of the high-priority client (`priority=high`)
#   LOW_THREADS   go-tpc threads of the other client (the default level, `normal`)
#   POLICIES      Overtake's lock policies to run, comma-separated (standard, the FIFO lock
#                 manager, is the baseline), e.g. standard,pow,nprio-inherit
#
# Both clients run closed loops with no think time against one warehouse: every New-Order and
# Payment writes the warehouse's or its district's row, so the lock queues are where time goes.
# Each Overtake run gets a fresh server (`--in-memory --concurrency 2pl --lock-policy P`),
# loaded by `go-tpc tpcc prepare`; PostgreSQL (synchronous_commit off) is loaded once. Needs
# root (initdb), go-tpc 1.0.12 or newer on PATH (or $GO_TPC), and a release build.
set -euo pipefail
csv=${1:?usage: scripts/locks-sql.sh CSV SECONDS HIGH_THREADS LOW_THREADS POLICIES}
seconds=${2:?seconds}
high_threads=${3:?high threads}
low_threads=${4:?low threads}
policies=${5:?policies}
source "$(dirname "$0")/servers.sh"
source "$(dirname "$0")/gotpc.sh"
source "$(dirname "$0")/classes.sh"
: >"$csv"

figures() { # log: one group's figures from go-tpc's summary
    awk -v s="$seconds" '
        /\[Summary\] [A-Z_]+ - / {
            kind = $2; count = avg = ""
            for (i = 1; i <= NF; i++) {
                if ($i == "Count:") count = $(i + 1)
                if ($i == "Avg(ms):") avg = $(i + 1)
                if (kind == "NEW_ORDER" && $i == "50th(ms):") p50 = $(i + 1)
                if (kind == "NEW_ORDER" && $i == "99th(ms):") p99 = $(i + 1)
            }
            gsub(",", "", count); gsub(",", "", avg)
            if (kind ~ /_ERR$/) { aborted += count; next }
            committed += count; weighted += count * avg
        }
        END {
            gsub(",", "", p50); gsub(",", "", p99)
            printf "%.1f,%d,%d,%.0f,%.0f,%.0f,%d", committed / s, committed, aborted,
                committed ? weighted / committed * 1000 : 0, p50 * 1000, p99 * 1000, s
        }' "$1"
}

run() { # server port config: the two clients at once, a line per group
    local server=$1 port=$2 config=$3 high_params="" low_params=""
    if [[ $server == overtake ]]; then
        high_params="&priority=high"
        low_params="&priority=normal"
        classes "$port" locks >"$work/classes-before"
    fi
    client() { # group params threads: one client's closed loops, logged to group.log
        gotpc "$port" locks tpcc --conn-params "sslmode=disable&application_name=locks-$1$2" \
            run -T "$3" --time "${seconds}s" --interval 1000s --ignore-error >"$work/$1.log" 2>&1
    }
    client high "$high_params" "$high_threads" &
    local high=$!
    client low "$low_params" "$low_threads" || true
    wait "$high" || true
    for group in high low; do
        local line
        line="$server,$config,$group,$(figures "$work/$group.log")"
        echo "$line" >>"$csv"
        echo "$line" >&2
    done
    if [[ $server == overtake ]]; then
        # What each level's transactions did during the run.
        class_lines "$port" locks "$config" "$work/classes-before" >>"$csv"
    fi
}

start_postgres -c synchronous_commit=off -c max_connections=200
gotpc_load "$pg_port" locks "$((high_threads + low_threads))"
run postgres "$pg_port" postgres
su postgres -c "$pgbin/pg_ctl -D $work/pg -m fast stop" >/dev/null
for policy in ${policies//,/ }; do
    start_overtake --in-memory --max-connections 200 --concurrency 2pl --lock-policy "$policy"
    gotpc_load "$ot_port" locks "$((high_threads + low_threads))"
    run overtake "$ot_port" "$policy"
    stop_overtake
done

#!/bin/bash
# HTAP over the wire: TPC-C clients (time-sensitive) beside CH-benCHmark analytic sessions
# (background), on Overtake and on PostgreSQL 15 with the same client counts, both driven by
# go-tpc, unchanged. `overtake compare htap` runs this script and reports what it writes.
#
#   scripts/htap.sh CSV SECONDS TP_THREADS AP_THREADS QUERIES [CONFIGS]
#
#   CSV         where each run's figures go, one line per run:
#               server,config,tp_per_sec,p50_us,p90_us,p95_us,p99_us,p999_us,max_us,
#               ap_queries,seconds,errors
#               and after each Overtake run, a line per priority level whose transactions
#               ended in it, from overtake_stat_classes (differences over the run):
#               class,config,priority,committed,rolled_back,preemptions,queued_us,
#               running_us,preempted_us,client_wait_us,lock_wait_us,log_wait_us,other_wait_us
#   SECONDS     each run's length
#   TP_THREADS  go-tpc's TPC-C threads (closed loop: each sends its next transaction as soon as
#               the last one ends)
#   AP_THREADS  go-tpc's analytic threads, each running QUERIES in turn
#   QUERIES     go-tpc's list, e.g. q2 or q1,q2,...,q22
#   CONFIGS     which runs (default: all), from: solo-tp solo-ap same priorities-wait
#               priorities-cooperative priorities-preempt (Overtake) and solo-tp solo-ap
#               default ap-nice-19 ap-sched-idle tp-sched-fifo cgroup-weights (PostgreSQL),
#               each prefixed by its server: overtake:same postgres:ap-nice-19 ...
#
# TP latency is New-Order's (go-tpc's percentiles), TP throughput all five transactions per
# second. Overtake's priorities: TP sessions `priority=high`, AP sessions `priority=background`,
# given as startup parameters (go-tpc's connection parameters), the server started with
# `--policy wait|cooperative|preempt`; its other runs use the default policy. PostgreSQL's knobs
# act on the backends once go-tpc has connected (found by application_name): AP backends
# reniced to 19 or SCHED_IDLE, TP backends SCHED_FIFO 10, or TP and AP backends in two CPU
# cgroups weighted 10000:1 (cgroup v2 cpu.weight, or v1 cpu.shares 20000:2). Each server is
# loaded by go-tpc (`tpcc prepare`, `ch prepare`, one warehouse); an Overtake server is started
# and loaded afresh for each policy. Needs root (initdb, renice, chrt, cgroups), go-tpc 1.0.12 or
# newer on PATH (or $GO_TPC), and a release build.
set -euo pipefail
csv=${1:?usage: scripts/htap.sh CSV SECONDS TP_THREADS AP_THREADS QUERIES [CONFIGS]}
seconds=${2:?seconds}
tp_threads=${3:?tp threads}
ap_threads=${4:?ap threads}
queries=${5:?queries}
all_configs="overtake:solo-tp overtake:solo-ap overtake:same overtake:priorities-wait
overtake:priorities-cooperative overtake:priorities-preempt postgres:solo-tp postgres:solo-ap
postgres:default postgres:ap-nice-19 postgres:ap-sched-idle postgres:tp-sched-fifo
postgres:cgroup-weights"
configs=${6:-$all_configs}
source "$(dirname "$0")/servers.sh"
require_go_tpc
source "$(dirname "$0")/classes.sh"
remove_groups() {
    # The knob's cgroups, if made (by a background job: their names are fixed, not remembered).
    # A cgroup can be removed once empty: its processes are moved back to the root first.
    local base g
    for base in /sys/fs/cgroup /sys/fs/cgroup/cpu; do
        for g in "$base/overtake-htap-tp" "$base/overtake-htap-ap"; do
            [[ -d $g ]] || continue
            for p in $(cat "$g/cgroup.procs" 2>/dev/null); do echo "$p" >"$base/cgroup.procs" 2>/dev/null || true; done
            rmdir "$g" 2>/dev/null || true
        done
    done
}
trap 'remove_groups; cleanup' EXIT
: >"$csv"

gotpc() { # port tp-params ap-params args...: go-tpc against the server on port
    local port=$1 tp=$2 ap=$3 ap_params=()
    shift 3
    # Only `ch run` has analytic sessions (and takes their parameters).
    [[ "$1 $2" == "ch run" ]] && ap_params=(--ap-conn-params "sslmode=disable&application_name=htap-ap$ap")
    "$go_tpc" "$1" -d postgres -H 127.0.0.1 -P "$port" -U postgres -D htap --warehouses 1 \
        --conn-params "sslmode=disable&application_name=htap-tp$tp" "${ap_params[@]}" "${@:2}"
}

load() { # port: PostgreSQL needs the database made (Overtake has one, whatever it is called)
    [[ $1 == "$pg_port" ]] &&
        psql -h 127.0.0.1 -p "$1" -U postgres -X -q -c "CREATE DATABASE htap" postgres >/dev/null
    gotpc "$1" "" "" tpcc prepare -T 2 --no-check >"$work/prepare.log" 2>&1 ||
        { tail -5 "$work/prepare.log" >&2; exit 1; }
    gotpc "$1" "" "" ch prepare >"$work/prepare.log" 2>&1 ||
        { tail -5 "$work/prepare.log" >&2; exit 1; }
    # Statistics for both planners, then a short TPC-C run unreported: the first run after a
    # load otherwise pays for what the load left behind (cold caches, background ANALYZE).
    psql -h 127.0.0.1 -p "$1" -U postgres -X -q -c "ANALYZE" htap >/dev/null
    gotpc "$1" "" "" tpcc run -T "$tp_threads" --time 3s --interval 1000s >"$work/warm.log" 2>&1 || true
}

backends() { # class (tp or ap): PostgreSQL's backend pids of that class's sessions
    psql -h 127.0.0.1 -p "$pg_port" -U postgres -X -At \
        -c "select pid from pg_stat_activity where application_name = 'htap-$1'" postgres
}

cgroup_dir() { # name: a CPU cgroup made for the run (v2 if the machine has one, else v1)
    local base
    if [[ -f /sys/fs/cgroup/cgroup.controllers ]] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
        base=/sys/fs/cgroup
        grep -qw cpu "$base/cgroup.subtree_control" || echo +cpu >"$base/cgroup.subtree_control"
    elif [[ -d /sys/fs/cgroup/cpu ]]; then
        base=/sys/fs/cgroup/cpu
    else
        echo "no writable CPU cgroup on this machine" >&2
        return 1
    fi
    mkdir -p "$base/$1"
    echo "$base/$1"
}

weigh() { # class weight: moves the class's backends into a cgroup of that weight
    local dir
    dir=$(cgroup_dir "overtake-htap-$1")
    if [[ -f $dir/cpu.weight ]]; then
        echo "$2" >"$dir/cpu.weight"
    else
        echo "$(($2 * 2))" >"$dir/cpu.shares"
    fi
    # A backend that ended meanwhile (go-tpc's connection pool closes some) has nothing to move.
    for p in $(backends "$1"); do echo "$p" >"$dir/cgroup.procs" 2>/dev/null || true; done
}

knob() { # PostgreSQL knob, applied once go-tpc's sessions are connected
    sleep 1
    case "$1" in
        ap-nice-19) for p in $(backends ap); do renice -n 19 -p "$p" >/dev/null 2>&1 || true; done ;;
        ap-sched-idle) for p in $(backends ap); do chrt -i -p 0 "$p" 2>/dev/null || true; done ;;
        tp-sched-fifo) for p in $(backends tp); do chrt -f -p 10 "$p" 2>/dev/null || true; done ;;
        cgroup-weights) weigh tp 10000; weigh ap 1 ;;
    esac
}

run() { # server port config: one run, one CSV line (and Overtake's class lines)
    local server=$1 port=$2 config=$3 log="$work/run.log" tp=() ap=()
    local tp_opt="" ap_opt=""
    if [[ $server == overtake && $config == priorities-* ]]; then
        tp_opt="&priority=high"
        ap_opt="&priority=background"
    fi
    case "$config" in
        solo-tp) tp=(tpcc run -T "$tp_threads") ;;
        solo-ap) ap=(ch run -T 0 -t "$ap_threads" --queries "$queries") ;;
        *) tp=(ch run -T "$tp_threads" -t "$ap_threads" --queries "$queries") ;;
    esac
    local args=("${tp[@]}" "${ap[@]}" --time "${seconds}s" --interval 1000s --ignore-error)
    local knobber=""
    if [[ $server == postgres ]]; then
        knob "$config" &
        knobber=$!
    fi
    [[ $server == overtake ]] && classes "$port" htap >"$work/classes-before"
    gotpc "$port" "$tp_opt" "$ap_opt" "${args[@]}" >"$log" 2>&1 || true
    if [[ -n $knobber ]]; then wait "$knobber" || echo "warning: $config's knob failed" >&2; fi
    remove_groups
    # go-tpc's summary: New-Order's percentiles (ms), the TP total per minute, each query's count.
    local figures
    figures=$(awk -v s="$seconds" '
        BEGIN { n = split("50th(ms): 90th(ms): 95th(ms): 99th(ms): 99.9th(ms): Max(ms):", names, " ") }
        /\[Summary\] NEW_ORDER / {
            for (i = 1; i <= NF; i++) for (k = 1; k <= n; k++) if ($i == names[k]) at[k] = $(i + 1)
        }
        /^tpmC:/ { total = $4 }
        /\[Summary\] Q[0-9]+ / { for (i = 1; i <= NF; i++) if ($i == "Count:") q += $(i + 1) }
        /[Ee]rror|failed/ { errors++ }
        END {
            gsub(",", "", total)
            printf "%.1f", total / 60
            for (k = 1; k <= n; k++) { v = at[k]; gsub(",", "", v); printf ",%.0f", v * 1000 }
            printf ",%d,%d,%d", q, s, errors
        }' "$log")
    echo "$server,$config,$figures" >>"$csv"
    echo "$server $config: $figures" >&2
    if [[ $server == overtake ]]; then
        # What each level's transactions did during the run.
        class_lines "$port" htap "$config" "$work/classes-before" >>"$csv"
    fi
}

wants() { [[ " $(echo $configs) " == *" $1 "* ]]; }

if [[ $configs == *postgres:* ]]; then
    start_postgres -c synchronous_commit=off -c max_connections=200
    load "$pg_port"
    for c in solo-tp solo-ap default ap-nice-19 ap-sched-idle tp-sched-fifo cgroup-weights; do
        wants "postgres:$c" && run postgres "$pg_port" "$c"
    done
fi
# Overtake: the default policy for the runs without priorities, then one server per policy.
for policy in default wait cooperative preempt; do
    todo=()
    if [[ $policy == default ]]; then
        for c in solo-tp solo-ap same; do wants "overtake:$c" && todo+=("$c"); done
    else
        wants "overtake:priorities-$policy" && todo+=("priorities-$policy")
    fi
    ((${#todo[@]})) || continue
    flags=(--in-memory --max-connections 200)
    [[ $policy != default ]] && flags+=(--policy "$policy")
    start_overtake "${flags[@]}"
    load "$ot_port"
    for c in "${todo[@]}"; do run overtake "$ot_port" "$c"; done
    stop_overtake
done

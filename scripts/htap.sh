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
source "$(dirname "$0")/gotpc.sh"
source "$(dirname "$0")/classes.sh"
source "$(dirname "$0")/knobs.sh"
trap 'remove_knob_groups; cleanup' EXIT
: >"$csv"

htap() { # port tp-params ap-params args...: go-tpc against the server on port
    local port=$1 tp=$2 ap=$3 ap_params=()
    shift 3
    # Only `ch run` has analytic sessions (and takes their parameters).
    [[ "$1 $2" == "ch run" ]] && ap_params=(--ap-conn-params "sslmode=disable&application_name=htap-ap$ap")
    gotpc "$port" htap "$1" --conn-params "sslmode=disable&application_name=htap-tp$tp" \
        "${ap_params[@]}" "${@:2}"
}

knob() { # PostgreSQL knob, applied once go-tpc's sessions are connected
    sleep 1
    case "$1" in
        ap-nice-19) renice_backends htap-ap 19 ;;
        ap-sched-idle) chrt_backends htap-ap -i 0 ;;
        tp-sched-fifo) chrt_backends htap-tp -f 10 ;;
        cgroup-weights) weigh_backends htap-tp 10000; weigh_backends htap-ap 1 ;;
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
    htap "$port" "$tp_opt" "$ap_opt" "${args[@]}" >"$log" 2>&1 || true
    if [[ -n $knobber ]]; then wait "$knobber" || echo "warning: $config's knob failed" >&2; fi
    remove_knob_groups
    local figures
    figures=$(gotpc_mix_figures "$log" "$seconds")
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
    gotpc_load "$pg_port" htap "$tp_threads" ch
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
    gotpc_load "$ot_port" htap "$tp_threads" ch
    for c in "${todo[@]}"; do run overtake "$ot_port" "$c"; done
    stop_overtake
done

#!/bin/bash
# UFS's experiment over the wire: CPU-bursty TPC-C sessions (go-tpc's closed loops: short bursts
# of CPU between round trips to their client) beside CPU-bound CH-benCHmark sessions (Query 2
# back to back), their tiers and weights given to Overtake's scheduler, to the OS's schedulers
# through Overtake's session threads, and to the OS's schedulers on PostgreSQL 15's backends.
# `overtake compare tiers-sql` runs this script and reports what it writes.
#
#   scripts/tiers-sql.sh CSV SECONDS SESSIONS RUNS
#
#   CSV       where each run's figures go, one line per run:
#             server,scheduler/mix,tp_per_sec,p50_us,p90_us,p95_us,p99_us,p999_us,max_us,
#             ap_queries,seconds,errors
#             (as scripts/htap.sh writes them, from gotpc_mix_figures: TP all five transactions
#             per second, latency New-Order's, ap_queries the Query 2s that completed), or for
#             a weights run
#             weights,server,scheduler,weight_1,weight_2,queries_1,queries_2,seconds,errors
#             and after each Overtake run its class lines (scripts/classes.sh), config
#             scheduler/mix
#   SECONDS   each run's length
#   SESSIONS  bursty sessions, and as many bound ones, in each mix (each weights group: twice)
#   RUNS      server:scheduler:mix, space- or comma-separated. Servers: overtake, postgres.
#             Schedulers: overtake (Overtake's own tiers: its sessions' statements are tasks on
#             its workers), and the OS's: eevdf (a CPU cgroup per group, weighted), idle
#             (background sessions SCHED_IDLE), fifo and rr (time-sensitive sessions
#             SCHED_FIFO / SCHED_RR 99) — on Overtake through `serve --session-threads`, on
#             PostgreSQL applied to its backends. Mixes, as UFS's:
#               solo     bursty sessions alone, time-sensitive, weight 10000
#               bound    bound sessions alone, background, weight 1
#               minmax   both: bursty time-sensitive 10000, bound background 1
#               5050     both time-sensitive at weight 100, as two groups
#               weights  bound sessions only, two background groups at weights 200 and 300
#             e.g. "overtake:overtake:minmax postgres:eevdf:minmax"
#
# Overtake learns a session's group from its startup parameters `task_tier`, `task_weight` and
# `task_group` (go-tpc's connection parameters; in 5050 the two kinds are groups 1 and 2, as
# PostgreSQL's backends get two cgroups). PostgreSQL's knobs are applied to the backends
# found by application_name once go-tpc has connected, and again every 5 s (go-tpc's pools may
# reconnect). Each Overtake scheduler gets a server of its own (`--in-memory`, plus
# `--session-threads S` for the OS's), loaded by go-tpc (`tpcc prepare`, `ch prepare`, one
# warehouse); PostgreSQL (synchronous_commit off) is loaded once. Needs root (initdb, chrt,
# cgroups), go-tpc 1.0.12 or newer, and a release build.
set -euo pipefail
csv=${1:?usage: scripts/tiers-sql.sh CSV SECONDS SESSIONS RUNS}
seconds=${2:?seconds}
sessions=${3:?sessions}
runs=${4:?runs}
runs=${runs//,/ }
source "$(dirname "$0")/servers.sh"
source "$(dirname "$0")/gotpc.sh"
source "$(dirname "$0")/classes.sh"
source "$(dirname "$0")/knobs.sh"
trap 'remove_knob_groups; cleanup' EXIT
: >"$csv"

for r in $runs; do
    IFS=: read -r s sched m <<<"$r"
    [[ $s == overtake || $s == postgres ]] || { echo "unknown server in $r" >&2; exit 2; }
    [[ " overtake eevdf idle fifo rr " == *" $sched "* ]] || { echo "unknown scheduler in $r" >&2; exit 2; }
    [[ $s:$sched != postgres:overtake ]] || { echo "PostgreSQL has no scheduler of its own: $r" >&2; exit 2; }
    [[ " solo bound minmax 5050 weights " == *" $m "* ]] || { echo "unknown mix in $r" >&2; exit 2; }
done

classes_of() { # mix: its session classes, one per line: app tier weight group (tp before ap)
    case "$1" in
        solo) echo "tiers-tp time-sensitive 10000 0" ;;
        bound) echo "tiers-ap background 1 0" ;;
        minmax) printf '%s\n' "tiers-tp time-sensitive 10000 0" "tiers-ap background 1 0" ;;
        5050) printf '%s\n' "tiers-tp time-sensitive 100 1" "tiers-ap time-sensitive 100 2" ;;
        weights) printf '%s\n' "tiers-g1 background 200 0" "tiers-g2 background 300 0" ;;
    esac
}

params() { # server app tier weight group: go-tpc's connection parameters for that class
    local p="sslmode=disable&application_name=$2"
    [[ $1 == overtake ]] && p+="&task_tier=$3&task_weight=$4&task_group=$5"
    echo "$p"
}

knob() { # scheduler app tier weight [group]: PostgreSQL's backends of that class, placed
    case "$1" in
        eevdf) weigh_backends "$2" "$4" ;;
        idle) if [[ $3 == background ]]; then chrt_backends "$2" -i 0; fi ;;
        fifo) if [[ $3 == time-sensitive ]]; then chrt_backends "$2" -f 99; fi ;;
        rr) if [[ $3 == time-sensitive ]]; then chrt_backends "$2" -r 99; fi ;;
    esac
}

knobs() { # scheduler mix: applies the knob to each class after 1 s, then every 5 s
    local sched=$1 mix=$2 first=1
    while true; do
        sleep $((first ? 1 : 5))
        first=0
        classes_of "$mix" | while read -r app tier weight _; do knob "$sched" "$app" "$tier" "$weight"; done
    done
}

settle() { # port: waits (up to 30 s) until the run's sessions have left the server
    local i n
    for i in $(seq 30); do
        n=$(psql -h 127.0.0.1 -p "$1" -U postgres -X -At -c "select count(*) from pg_stat_activity
            where application_name like 'tiers-%'" postgres 2>/dev/null || echo 0)
        ((n == 0)) && return
        sleep 1
    done
    echo "warning: sessions of the last run still on the server" >&2
}

run() { # server port scheduler mix: one run and its CSV lines
    local server=$1 port=$2 sched=$3 mix=$4 c=() k=() pids=() knobber=""
    mapfile -t c < <(classes_of "$mix")
    local args=(--time "${seconds}s" --interval 1000s --ignore-error)
    [[ $server == overtake ]] && classes "$port" tiers >"$work/classes-before"
    if [[ $server == postgres ]]; then
        knobs "$sched" "$mix" &
        knobber=$!
    fi
    read -ra k <<<"${c[0]}"
    case "$mix" in
        solo)
            gotpc "$port" tiers tpcc --conn-params "$(params "$server" "${k[@]}")" \
                run -T "$sessions" "${args[@]}" >"$work/run.log" 2>&1 || true ;;
        bound)
            gotpc "$port" tiers ch --conn-params sslmode=disable \
                --ap-conn-params "$(params "$server" "${k[@]}")" \
                run -T 0 -t "$sessions" --queries q2 "${args[@]}" >"$work/run.log" 2>&1 || true ;;
        minmax | 5050)
            local a=()
            read -ra a <<<"${c[1]}"
            gotpc "$port" tiers ch --conn-params "$(params "$server" "${k[@]}")" \
                --ap-conn-params "$(params "$server" "${a[@]}")" \
                run -T "$sessions" -t "$sessions" --queries q2 "${args[@]}" >"$work/run.log" 2>&1 || true ;;
        weights)
            local i
            for i in 0 1; do
                read -ra k <<<"${c[$i]}"
                gotpc "$port" tiers ch --conn-params sslmode=disable \
                    --ap-conn-params "$(params "$server" "${k[@]}")" \
                    run -T 0 -t "$((2 * sessions))" --queries q2 "${args[@]}" \
                    >"$work/group$i.log" 2>&1 &
                pids+=($!)
            done
            wait "${pids[@]}" || true ;;
    esac
    if [[ -n $knobber ]]; then
        kill "$knobber" 2>/dev/null || true
        wait "$knobber" 2>/dev/null || true
    fi
    remove_knob_groups
    local line
    if [[ $mix == weights ]]; then
        local f0 f1 w0 w1
        IFS=, read -ra f0 <<<"$(gotpc_mix_figures "$work/group0.log" "$seconds")"
        IFS=, read -ra f1 <<<"$(gotpc_mix_figures "$work/group1.log" "$seconds")"
        w0=$(cut -d' ' -f3 <<<"${c[0]}")
        w1=$(cut -d' ' -f3 <<<"${c[1]}")
        line="weights,$server,$sched,$w0,$w1,${f0[7]},${f1[7]},$seconds,$((f0[9] + f1[9]))"
    else
        line="$server,$sched/$mix,$(gotpc_mix_figures "$work/run.log" "$seconds")"
    fi
    echo "$line" >>"$csv"
    echo "$line" >&2
    settle "$port"
    if [[ $server == overtake ]]; then
        class_lines "$port" tiers "$sched/$mix" "$work/classes-before" >>"$csv"
    fi
}

mixes_of() { # server scheduler: the mixes RUNS asks of them, in RUNS' order
    local r
    for r in $runs; do [[ $r == "$1:$2:"* ]] && echo "${r##*:}"; done
    return 0
}

if [[ " $runs" == *" postgres:"* ]]; then
    start_postgres -c synchronous_commit=off -c max_connections=200
    gotpc_load "$pg_port" tiers "$sessions" ch
    for sched in eevdf idle fifo rr; do
        for mix in $(mixes_of postgres "$sched"); do run postgres "$pg_port" "$sched" "$mix"; done
    done
    su postgres -c "$pgbin/pg_ctl -D $work/pg -m fast stop" >/dev/null
fi
for sched in overtake eevdf idle fifo rr; do
    todo=$(mixes_of overtake "$sched")
    [[ -n $todo ]] || continue
    flags=(--in-memory --max-connections 200)
    [[ $sched != overtake ]] && flags+=(--session-threads "$sched")
    start_overtake "${flags[@]}"
    gotpc_load "$ot_port" tiers "$sessions" ch
    for mix in $todo; do run overtake "$ot_port" "$sched" "$mix"; done
    stop_overtake
done

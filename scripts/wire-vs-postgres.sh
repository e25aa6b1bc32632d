#!/bin/bash
# The front door against PostgreSQL 15: pgbench over loopback against both servers on this
# machine, in alternating runs, with each server's CPU per statement.
#
#   scripts/wire-vs-postgres.sh [--plot DIR] [seconds per run] [client counts] [workloads] [csv file]
#
#   --plot DIR       draw the runs into SVG figures in DIR (`overtake plot wire`): per workload,
#                    both servers' tps and CPU per statement by client count
#   seconds per run  default 10
#   client counts    default "1 8 32 128"
#   workloads        default "select tpcb pipeline": select = pgbench -S -M prepared (one prepared
#                    primary-key SELECT per transaction); tpcb = pgbench's TPC-B -M prepared
#                    (BEGIN, three UPDATEs, a SELECT, an INSERT, END: 7 statements); pipeline = 10
#                    prepared point SELECTs sent in one pipeline (\startpipeline ... \endpipeline)
#   csv file         where to write one line per run as well (default: none)
#
# Starts a throwaway PostgreSQL cluster (initdb in a temporary directory as the `postgres` user,
# port 5432, trust authentication, synchronous_commit=off, max_connections=200) and `overtake
# serve --in-memory --max-connections 200` (release build, port 5433), initializes both with
# `pgbench -i -s 1`, then for each workload and client count runs PostgreSQL, then Overtake.
#
# Server CPU per statement is the server's user+system time over the run (Overtake: its process;
# PostgreSQL: the postmaster with its children, those that exited included, read from /proc)
# divided by the statements it answered. pgbench runs on the same two cores: its own CPU per
# statement is printed too, since it bounds what either server can reach. At one client the
# transaction latency p50/p99 comes from pgbench's per-transaction log. Needs root (initdb as
# postgres) and a release build (cargo build --release).
set -euo pipefail
plot=""
if [[ ${1:-} == --plot ]]; then
    plot=${2:?--plot needs a directory}
    shift 2
fi
seconds=${1:-10}
clients_list=${2:-"1 8 32 128"}
workloads=${3:-"select tpcb pipeline"}
csv=${4:-}
source "$(dirname "$0")/servers.sh"
# Figures are drawn from the CSV file: one in the temporary directory unless one was named.
[[ -n $plot && -z $csv ]] && csv="$work/runs.csv"
start_postgres -c synchronous_commit=off -c max_connections=200
start_overtake --in-memory --max-connections 200
postmaster=$(head -1 "$work/pg/postmaster.pid")
for port in 5432 5433; do pgbench -h 127.0.0.1 -p "$port" -U postgres -i -s 1 -q postgres >/dev/null 2>&1; done
# Ten point SELECTs in one pipeline: pgbench sends them without waiting and reads the answers at
# the end (it needs -M prepared or extended).
cat >"$work/pipeline.sql" <<'EOF'
\set aid random(1, 100000 * :scale)
\startpipeline
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
\endpipeline
EOF

ticks=$(getconf CLK_TCK)
# CPU ticks of a process: user + system, and with "children", those of its exited children.
cpu_ticks() { # pid [children]
    local stat
    stat=$(sed 's/.*) //' "/proc/$1/stat")
    # After the name: field 1 is state; utime, stime, cutime, cstime are fields 12-15.
    if [[ ${2:-} == children ]]; then
        awk '{print $12 + $13 + $14 + $15}' <<<"$stat"
    else
        awk '{print $12 + $13}' <<<"$stat"
    fi
}
server_ticks() { # port
    if [[ $1 == 5433 ]]; then
        cpu_ticks "$server"
    else
        local total pid
        total=$(cpu_ticks "$postmaster" children)
        for pid in $(pgrep -P "$postmaster"); do
            total=$((total + $(cpu_ticks "$pid" 2>/dev/null || echo 0)))
        done
        echo "$total"
    fi
}

args_of() { # workload
    case "$1" in
        select) echo "-S -M prepared" ;;
        tpcb) echo "-M prepared" ;;
        pipeline) echo "-M prepared -f $work/pipeline.sql" ;;
        *) echo "unknown workload $1" >&2; exit 2 ;;
    esac
}
statements_of() { # workload -> statements per transaction
    case "$1" in select) echo 1 ;; tpcb) echo 7 ;; pipeline) echo 10 ;; esac
}

run() { # port workload clients -> "tps server_us_per_stmt pgbench_us_per_stmt p50_ms p99_ms"
    local port=$1 workload=$2 clients=$3 threads=2 out before after log
    ((clients < 2)) && threads=1
    log="$work/log"
    rm -f "$log".*
    local logging=()
    ((clients == 1)) && logging=(--log --log-prefix="$log")
    before=$(server_ticks "$port")
    # shellcheck disable=SC2046
    /usr/bin/time -f '%U %S' -o "$work/client-time" \
        pgbench -h 127.0.0.1 -p "$port" -U postgres -c "$clients" -j "$threads" -T "$seconds" -n \
        $(args_of "$workload") "${logging[@]}" postgres >"$work/out" 2>&1 || true
    sleep 0.5 # backends that ended are reaped (and counted in the postmaster's children)
    after=$(server_ticks "$port")
    local tps processed failed
    tps=$(awk '/^tps/ {print $3}' "$work/out")
    processed=$(awk '/number of transactions actually processed/ {split($NF, a, "/"); print a[1]}' "$work/out")
    failed=$(awk '/number of failed transactions/ {print $5}' "$work/out")
    if [[ -z $tps || -z $processed || ${failed:-0} != 0 ]]; then
        echo "port $port $workload c$clients: pgbench failed:" >&2
        cat "$work/out" >&2
        echo "0 0 0 - -"
        return
    fi
    local statements=$((processed * $(statements_of "$workload")))
    local server_us client_us p50=- p99=-
    server_us=$(echo "($after - $before) / $ticks * 1000000 / $statements" | bc -l)
    client_us=$(awk -v t="$ticks" -v n="$statements" '{print ($1 + $2) * 1000000 / n}' "$work/client-time")
    if ((clients == 1)); then
        read -r p50 p99 < <(cat "$log".* | awk '{print $3}' | sort -n |
            awk '{a[NR]=$1} END {printf "%.3f %.3f\n", a[int(NR*0.5)+1]/1000, a[int(NR*0.99)+1]/1000}')
    fi
    echo "$tps $server_us $client_us $p50 $p99"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); ${seconds}s per run; PostgreSQL 15 synchronous_commit=off, Overtake in memory"
printf '%-9s %7s | %10s %10s %6s | %9s %9s | %9s %9s | %s\n' workload clients "pg tps" "ot tps" ratio \
    "pg us/st" "ot us/st" "pgb@pg" "pgb@ot" "1 client p50/p99 ms: postgres, overtake"
[[ -n $csv ]] && echo "workload,clients,server,tps,server_us_per_statement,pgbench_us_per_statement,p50_ms,p99_ms" >"$csv"
for workload in $workloads; do
    for clients in $clients_list; do
        read -r pg_tps pg_us pg_client pg_p50 pg_p99 < <(run 5432 "$workload" "$clients")
        read -r ot_tps ot_us ot_client ot_p50 ot_p99 < <(run 5433 "$workload" "$clients")
        ratio=$(echo "if ($pg_tps > 0) $ot_tps / $pg_tps else 0" | bc -l)
        latency=""
        ((clients == 1)) && latency="$pg_p50/$pg_p99, $ot_p50/$ot_p99"
        printf '%-9s %7d | %10.0f %10.0f %6.2f | %9.1f %9.1f | %9.1f %9.1f | %s\n' "$workload" "$clients" \
            "$pg_tps" "$ot_tps" "$ratio" "$pg_us" "$ot_us" "$pg_client" "$ot_client" "$latency"
        if [[ -n $csv ]]; then
            echo "$workload,$clients,postgres,$pg_tps,$pg_us,$pg_client,$pg_p50,$pg_p99" >>"$csv"
            echo "$workload,$clients,overtake,$ot_tps,$ot_us,$ot_client,$ot_p50,$ot_p99" >>"$csv"
        fi
    done
done
[[ -z $plot ]] || "$overtake" plot wire "$csv" --plot "$plot"

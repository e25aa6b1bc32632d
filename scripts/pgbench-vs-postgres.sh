#!/bin/bash
# pgbench against Overtake and PostgreSQL 15 on this machine, in alternating runs.
#
#   scripts/pgbench-vs-postgres.sh [seconds per run] [rounds] [synchronous_commit: off|on]
#
# Starts a throwaway PostgreSQL cluster (initdb in a temporary directory, as the `postgres` user,
# port 5432, trust authentication on loopback) and `overtake serve` (release build, port 5433; in
# memory against synchronous_commit=off, kept in a directory with sync commits against on),
# initializes both with `pgbench -i -s 1`, then alternates: TPC-B with 8 clients and 2 threads
# (-M prepared), and the select-only script (-S). Prints one line per run and the ratios. With
# `on`, each round also runs TPC-B with one client and pgbench's per-statement latencies (-r), and
# prints the mean latency of its END (the durable commit) on each server.
set -euo pipefail
seconds=${1:-10}
rounds=${2:-3}
sync=${3:-off}
source "$(dirname "$0")/servers.sh"
start_postgres -c synchronous_commit="$sync" -c max_connections=50
kept=(--in-memory)
[[ "$sync" == on ]] && kept=(--data-dir "$work/overtake" --durability sync)
start_overtake "${kept[@]}"
pgbench -h 127.0.0.1 -p 5432 -U postgres -i -s 1 -q postgres >/dev/null 2>&1
pgbench -h 127.0.0.1 -p 5433 -U postgres -i -s 1 -q postgres >/dev/null 2>&1
# Mean latency of END (ms) in a one-client TPC-B run, from pgbench's per-statement report.
end_latency() { # port
    pgbench -h 127.0.0.1 -p "$1" -U postgres -c 1 -T "$seconds" -M prepared -n -r postgres 2>&1 \
        | awk '$NF == "END;" {print $1}'
}
run() { # port, extra args -> tps
    pgbench -h 127.0.0.1 -p "$1" -U postgres -c 8 -j 2 -T "$seconds" -M prepared -n "${@:2}" postgres 2>&1 \
        | awk '/^tps/ {print $3} /failed transactions/ && $5 != "0" {print "FAILED:" $0 > "/dev/stderr"}'
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); synchronous_commit=$sync (PostgreSQL), $([[ "$sync" == on ]] && echo "kept, sync commits" || echo "in memory") (Overtake); ${seconds}s per run"
for r in $(seq 1 "$rounds"); do
    pg_b=$(run 5432); ot_b=$(run 5433)
    pg_s=$(run 5432 -S); ot_s=$(run 5433 -S)
    printf 'round %d  TPC-B: postgres %8.0f  overtake %8.0f  ratio %.2f   select-only: postgres %8.0f  overtake %8.0f  ratio %.2f\n' \
        "$r" "$pg_b" "$ot_b" "$(echo "$ot_b / $pg_b" | bc -l)" "$pg_s" "$ot_s" "$(echo "$ot_s / $pg_s" | bc -l)"
    if [[ "$sync" == on ]]; then
        pg_e=$(end_latency 5432); ot_e=$(end_latency 5433)
        printf 'round %d  durable END at 1 client: postgres %.3f ms  overtake %.3f ms  ratio %.2f\n' \
            "$r" "$pg_e" "$ot_e" "$(echo "$ot_e / $pg_e" | bc -l)"
    fi
done

# Sourced (after servers.sh) by the comparison scripts that drive go-tpc, unchanged: it finds
# go-tpc, loads a database with it, and reads its summaries.
#
#   gotpc PORT DB COMMAND ARGS...         go-tpc's COMMAND (tpcc or ch) against the server on
#                                         PORT, database DB, one warehouse, as user postgres
#                                         (ARGS give --conn-params and the rest)
#   gotpc_load PORT DB THREADS [ch]       loads DB: made first on PostgreSQL ($pg_port; Overtake
#                                         has one database, whatever it is called), `tpcc
#                                         prepare` (and `ch prepare` if asked), ANALYZE for both
#                                         planners, then THREADS TPC-C threads for 3 s unreported:
#                                         the first run after a load otherwise pays for what the
#                                         load left behind (cold caches, background ANALYZE)
#   gotpc_mix_figures LOG SECONDS         one run's figures from its log, comma-separated:
#       tp_per_sec,p50_us,p90_us,p95_us,p99_us,p999_us,max_us,ap_queries,seconds,errors
#                                         (TP: all five transactions per second; latency:
#                                         New-Order's percentiles; ap_queries: the analytic
#                                         queries that completed; errors: lines that say so)
#
# Exits saying how to install go-tpc (1.0.12 or newer speaks PostgreSQL) when it is neither at
# $GO_TPC nor on PATH.
go_tpc=${GO_TPC:-$(command -v go-tpc || true)}
if [[ -z $go_tpc || ! -x $go_tpc ]]; then
    echo "go-tpc not found: go install github.com/pingcap/go-tpc/cmd/go-tpc@v1.0.12 (or set GO_TPC)" >&2
    exit 2
fi

gotpc() {
    local port=$1 db=$2
    shift 2
    "$go_tpc" "$1" -d postgres -H 127.0.0.1 -P "$port" -U postgres -D "$db" --warehouses 1 "${@:2}"
}

gotpc_load() {
    local port=$1 db=$2 threads=$3 log="$work/prepare.log"
    [[ $port == "$pg_port" ]] &&
        psql -h 127.0.0.1 -p "$port" -U postgres -X -q -c "CREATE DATABASE $db" postgres >/dev/null
    gotpc "$port" "$db" tpcc --conn-params sslmode=disable prepare -T 2 --no-check >"$log" 2>&1 ||
        { tail -5 "$log" >&2; exit 1; }
    if [[ ${4:-} == ch ]]; then
        gotpc "$port" "$db" ch --conn-params sslmode=disable prepare >"$log" 2>&1 ||
            { tail -5 "$log" >&2; exit 1; }
    fi
    psql -h 127.0.0.1 -p "$port" -U postgres -X -q -c "ANALYZE" "$db" >/dev/null
    gotpc "$port" "$db" tpcc --conn-params sslmode=disable run -T "$threads" --time 3s \
        --interval 1000s >"$work/warm.log" 2>&1 || true
}

gotpc_mix_figures() {
    awk -v s="$2" '
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
        }' "$1"
}

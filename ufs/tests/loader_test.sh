#!/bin/sh
# The loader's arguments and its checks of the machine, on any host: bad arguments exit 2 with
# the usage, and a machine that cannot load a sched_ext scheduler gets exit 1 and a message
# naming what is missing (sched_ext, BTF, privileges, or another scheduler already loaded).
set -u
ufs=${OVERTAKE_UFS:?set OVERTAKE_UFS to the loader}
failures=0
expect() { # expect STATUS PATTERN ARGS...: runs the loader, checks its status and stderr
    want=$1 pattern=$2
    shift 2
    err=$("$ufs" "$@" 2>&1 > /dev/null)
    got=$?
    if [ "$got" -ne "$want" ] || { [ -n "$pattern" ] && ! printf '%s' "$err" | grep -q -- "$pattern"; }; then
        echo "loader_test: overtake-ufs $*: status $got (want $want), said: $err" >&2
        failures=$((failures + 1))
    fi
}
expect 2 "unknown argument --bogus" --bogus
expect 2 "--slice-us needs a value" --slice-us
expect 2 "expected microseconds from 100 to 100000" --slice-us 0
expect 2 "expected microseconds from 100 to 100000" --slice-us 12x
expect 2 "expected microseconds from 100 to 100000" --slice-us -5
expect 2 "expected milliseconds from 100 to 20000" --starve-ms 50
expect 2 "--starve-ms needs a value" --starve-ms
expect 2 "expected an absolute path" --pin-dir relative
expect 0 "" --help
if [ ! -e /sys/kernel/sched_ext/state ]; then
    expect 1 "has no sched_ext.*CONFIG_SCHED_CLASS_EXT" --check
elif [ "$(cat /sys/kernel/sched_ext/state)" != disabled ]; then
    expect 1 "already" --check
elif [ "$(id -u)" -ne 0 ]; then
    expect 1 "needs root" --check
else
    expect 0 "" --check
fi
[ "$failures" -eq 0 ] && echo "loader_test: ok"
[ "$failures" -eq 0 ]

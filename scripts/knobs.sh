# Sourced (after servers.sh) by the comparison scripts: the knobs PostgreSQL's users have for
# priority, applied to its backends (on $pg_port), each found by its session's application_name.
#
#   backends APP             the pids of the backends whose application_name is APP
#   renice_backends APP N    nice N (with autogroup on, each backend is its own autogroup: this
#                            changes little, which is what users of it get)
#   chrt_backends APP ARGS   chrt's ARGS on each backend, e.g. `-i 0` (SCHED_IDLE), `-f 99`
#   weigh_backends APP W     moves them into the CPU cgroup overtake-knob-APP, of weight W
#                            (cgroup v2 cpu.weight, else v1 cpu.shares 2W; 1 to 10000)
#   remove_knob_groups       empties and removes every overtake-knob-* cgroup
#
# A backend that ended meanwhile (a client's pool closes connections) has nothing to change.
backends() {
    psql -h 127.0.0.1 -p "$pg_port" -U postgres -X -At \
        -c "select pid from pg_stat_activity where application_name = '$1'" postgres
}

renice_backends() {
    local p
    for p in $(backends "$1"); do renice -n "$2" -p "$p" >/dev/null 2>&1 || true; done
}

chrt_backends() {
    local app=$1 p
    shift
    for p in $(backends "$app"); do chrt "$@" -p "$p" 2>/dev/null || true; done
}

knob_cgroup_base() { # where CPU cgroups are made: v2 if the machine has one, else v1
    if [[ -f /sys/fs/cgroup/cgroup.controllers ]] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
        grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control ||
            echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
        echo /sys/fs/cgroup
    elif [[ -d /sys/fs/cgroup/cpu ]]; then
        echo /sys/fs/cgroup/cpu
    else
        echo "no writable CPU cgroup on this machine" >&2
        return 1
    fi
}

weigh_backends() {
    local base dir p
    base=$(knob_cgroup_base)
    dir="$base/overtake-knob-$1"
    mkdir -p "$dir"
    if [[ -f $dir/cpu.weight ]]; then
        echo "$2" >"$dir/cpu.weight"
    else
        echo "$(($2 * 2))" >"$dir/cpu.shares"
    fi
    for p in $(backends "$1"); do echo "$p" >"$dir/cgroup.procs" 2>/dev/null || true; done
}

remove_knob_groups() {
    # Their names are fixed, not remembered: a background job may have made them. A cgroup can
    # be removed once empty, so its processes are moved back to the root first.
    local base g p
    for base in /sys/fs/cgroup /sys/fs/cgroup/cpu; do
        for g in "$base"/overtake-knob-*; do
            [[ -d $g ]] || continue
            for p in $(cat "$g/cgroup.procs" 2>/dev/null); do echo "$p" >"$base/cgroup.procs" 2>/dev/null || true; done
            rmdir "$g" 2>/dev/null || true
        done
    done
}

#!/bin/sh
# Runs inside the test VM (scripts/ufs-vm-test.sh) as init: mounts what the experiments need, runs
# them under the kernel's schedulers, loads overtake-ufs, runs them again and the hint experiment,
# unloads it, and reports on the console in lines starting "UFSVM <key> <value>". Powers off.
report() { echo "UFSVM $1 $2"; }
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2> /dev/null
mount -t tmpfs tmp /tmp
mount -t bpf bpf /sys/fs/bpf
mount -t cgroup2 cgroup2 /sys/fs/cgroup
echo +cpu > /sys/fs/cgroup/cgroup.subtree_control
# This shell and everything it starts (the experiments' coordinating threads, the loader) are
# time-sensitive: a background coordinator could be starved by the time-sensitive sessions it
# is supposed to stop.
mkdir /sys/fs/cgroup/ts-harness
echo $$ > /sys/fs/cgroup/ts-harness/cgroup.procs
D=${UFS_DURATION:-8}
report kernel "$(uname -r)"
report cpus "$(nproc)"

report tiers "$(overtake compare tiers --schedulers eevdf,idle,fifo,rr --duration "$D" --json 2> /tmp/os.err)"
sed 's/^/UFSVM os-stderr /' /tmp/os.err

overtake-ufs > /tmp/loader.out 2>&1 &
loader=$!
i=0
while [ "$(cat /sys/kernel/sched_ext/state)" != enabled ] && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
done
report state "$(cat /sys/kernel/sched_ext/state)"
loaded_at=$(date +%s)
report ops "$(cat /sys/kernel/sched_ext/root/ops 2> /dev/null)"
report on-ext "$(grep -c 'ext.enabled.*1' /proc/1/sched 2> /dev/null)"
report tiers "$(overtake compare tiers --schedulers ufs --duration "$D" --json 2> /tmp/ufs.err)"
sed 's/^/UFSVM ufs-stderr /' /tmp/ufs.err
report hints "$(overtake compare hints --json 2> /tmp/hints.err)"
sed 's/^/UFSVM hints-stderr /' /tmp/hints.err
report state-before-unload "$(cat /sys/kernel/sched_ext/state)"
report ufs-seconds "$(($(date +%s) - loaded_at))"
kill -INT $loader
wait $loader
report loader-exit $?
sed 's/^/UFSVM loader /' /tmp/loader.out
report after "$(cat /sys/kernel/sched_ext/state)"
# Anything sched_ext said besides loading and unloading on request (an ejection, an error).
report scx-errors "$(dmesg | grep sched_ext | grep -v 'BPF scheduler "overtake_ufs" enabled$' | grep -v 'disabled (unregistered from user space)$' | tr '\n' ' ')"
dmesg | grep -i sched_ext | sed 's/^/UFSVM dmesg /'
poweroff -f

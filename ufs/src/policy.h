/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The decisions of overtake-ufs that do not need the kernel: a group's tier from its cgroup's
 * name, time scaled by weight, how far back a waking task's virtual runtime may lag, and which
 * busy CPU a time-sensitive task goes to. Compiled into the BPF scheduler and into the host unit
 * test (tests/policy_test.c), so the cases the tests check are the code the kernel runs.
 *
 * Must never: touch kernel state, loop without a bound, or divide by a weight it did not clamp.
 */
#ifndef OVERTAKE_UFS_POLICY_H
#define OVERTAKE_UFS_POLICY_H

#ifndef __VMLINUX_H__
#include <stdbool.h>
#include <stdint.h>
typedef uint64_t u64;
typedef uint32_t u32;
#endif

enum ufs_tier {
	UFS_BACKGROUND = 0,
	UFS_TIME_SENSITIVE = 1,
};

/* What a CPU is running, as the scheduler last saw it. */
enum ufs_running {
	UFS_RUNNING_NOTHING = 0,
	UFS_RUNNING_BACKGROUND = 1,
	UFS_RUNNING_TIME_SENSITIVE = 2,
};

/* cgroup weights (cpu.weight) run from 1 to 10000; 100 is the default. */
#define UFS_WEIGHT_MIN 1
#define UFS_WEIGHT_MAX 10000
#define UFS_WEIGHT_DEFAULT 100

/*
 * The tier of a group: time-sensitive if the last component of its cgroup path starts with
 * "ts-" (what Overtake names its time-sensitive groups: ts-<weight>[-n]), background otherwise,
 * the root cgroup and every other group included. `name` is the cgroup directory's name, at most
 * `len` bytes, NUL-terminated or not.
 */
static inline enum ufs_tier ufs_tier_of_name(const char *name, u32 len)
{
	if (len < 3)
		return UFS_BACKGROUND;
	if (name[0] == 't' && name[1] == 's' && name[2] == '-')
		return UFS_TIME_SENSITIVE;
	return UFS_BACKGROUND;
}

static inline u32 ufs_clamp_weight(u32 weight)
{
	if (weight < UFS_WEIGHT_MIN)
		return UFS_WEIGHT_MIN;
	if (weight > UFS_WEIGHT_MAX)
		return UFS_WEIGHT_MAX;
	return weight;
}

/*
 * Virtual time for `ns` nanoseconds of CPU at `weight`: a group of weight 200 advances half as
 * fast as one of weight 100 and so gets twice the CPU while both want it.
 */
static inline u64 ufs_scale(u64 ns, u32 weight)
{
	return ns * UFS_WEIGHT_DEFAULT / ufs_clamp_weight(weight);
}

/*
 * The virtual time a task (or group) is queued with: its own, but never more than one slice
 * behind `now` (the virtual time of what ran last in its tier), so that a task that slept a long
 * time does not come back with credit to hold the CPU for as long as it slept.
 */
static inline u64 ufs_clamp_vtime(u64 vtime, u64 now, u64 slice)
{
	u64 floor = now > slice ? now - slice : 0;

	return vtime < floor ? floor : vtime;
}

/*
 * Where a time-sensitive task that found no idle CPU goes; lower is better. A CPU running
 * background work (or nothing the scheduler knows of) is preempted at once; among CPUs running
 * time-sensitive work, the one with the fewest time-sensitive tasks queued; the task's previous
 * CPU wins ties (its cache is warm).
 */
static inline u64 ufs_busy_cpu_rank(enum ufs_running running, u32 ts_queued, bool is_prev)
{
	u64 rank = (u64)ts_queued * 2 + (is_prev ? 0 : 1);

	if (running == UFS_RUNNING_TIME_SENSITIVE)
		rank += 1ULL << 40;
	return rank;
}

/*
 * Whether a time-sensitive task with virtual time `vtime`, queued on a CPU running `running`
 * (whose task had virtual time `running_vtime` when it started), preempts what runs there:
 * background work always; time-sensitive work only if the arriving task is behind it, as a task
 * that slept comes back with up to a slice of credit (without this, a bursty task waking next to
 * a CPU-bound one of its tier waits out the bound one's slice every time, and gets far less than
 * its share).
 */
static inline bool ufs_preempts(enum ufs_running running, u64 vtime, u64 running_vtime)
{
	if (running == UFS_RUNNING_BACKGROUND)
		return true;
	return running == UFS_RUNNING_TIME_SENSITIVE && vtime < running_vtime;
}

#endif

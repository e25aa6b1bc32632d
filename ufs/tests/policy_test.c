// SPDX-License-Identifier: GPL-2.0-only
/*
 * The scheduler's decisions (src/policy.h) on the host: the cases Overtake's own tiers follow
 * (priority::Tier::of_cgroup, sched::tiers::shares), so the two schedulers agree on what a group
 * is and what its weight buys.
 */
#include <stdio.h>
#include <string.h>

#include "policy.h"

static int failures;

#define CHECK(cond)                                                       \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                       \
		}                                                         \
	} while (0)

static enum ufs_tier tier(const char *name)
{
	return ufs_tier_of_name(name, (u32)strlen(name) + 1);
}

static void tiers_come_from_the_cgroup_name(void)
{
	CHECK(tier("ts-10000") == UFS_TIME_SENSITIVE);
	CHECK(tier("ts-100-2") == UFS_TIME_SENSITIVE);
	CHECK(tier("ts-") == UFS_TIME_SENSITIVE);
	CHECK(tier("bg-1") == UFS_BACKGROUND);
	CHECK(tier("overtake-42") == UFS_BACKGROUND);
	CHECK(tier("") == UFS_BACKGROUND);
	CHECK(tier("ts") == UFS_BACKGROUND);
	CHECK(tier("TS-1") == UFS_BACKGROUND);
	CHECK(tier("xts-1") == UFS_BACKGROUND);
	/* A name cut short by the reader (len < 3) is never taken for "ts-". */
	CHECK(ufs_tier_of_name("ts-", 2) == UFS_BACKGROUND);
}

static void weights_scale_time_and_are_clamped(void)
{
	CHECK(ufs_scale(1000, 100) == 1000);
	CHECK(ufs_scale(1000, 200) == 500);
	CHECK(ufs_scale(1000, 50) == 2000);
	/* 2:3 — the shares experiment: equal virtual time means CPU in the ratio of the weights. */
	CHECK(ufs_scale(2000, 2) == ufs_scale(3000, 3));
	CHECK(ufs_scale(6670, 6670) == ufs_scale(10000, 10000));
	/* Out of range weights are clamped, never divided by zero. */
	CHECK(ufs_scale(1000, 0) == ufs_scale(1000, 1));
	CHECK(ufs_scale(1000, 20000) == ufs_scale(1000, 10000));
	CHECK(ufs_clamp_weight(0) == 1 && ufs_clamp_weight(10001) == 10000);
}

static void a_sleeper_keeps_at_most_one_slice_of_credit(void)
{
	CHECK(ufs_clamp_vtime(100, 10000, 1000) == 9000);
	CHECK(ufs_clamp_vtime(9500, 10000, 1000) == 9500);
	CHECK(ufs_clamp_vtime(12000, 10000, 1000) == 12000);
	CHECK(ufs_clamp_vtime(0, 500, 1000) == 0);
}

/* The CPU of `n` a time-sensitive task goes to when none is idle (as the scheduler's loop). */
static int pick(int n, const enum ufs_running *running, const u32 *queued, int prev)
{
	u64 best_rank = ~0ULL;
	int best = prev;

	for (int cpu = 0; cpu < n; cpu++) {
		u64 rank = ufs_busy_cpu_rank(running[cpu], queued[cpu], cpu == prev);

		if (rank < best_rank) {
			best_rank = rank;
			best = cpu;
		}
	}
	return best;
}

static void time_sensitive_work_preempts_background_work_first(void)
{
	enum ufs_running r[3] = { UFS_RUNNING_TIME_SENSITIVE, UFS_RUNNING_BACKGROUND,
				  UFS_RUNNING_TIME_SENSITIVE };
	u32 q[3] = { 0, 5, 0 };

	/* A CPU running background work wins however much is queued there... */
	CHECK(pick(3, r, q, 0) == 1);
	/* ...and is always preempted; time-sensitive work only by a task behind it. */
	CHECK(ufs_preempts(UFS_RUNNING_BACKGROUND, 5000, 1000));
	CHECK(ufs_preempts(UFS_RUNNING_TIME_SENSITIVE, 900, 1000));
	CHECK(!ufs_preempts(UFS_RUNNING_TIME_SENSITIVE, 1000, 1000));
	CHECK(!ufs_preempts(UFS_RUNNING_TIME_SENSITIVE, 1100, 1000));
	CHECK(!ufs_preempts(UFS_RUNNING_NOTHING, 0, 1000));
	/* All busy with time-sensitive work: the shortest queue, the previous CPU on ties. */
	r[1] = UFS_RUNNING_TIME_SENSITIVE;
	q[0] = 2;
	q[1] = 1;
	q[2] = 1;
	CHECK(pick(3, r, q, 2) == 2);
	CHECK(pick(3, r, q, 0) == 1);
	q[0] = 1;
	CHECK(pick(3, r, q, 0) == 0);
}

int main(void)
{
	tiers_come_from_the_cgroup_name();
	weights_scale_time_and_are_clamped();
	a_sleeper_keeps_at_most_one_slice_of_credit();
	time_sensitive_work_preempts_background_work_first();
	if (failures) {
		fprintf(stderr, "policy_test: %d failed\n", failures);
		return 1;
	}
	printf("policy_test: ok\n");
	return 0;
}

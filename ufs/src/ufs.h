/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the scheduler and its loader share: constants, the hint map's pin name, and the layout of
 * the exit record and counters the loader reads from the scheduler's memory.
 */
#ifndef OVERTAKE_UFS_H
#define OVERTAKE_UFS_H

#define UFS_MAX_CPUS 256
/* Background groups with a queue of their own; more share one queue (see ufs.bpf.c). */
#define UFS_MAX_BG_GROUPS 64
#define UFS_MAX_GROUPS 4096
/* Waiting threads the hint map can describe at once. */
#define UFS_MAX_HINTS 1024
/* Hints looked at per scheduling decision (the first found; a waiter names one holder). */
#define UFS_HINT_SCAN 4

/* Per-CPU queues of time-sensitive work (custom DSQ ids; cgroup ids stay far below). */
#define UFS_TS_DSQ_BASE (1ULL << 62)
/* Background work of groups beyond UFS_MAX_BG_GROUPS. */
#define UFS_OTHER_BG_DSQ ((1ULL << 62) - 1)

#define UFS_EXIT_REASON_LEN 128
#define UFS_EXIT_MSG_LEN 1024

struct ufs_exit_record {
	int kind; /* 0 while running; sched_ext's exit kind once it stopped */
	long long exit_code;
	char reason[UFS_EXIT_REASON_LEN];
	char msg[UFS_EXIT_MSG_LEN];
};

struct ufs_counters {
	unsigned long long ts_direct;   /* time-sensitive wake-ups placed on an idle CPU */
	unsigned long long ts_queued;   /* queued on a busy CPU */
	unsigned long long ts_preempt;  /* ... whose running task it preempted (kicked) */
	unsigned long long bg_queued;   /* background enqueues into group queues */
	unsigned long long bg_dispatch; /* background tasks a CPU pulled */
	unsigned long long ts_helped;   /* time-sensitive tasks a CPU took from another's queue */
	unsigned long long boosted;     /* enqueues of a hinted lock holder as time-sensitive */
	unsigned long long rescued;     /* hinted holders pulled out of a background queue */
	unsigned long long starving_run; /* background tasks run by the starvation bound */
};

/* The scheduler's settings (read-only once loaded). */
struct ufs_config {
	unsigned long long slice_ns;
	unsigned long long starve_ns; /* a background task waits at most this long for a slice */
	unsigned int nr_cpus;
};

/* What the scheduler tells its loader. */
struct ufs_shared {
	struct ufs_exit_record exit_record;
	struct ufs_counters counters;
};

#endif

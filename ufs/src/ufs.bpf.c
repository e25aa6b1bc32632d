/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * overtake-ufs: a sched_ext scheduler with two tiers and weights (UFS, "an unfair scheduler").
 *
 * Every thread of the machine is in one of two tiers, read from its cgroup's name: "ts-*" is
 * time-sensitive, anything else background (kernel threads count as time-sensitive: they are
 * short and other work waits for them). Time-sensitive work always goes first:
 *
 *  - A waking time-sensitive task goes straight to a CPU: an idle one, else one running
 *    background work, which is kicked so the background task stops at once, else the one with
 *    the fewest time-sensitive tasks queued. Each CPU keeps its time-sensitive tasks in its own
 *    queue ordered by virtual runtime; a CPU with none takes from another's.
 *  - Background tasks wait in their group's queue (ordered by virtual runtime) and run only when
 *    a CPU has no time-sensitive work: a CPU about to idle pulls from the group furthest behind
 *    its weighted share, and a CPU that is idle when background work arrives is woken to pull.
 *  - Within a tier, CPU time is shared by cgroup weight (cpu.weight): time is charged as
 *    ns * 100 / weight, per task in both tiers and per group among background groups.
 *  - Hints: user space writes "thread W waits for a lock thread H holds" into the `hints` map;
 *    while W is time-sensitive, H is scheduled as time-sensitive, so a third time-sensitive task
 *    cannot keep the lock's holder (and with it W) off the CPU.
 *
 * If the scheduler misbehaves (a runnable task not run within sched_ext's timeout, an error it
 * reports itself) sched_ext unloads it and every thread returns to the kernel's own scheduler.
 * Background work starved by time-sensitive work for the whole timeout counts as such a stall:
 * that is the safety net, not a goal.
 *
 * Must never: let a background task run while a time-sensitive one waits for the same CPU
 * (beyond the kick's latency), sleep, or loop without a bound.
 */
#include "scx.h"
#include "policy.h"
#include "ufs.h"

char _license[] SEC("license") = "GPL";

/* Set by the loader before loading (a section of its own: the loader finds it by name). */
const volatile struct ufs_config ufs_config SEC(".rodata.config") = {
	.slice_ns = 5000000,
	.starve_ns = 2000000000,
	.nr_cpus = 1,
};
#define slice_ns ufs_config.slice_ns
#define nr_cpus ufs_config.nr_cpus
#define starve_ns ufs_config.starve_ns

/* Read by the loader while the scheduler runs (also a section of its own). */
struct ufs_shared shared SEC(".data.shared");
#define exit_record shared.exit_record
#define ufs_counters shared.counters

/* Virtual time of what ran last in each tier (clamps a waking task's credit). */
static u64 vtime_now[2];
/* Virtual time of the background group that ran last (clamps a group's credit). */
static u64 bg_group_vtime_now;
/* What each CPU runs: an enum ufs_running, and the running task's virtual time at its start. */
static u8 cpu_running[UFS_MAX_CPUS];
static u64 cpu_vtime[UFS_MAX_CPUS];
/* Background groups with a queue of their own (cgroup ids; 0 is a free slot). */
static u64 bg_slots[UFS_MAX_BG_GROUPS];

struct group {
	u64 vtime;  /* background groups: weighted CPU time, for choosing among groups */
	u32 weight; /* cpu.weight */
	u32 tier;   /* enum ufs_tier */
	s32 slot;   /* index in bg_slots, or -1: queued in UFS_OTHER_BG_DSQ */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, UFS_MAX_GROUPS);
	__type(key, u64);
	__type(value, struct group);
} groups SEC(".maps");

/* Waiting thread id -> id of the thread holding what it waits for. Written by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, UFS_MAX_HINTS);
	__type(key, u32);
	__type(value, u32);
} hints SEC(".maps");

struct task_ctx {
	u64 vtime;     /* weighted CPU time, for order within a queue */
	u64 cgid;      /* the group it was last queued for */
	u64 bg_dsq;    /* the background queue it waits in, 0 if none */
	u32 weight;    /* its group's weight when last queued */
	u32 tier;      /* the tier it was last queued in (boost included) */
	u32 own_tier;  /* its group's tier (boost not included) */
	u64 started;   /* when it last started running */
	u64 queued_at; /* when it was last queued in a background queue */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

static struct task_ctx *ctx_of(struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, p, 0, 0);
}

static u64 ts_dsq(s32 cpu)
{
	return UFS_TS_DSQ_BASE + (u64)cpu;
}

static void set_running(s32 cpu, u8 what, u64 vtime)
{
	u64 i = (u32)cpu;

	/* Checked on the register that indexes, so the verifier sees the bound. */
	barrier_var(i);
	if (i < UFS_MAX_CPUS) {
		cpu_running[i] = what;
		cpu_vtime[i] = vtime;
	}
}

static u64 vtime_running_on(s32 cpu)
{
	u64 i = (u32)cpu;

	barrier_var(i);
	if (i < UFS_MAX_CPUS)
		return cpu_vtime[i];
	return 0;
}

static u8 running_on(s32 cpu)
{
	u64 i = (u32)cpu;

	barrier_var(i);
	if (i < UFS_MAX_CPUS)
		return cpu_running[i];
	return UFS_RUNNING_NOTHING;
}

static void free_bg_slot(s32 slot)
{
	u64 i = (u32)slot;

	barrier_var(i);
	if (i < UFS_MAX_BG_GROUPS)
		bg_slots[i] = 0;
}

/*
 * Whether `t`, queued in a shared queue, may be moved onto `cpu`'s local queue. A direct move
 * (scx_bpf_dsq_move to SCX_DSQ_LOCAL) of a task that may not run there is an error that makes
 * sched_ext unload the scheduler, unlike scx_bpf_dsq_move_to_local, which skips such tasks:
 * threads pinned to a CPU (Overtake's workers) and tasks with migration disabled are common.
 */
static bool may_move_here(struct task_struct *t, s32 cpu)
{
	if (bpf_core_field_exists(t->migration_disabled) && t->migration_disabled)
		return false;
	return bpf_cpumask_test_cpu(cpu, t->cpus_ptr);
}

/* ---- hints ---- */

struct hint_scan {
	u32 holder;                    /* 0: collect every hint; else only hints naming it */
	u32 n;
	u32 waiter[UFS_HINT_SCAN];
	u32 holder_of[UFS_HINT_SCAN];
};

static long collect_hint(struct bpf_map *map, u32 *waiter, u32 *holder, struct hint_scan *scan)
{
	u32 i = scan->n;

	if (scan->holder && *holder != scan->holder)
		return 0;
	if (i >= UFS_HINT_SCAN)
		return 1;
	scan->waiter[i] = *waiter;
	scan->holder_of[i] = *holder;
	scan->n = i + 1;
	return scan->n >= UFS_HINT_SCAN;
}

/* Whether the thread `tid` is time-sensitive in its own right (its last known group's tier). */
static bool thread_is_time_sensitive(u32 tid)
{
	struct task_struct *t = bpf_task_from_pid(tid);
	struct task_ctx *c;
	bool ts = false;

	if (!t)
		return false;
	c = bpf_task_storage_get(&task_ctxs, t, 0, 0);
	if (c)
		ts = c->own_tier == UFS_TIME_SENSITIVE;
	bpf_task_release(t);
	return ts;
}

/* Whether a time-sensitive thread waits for a lock `p` holds. */
static bool is_hinted_holder(struct task_struct *p)
{
	struct hint_scan scan = { .holder = p->pid };
	u32 i;

	bpf_for_each_map_elem(&hints, collect_hint, &scan, 0);
	bpf_for(i, 0, UFS_HINT_SCAN) {
		if (i >= scan.n)
			break;
		if (thread_is_time_sensitive(scan.waiter[i]))
			return true;
	}
	return false;
}

/*
 * A hinted holder that waits in a background queue would only be seen as time-sensitive at its
 * next enqueue, which never comes while time-sensitive work keeps every CPU: take it out of its
 * queue onto this CPU now.
 */
static void rescue_hinted_holders(s32 cpu)
{
	struct hint_scan scan = {};
	u32 i;

	bpf_for_each_map_elem(&hints, collect_hint, &scan, 0);
	bpf_for(i, 0, UFS_HINT_SCAN) {
		struct task_struct *h, *t;
		struct task_ctx *c;
		u32 holder;
		u64 dsq = 0;

		if (i >= scan.n)
			break;
		if (!thread_is_time_sensitive(scan.waiter[i]))
			continue;
		holder = scan.holder_of[i];
		h = bpf_task_from_pid(holder);
		if (!h)
			continue;
		c = bpf_task_storage_get(&task_ctxs, h, 0, 0);
		if (c)
			dsq = c->bg_dsq;
		bpf_task_release(h);
		if (!dsq)
			continue;
		bpf_for_each(scx_dsq, t, dsq, 0) {
			if (t->pid != holder)
				continue;
			if (may_move_here(t, cpu) && scx_bpf_dsq_move(BPF_FOR_EACH_ITER, t, SCX_DSQ_LOCAL, 0))
				__sync_fetch_and_add(&ufs_counters.rescued, 1);
			break;
		}
	}
}

/* ---- classification ---- */

/* Looks `p` up: its group's id, weight and tier, and the tier it runs in now. */
static u32 classify(struct task_struct *p, struct task_ctx *c)
{
	struct cgroup *cgrp = scx_bpf_task_cgroup(p);
	struct group *g;
	u64 cgid = cgrp->kn->id;

	bpf_cgroup_release(cgrp);
	g = bpf_map_lookup_elem(&groups, &cgid);
	c->cgid = cgid;
	c->weight = g ? g->weight : UFS_WEIGHT_DEFAULT;
	c->own_tier = g ? g->tier : UFS_BACKGROUND;
	if (p->flags & PF_KTHREAD)
		c->own_tier = UFS_TIME_SENSITIVE;
	c->tier = c->own_tier;
	if (c->tier == UFS_BACKGROUND && is_hinted_holder(p)) {
		c->tier = UFS_TIME_SENSITIVE;
		__sync_fetch_and_add(&ufs_counters.boosted, 1);
	}
	return c->tier;
}

/* ---- placement ---- */

/* The busy CPU a time-sensitive task goes to (see ufs_busy_cpu_rank). */
static s32 busy_cpu_for(struct task_struct *p, s32 prev_cpu)
{
	u64 best_rank = ~0ULL;
	s32 best = prev_cpu;
	u32 cpu;

	bpf_for(cpu, 0, nr_cpus) {
		u64 rank;

		if (cpu >= UFS_MAX_CPUS)
			break;
		if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			continue;
		rank = ufs_busy_cpu_rank(running_on(cpu), scx_bpf_dsq_nr_queued(ts_dsq(cpu)),
					 cpu == (u32)prev_cpu);
		if (rank < best_rank) {
			best_rank = rank;
			best = cpu;
		}
	}
	return best;
}

s32 BPF_STRUCT_OPS(ufs_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	struct task_ctx *c = ctx_of(p);
	bool idle = false;
	s32 cpu;

	if (!c)
		return prev_cpu;
	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);
	if (classify(p, c) == UFS_TIME_SENSITIVE) {
		if (idle) {
			c->vtime = ufs_clamp_vtime(c->vtime, vtime_now[UFS_TIME_SENSITIVE], slice_ns);
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
			__sync_fetch_and_add(&ufs_counters.ts_direct, 1);
			return cpu;
		}
		return busy_cpu_for(p, prev_cpu);
	}
	/* Background: an idle CPU found here is woken by enqueue to pull from the group queues. */
	return cpu;
}

static void enqueue_time_sensitive(struct task_struct *p, struct task_ctx *c, u64 enq_flags)
{
	s32 cpu = scx_bpf_task_cpu(p);
	u8 running = running_on(cpu);

	c->bg_dsq = 0;
	c->vtime = ufs_clamp_vtime(c->vtime, vtime_now[UFS_TIME_SENSITIVE], slice_ns);
	scx_bpf_dsq_insert_vtime(p, ts_dsq(cpu), slice_ns, c->vtime, enq_flags);
	__sync_fetch_and_add(&ufs_counters.ts_queued, 1);
	if (ufs_preempts(running, c->vtime, vtime_running_on(cpu))) {
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
		__sync_fetch_and_add(&ufs_counters.ts_preempt, 1);
	} else {
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	}
}

static void enqueue_background(struct task_struct *p, struct task_ctx *c, u64 enq_flags)
{
	struct group *g = bpf_map_lookup_elem(&groups, &c->cgid);
	u64 dsq = UFS_OTHER_BG_DSQ;
	s32 idle;

	if (g && g->slot >= 0) {
		dsq = c->cgid;
		/* A group coming back from idle gets no credit for the time it had nothing to run. */
		if (!scx_bpf_dsq_nr_queued(dsq))
			g->vtime = ufs_clamp_vtime(g->vtime, bg_group_vtime_now, slice_ns);
	}
	c->vtime = ufs_clamp_vtime(c->vtime, vtime_now[UFS_BACKGROUND], slice_ns);
	c->bg_dsq = dsq;
	c->queued_at = scx_bpf_now();
	scx_bpf_dsq_insert_vtime(p, dsq, slice_ns, c->vtime, enq_flags);
	__sync_fetch_and_add(&ufs_counters.bg_queued, 1);
	idle = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	if (idle >= 0)
		scx_bpf_kick_cpu(idle, SCX_KICK_IDLE);
}

void BPF_STRUCT_OPS(ufs_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *c = ctx_of(p);

	if (!c) {
		UFS_ERROR("task %d has no context", p->pid);
		return;
	}
	if (classify(p, c) == UFS_TIME_SENSITIVE)
		enqueue_time_sensitive(p, c, enq_flags);
	else
		enqueue_background(p, c, enq_flags);
}

/* The background group furthest behind its share that has work queued, or 0. */
static u64 background_group_to_run(void)
{
	u64 best = 0, best_vtime = ~0ULL;
	u32 i;

	bpf_for(i, 0, UFS_MAX_BG_GROUPS) {
		u64 cgid = bg_slots[i];
		struct group *g;

		if (!cgid || scx_bpf_dsq_nr_queued(cgid) <= 0)
			continue;
		g = bpf_map_lookup_elem(&groups, &cgid);
		if (g && g->vtime < best_vtime) {
			best_vtime = g->vtime;
			best = cgid;
		}
	}
	if (best)
		bg_group_vtime_now = best_vtime > bg_group_vtime_now ? best_vtime : bg_group_vtime_now;
	return best;
}

/* When a CPU next looks for starving background tasks. */
static u64 next_starvation_scan;

/* Moves the first task of `dsq` that has waited longer than starve_ns onto this CPU. */
static bool run_starving_of(u64 dsq, u64 now, s32 cpu)
{
	struct task_struct *t;

	bpf_for_each(scx_dsq, t, dsq, 0) {
		struct task_ctx *c = ctx_of(t);

		if (!c || now - c->queued_at < starve_ns || !may_move_here(t, cpu))
			continue;
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, t, SCX_DSQ_LOCAL, 0)) {
			__sync_fetch_and_add(&ufs_counters.starving_run, 1);
			return true;
		}
	}
	return false;
}

/*
 * The starvation bound: a background task that has waited starve_ns runs one slice, even while
 * time-sensitive work keeps every CPU busy. UFS itself is strict; without a bound, time-sensitive
 * work that saturates the machine for sched_ext's watchdog timeout (30 s) has the whole
 * scheduler unloaded for one starved thread. A few slices a second is what it costs.
 */
static bool run_starving_background(s32 cpu)
{
	u64 now = scx_bpf_now();
	u32 i;

	if (now < next_starvation_scan)
		return false;
	next_starvation_scan = now + starve_ns / 4;
	bpf_for(i, 0, UFS_MAX_BG_GROUPS) {
		u64 cgid = bg_slots[i];

		if (cgid && scx_bpf_dsq_nr_queued(cgid) > 0 && run_starving_of(cgid, now, cpu))
			return true;
	}
	return run_starving_of(UFS_OTHER_BG_DSQ, now, cpu);
}

/* Whether `prev`, whose slice ended, is time-sensitive and still wants the CPU. */
static bool time_sensitive_and_runnable(struct task_struct *prev)
{
	struct task_ctx *c;

	if (!prev || !(prev->scx.flags & SCX_TASK_QUEUED))
		return false;
	c = ctx_of(prev);
	return c && c->tier == UFS_TIME_SENSITIVE;
}

void BPF_STRUCT_OPS(ufs_dispatch, s32 cpu, struct task_struct *prev)
{
	u64 cgid;
	u32 other;

	rescue_hinted_holders(cpu);
	if (run_starving_background(cpu))
		return;
	if (scx_bpf_dsq_move_to_local(ts_dsq(cpu)))
		return;
	/*
	 * A time-sensitive task whose slice ended is not queued yet (it is enqueued after this
	 * returns): with no other time-sensitive task here it keeps the CPU for another slice,
	 * rather than lose it to background work.
	 */
	if (time_sensitive_and_runnable(prev)) {
		prev->scx.slice = slice_ns;
		return;
	}
	bpf_for(other, 0, nr_cpus) {
		if (other != (u32)cpu && scx_bpf_dsq_move_to_local(ts_dsq(other))) {
			__sync_fetch_and_add(&ufs_counters.ts_helped, 1);
			return;
		}
	}
	cgid = background_group_to_run();
	if (cgid && scx_bpf_dsq_move_to_local(cgid)) {
		__sync_fetch_and_add(&ufs_counters.bg_dispatch, 1);
		return;
	}
	if (scx_bpf_dsq_move_to_local(UFS_OTHER_BG_DSQ))
		__sync_fetch_and_add(&ufs_counters.bg_dispatch, 1);
}

void BPF_STRUCT_OPS(ufs_running, struct task_struct *p)
{
	struct task_ctx *c = ctx_of(p);
	u32 tier;

	if (!c)
		return;
	tier = c->tier == UFS_TIME_SENSITIVE ? UFS_TIME_SENSITIVE : UFS_BACKGROUND;
	c->bg_dsq = 0;
	c->started = scx_bpf_now();
	set_running(scx_bpf_task_cpu(p),
		    tier == UFS_TIME_SENSITIVE ? UFS_RUNNING_TIME_SENSITIVE : UFS_RUNNING_BACKGROUND,
		    c->vtime);
	if (c->vtime > vtime_now[tier])
		vtime_now[tier] = c->vtime;
}

void BPF_STRUCT_OPS(ufs_stopping, struct task_struct *p, bool runnable)
{
	struct task_ctx *c = ctx_of(p);
	struct group *g;
	u64 used;

	set_running(scx_bpf_task_cpu(p), UFS_RUNNING_NOTHING, 0);
	if (!c)
		return;
	/* Measured, not taken from the slice left: a task kept for another slice ran on. */
	used = c->started ? scx_bpf_now() - c->started : 0;
	c->started = 0;
	c->vtime += ufs_scale(used, c->weight);
	if (c->tier != UFS_BACKGROUND)
		return;
	g = bpf_map_lookup_elem(&groups, &c->cgid);
	if (g)
		g->vtime += ufs_scale(used, g->weight);
}

s32 BPF_STRUCT_OPS(ufs_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	if (!bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE))
		return -12; /* -ENOMEM */
	return 0;
}

/* ---- groups ---- */

s32 BPF_STRUCT_OPS_SLEEPABLE(ufs_cgroup_init, struct cgroup *cgrp, struct scx_cgroup_init_args *args)
{
	struct group g = { .weight = ufs_clamp_weight(args->weight), .slot = -1 };
	u64 cgid = cgrp->kn->id;
	char name[4] = {};
	u32 i;

	if (bpf_probe_read_kernel_str(name, sizeof(name), cgrp->kn->name) < 0)
		name[0] = 0;
	g.tier = ufs_tier_of_name(name, sizeof(name));
	g.vtime = bg_group_vtime_now;
	if (g.tier == UFS_BACKGROUND) {
		bpf_for(i, 0, UFS_MAX_BG_GROUPS) {
			if (!bg_slots[i] && __sync_val_compare_and_swap(&bg_slots[i], 0, cgid) == 0) {
				g.slot = i;
				break;
			}
		}
		if (g.slot >= 0) {
			s32 err = scx_bpf_create_dsq(cgid, -1);

			if (err) {
				free_bg_slot(g.slot);
				return err;
			}
		}
	}
	return bpf_map_update_elem(&groups, &cgid, &g, BPF_ANY);
}

void BPF_STRUCT_OPS(ufs_cgroup_exit, struct cgroup *cgrp)
{
	u64 cgid = cgrp->kn->id;
	struct group *g = bpf_map_lookup_elem(&groups, &cgid);

	if (g && g->slot >= 0) {
		free_bg_slot(g->slot);
		scx_bpf_destroy_dsq(cgid);
	}
	bpf_map_delete_elem(&groups, &cgid);
}

void BPF_STRUCT_OPS(ufs_cgroup_set_weight, struct cgroup *cgrp, u32 weight)
{
	u64 cgid = cgrp->kn->id;
	struct group *g = bpf_map_lookup_elem(&groups, &cgid);

	if (g)
		g->weight = ufs_clamp_weight(weight);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(ufs_init)
{
	u32 cpu;

	bpf_for(cpu, 0, nr_cpus) {
		s32 err = scx_bpf_create_dsq(ts_dsq(cpu), -1);

		if (err)
			return err;
	}
	return scx_bpf_create_dsq(UFS_OTHER_BG_DSQ, -1);
}

void BPF_STRUCT_OPS(ufs_exit, struct scx_exit_info *ei)
{
	bpf_probe_read_kernel_str(exit_record.reason, sizeof(exit_record.reason), ei->reason);
	bpf_probe_read_kernel_str(exit_record.msg, sizeof(exit_record.msg), ei->msg);
	exit_record.exit_code = ei->exit_code;
	exit_record.kind = ei->kind;
}

SEC(".struct_ops.link")
struct sched_ext_ops overtake_ufs = {
	.select_cpu = (void *)ufs_select_cpu,
	.enqueue = (void *)ufs_enqueue,
	.dispatch = (void *)ufs_dispatch,
	.running = (void *)ufs_running,
	.stopping = (void *)ufs_stopping,
	.init_task = (void *)ufs_init_task,
	.cgroup_init = (void *)ufs_cgroup_init,
	.cgroup_exit = (void *)ufs_cgroup_exit,
	.cgroup_set_weight = (void *)ufs_cgroup_set_weight,
	.init = (void *)ufs_init,
	.exit = (void *)ufs_exit,
	.name = "overtake_ufs",
};

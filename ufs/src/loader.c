// SPDX-License-Identifier: GPL-2.0-only
/*
 * overtake-ufs: loads the UFS sched_ext scheduler (ufs.bpf.c), keeps it loaded until it is told
 * to stop (SIGINT, SIGTERM) or sched_ext unloads it, and pins the hint map where Overtake's
 * `--ufs-hints` finds it.
 *
 * Everything it checks before loading (the kernel has sched_ext and BTF, no other scheduler is
 * loaded, it runs as root, bpffs is mounted) fails with a message naming what is missing and
 * exit status 1; a bad argument exits with 2. It must never leave the scheduler loaded after it
 * exits, nor a stale pin behind.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "ufs.h"

/*
 * The compiled scheduler, linked into this binary (ld -r -b binary). Not a bpftool skeleton: the
 * skeletons of the bpftool Debian ships need a newer libbpf than the one it ships.
 */
extern const char _binary_ufs_bpf_o_start[];
extern const char _binary_ufs_bpf_o_end[];

#define BPF_FS_MAGIC 0xcafe4a11
#define SCHED_EXT_STATE "/sys/kernel/sched_ext/state"
#define SCHED_EXT_OPS "/sys/kernel/sched_ext/root/ops"
#define KERNEL_BTF "/sys/kernel/btf/vmlinux"
#define DEFAULT_PIN_DIR "/sys/fs/bpf/overtake_ufs"

static const char usage[] =
	"usage: overtake-ufs [--slice-us N] [--starve-ms N] [--pin-dir DIR] [--check] [--help]\n"
	"\n"
	"Loads the overtake-ufs sched_ext scheduler and keeps it loaded until interrupted\n"
	"(Ctrl-C or SIGTERM unloads it). Threads in cgroups named ts-* are time-sensitive,\n"
	"all others background; cpu.weight shares the CPU within a tier.\n"
	"\n"
	"  --slice-us N   time slice in microseconds (100 to 100000, default 5000)\n"
	"  --starve-ms N  a background task waits at most N ms for a slice while time-sensitive\n"
	"                 work keeps every CPU (100 to 20000, default 2000; sched_ext unloads a\n"
	"                 scheduler that leaves a task waiting 30 s)\n"
	"  --pin-dir DIR  where the hint map is pinned (default " DEFAULT_PIN_DIR "; DIR/hints)\n"
	"  --check        only check that this machine can load it, and say what is missing\n"
	"  --help         this text\n";

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int fail(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("overtake-ufs: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return status;
}

static int bad_usage(const char *fmt, const char *arg)
{
	fputs("overtake-ufs: error: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\n\n", stderr);
	fputs(usage, stderr);
	return 2;
}

/* Reads the first line of `path` into `buf` (newline cut); false if it cannot be read. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return 0;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return 1;
}

/* What this machine lacks to load the scheduler, as an exit status (0: nothing). */
static int check_machine(void)
{
	struct utsname u;
	char state[64], ops[128];

	uname(&u);
	if (access(SCHED_EXT_STATE, F_OK) != 0)
		return fail(1,
			    "kernel %s has no sched_ext (%s is missing): overtake-ufs needs Linux "
			    "6.12 or later built with CONFIG_SCHED_CLASS_EXT=y",
			    u.release, SCHED_EXT_STATE);
	if (access(KERNEL_BTF, F_OK) != 0)
		return fail(1,
			    "kernel %s has no BTF (%s is missing): it must be built with "
			    "CONFIG_DEBUG_INFO_BTF=y",
			    u.release, KERNEL_BTF);
	if (!read_line(SCHED_EXT_STATE, state, sizeof(state)))
		return fail(1, "cannot read %s: %s", SCHED_EXT_STATE, strerror(errno));
	if (strcmp(state, "disabled") != 0) {
		if (!read_line(SCHED_EXT_OPS, ops, sizeof(ops)))
			snprintf(ops, sizeof(ops), "unknown");
		return fail(1, "a sched_ext scheduler is already %s (%s): unload it first", state,
			    ops);
	}
	if (geteuid() != 0)
		return fail(1, "loading a scheduler needs root (CAP_SYS_ADMIN and CAP_BPF)");
	return 0;
}

/* Makes `dir` on a mounted bpffs and removes a stale pin in it. */
static int prepare_pin_dir(const char *dir, char *pin, size_t len)
{
	char parent[PATH_MAX];
	struct statfs fs;
	char *slash;

	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	if (slash && slash != parent)
		*slash = 0;
	if (statfs(parent, &fs) != 0 || fs.f_type != BPF_FS_MAGIC)
		return fail(1,
			    "%s is not a mounted bpf filesystem: mount it first "
			    "(mount -t bpf bpf %s)",
			    parent, parent);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return fail(1, "cannot make %s: %s", dir, strerror(errno));
	if ((size_t)snprintf(pin, len, "%s/hints", dir) >= len)
		return fail(2, "--pin-dir is too long");
	if (unlink(pin) != 0 && errno != ENOENT)
		return fail(1, "cannot remove the stale pin %s: %s", pin, strerror(errno));
	return 0;
}

static int parse_u64(const char *s, unsigned long long *out)
{
	char *end;

	if (!*s || *s == '-')
		return 0;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno == 0 && *end == 0;
}

/* The map of the section `suffix` (".rodata.config", ".data.shared") and its memory. */
static void *section(struct bpf_object *obj, const char *suffix, size_t want,
		     struct bpf_map **out)
{
	size_t n = strlen(suffix), size = 0;
	struct bpf_map *map;

	bpf_object__for_each_map(map, obj) {
		const char *name = bpf_map__name(map);
		size_t len = strlen(name);

		if (len >= n && !strcmp(name + len - n, suffix)) {
			void *mem = bpf_map__initial_value(map, &size);

			if (out)
				*out = map;
			return mem && size >= want ? mem : NULL;
		}
	}
	return NULL;
}

/*
 * The value of the flag at argv[*i] (the next argument, *i moved to it), a number of `unit` from
 * min to max; 0, or the exit status of a usage error.
 */
static int number_arg(int argc, char **argv, int *i, const char *unit, unsigned long long min,
		      unsigned long long max, unsigned long long *out)
{
	const char *flag = argv[*i];

	if (++*i == argc)
		return bad_usage("%s needs a value", flag);
	if (!parse_u64(argv[*i], out) || *out < min || *out > max) {
		fprintf(stderr, "overtake-ufs: error: %s %s: expected %s from %llu to %llu\n\n", flag,
			argv[*i], unit, min, max);
		fputs(usage, stderr);
		return 2;
	}
	return 0;
}

static void print_counters(const struct ufs_counters *c)
{
	printf("overtake-ufs: {\"ts_direct\":%llu,\"ts_queued\":%llu,\"ts_preempt\":%llu,"
	       "\"ts_helped\":%llu,\"bg_queued\":%llu,\"bg_dispatch\":%llu,\"boosted\":%llu,"
	       "\"rescued\":%llu,\"starving_run\":%llu}\n",
	       c->ts_direct, c->ts_queued, c->ts_preempt, c->ts_helped, c->bg_queued,
	       c->bg_dispatch, c->boosted, c->rescued, c->starving_run);
}

int main(int argc, char **argv)
{
	unsigned long long slice_us = 5000, starve_ms = 2000;
	const char *pin_dir = DEFAULT_PIN_DIR;
	char pin[PATH_MAX];
	int check_only = 0, status, i;
	struct bpf_map *ops, *hints;
	struct ufs_config *config;
	size_t shared_len = ((sizeof(struct ufs_shared) + 4095) / 4096) * 4096;
	struct ufs_shared *shared = NULL;
	struct bpf_map *shared_map = NULL;
	struct bpf_object *obj;
	struct bpf_link *link;
	long cpus;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--check")) {
			check_only = 1;
		} else if (!strcmp(argv[i], "--slice-us")) {
			status = number_arg(argc, argv, &i, "microseconds", 100, 100000, &slice_us);
			if (status)
				return status;
		} else if (!strcmp(argv[i], "--starve-ms")) {
			status = number_arg(argc, argv, &i, "milliseconds", 100, 20000, &starve_ms);
			if (status)
				return status;
		} else if (!strcmp(argv[i], "--pin-dir")) {
			if (++i == argc)
				return bad_usage("%s needs a value", "--pin-dir");
			pin_dir = argv[i];
			if (pin_dir[0] != '/')
				return bad_usage("--pin-dir %s: expected an absolute path", pin_dir);
		} else {
			return bad_usage("unknown argument %s", argv[i]);
		}
	}

	status = check_machine();
	if (status)
		return status;
	if (check_only) {
		printf("overtake-ufs: this kernel can load it (sched_ext disabled, BTF present)\n");
		return 0;
	}
	status = prepare_pin_dir(pin_dir, pin, sizeof(pin));
	if (status)
		return status;

	cpus = sysconf(_SC_NPROCESSORS_CONF);
	if (cpus < 1 || cpus > UFS_MAX_CPUS)
		return fail(1, "%ld CPUs: overtake-ufs supports 1 to %d", cpus, UFS_MAX_CPUS);
	LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = "overtake_ufs");
	obj = bpf_object__open_mem(_binary_ufs_bpf_o_start,
				   (size_t)(_binary_ufs_bpf_o_end - _binary_ufs_bpf_o_start), &opts);
	if (!obj)
		return fail(1, "cannot open the BPF object: %s", strerror(errno));
	config = section(obj, ".rodata.config", sizeof(*config), NULL);
	ops = bpf_object__find_map_by_name(obj, "overtake_ufs");
	hints = bpf_object__find_map_by_name(obj, "hints");
	if (!config || !ops || !hints) {
		bpf_object__close(obj);
		return fail(1, "the BPF object lacks its config, ops or hint map (a build mismatch)");
	}
	config->slice_ns = slice_us * 1000;
	config->starve_ns = starve_ms * 1000 * 1000;
	config->nr_cpus = (unsigned int)cpus;
	if (bpf_object__load(obj)) {
		bpf_object__close(obj);
		return fail(1, "the kernel refused the scheduler (libbpf's messages above say why)");
	}
	/*
	 * The section's initial value is a copy; what the scheduler writes is the map itself, mapped
	 * here (a skeleton would do the same).
	 */
	if (!section(obj, ".data.shared", sizeof(*shared), &shared_map) ||
	    (shared = mmap(NULL, shared_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			   bpf_map__fd(shared_map), 0)) == MAP_FAILED) {
		bpf_object__close(obj);
		return fail(1, "cannot map the scheduler's shared section: %s", strerror(errno));
	}
	if (bpf_map__pin(hints, pin)) {
		bpf_object__close(obj);
		return fail(1, "cannot pin the hint map at %s: %s", pin, strerror(errno));
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	link = bpf_map__attach_struct_ops(ops);
	if (!link) {
		status = fail(1, "cannot attach the scheduler: %s", strerror(errno));
		unlink(pin);
		bpf_object__close(obj);
		return status;
	}
	printf("overtake-ufs: loaded (slice %llu us, %ld CPUs); hints at %s\n", slice_us, cpus,
	       pin);
	fflush(stdout);

	while (!stop && !shared->exit_record.kind) {
		struct timespec t = { .tv_sec = 0, .tv_nsec = 100 * 1000 * 1000 };

		nanosleep(&t, NULL);
	}
	status = 0;
	if (shared->exit_record.kind) {
		/* sched_ext unloaded it (an error, the watchdog, or sysrq-S), not us. */
		status = fail(1, "sched_ext unloaded the scheduler: %s%s%s",
			      shared->exit_record.reason, shared->exit_record.msg[0] ? ": " : "",
			      shared->exit_record.msg);
	}
	bpf_link__destroy(link);
	print_counters(&shared->counters);
	if (!status)
		printf("overtake-ufs: unloaded (%s)\n", shared->exit_record.reason);
	unlink(pin);
	rmdir(pin_dir);
	munmap(shared, shared_len);
	bpf_object__close(obj);
	return status;
}

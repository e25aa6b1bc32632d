/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the scheduler needs around the kernel's own declarations: vmlinux.h (types and the
 * scx_bpf_* kfunc prototypes, generated from the target kernel's BTF by bpftool) and libbpf's
 * BPF headers, plus the few macros sched_ext programs use. Kept small on purpose: everything
 * else comes from the kernel the scheduler is built for.
 */
#ifndef OVERTAKE_UFS_SCX_H
#define OVERTAKE_UFS_SCX_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#define BPF_STRUCT_OPS(name, args...) SEC("struct_ops/" #name) BPF_PROG(name, ##args)
#define BPF_STRUCT_OPS_SLEEPABLE(name, args...) SEC("struct_ops.s/" #name) BPF_PROG(name, ##args)

/* The iterator of the innermost bpf_for_each (libbpf names it ___it). */
#define BPF_FOR_EACH_ITER (&___it)

/* Makes the compiler keep `var` in one register from here, so a bound checked on it holds. */
#define barrier_var(var) asm volatile("" : "+r"(var))

/* include/linux/sched.h: not in BTF, as it is a macro. */
#define PF_KTHREAD 0x00200000

/* Reports an error to sched_ext, which then unloads the scheduler and says why. */
#define UFS_ERROR(fmt, value)                                                    \
	do {                                                                     \
		static char ___fmt[] = fmt;                                      \
		unsigned long long ___data[1] = { (unsigned long long)(value) }; \
		scx_bpf_error_bstr(___fmt, ___data, sizeof(___data));            \
	} while (0)

#endif

//! Injected preemption must be invisible to the preempted code: every general register, the flags,
//! the FP/SIMD registers and MXCSR hold exactly what they held, however often it happens, while the
//! preempting context clobbers all of them.

use std::arch::asm;
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use overtake_runtime::preempt::{self, PreemptTarget};
use overtake_runtime::{Context, NoPreemptGuard, region};

// Signal preemption is only enabled where allocation runs inside regions (as in the binary).
#[global_allocator]
static ALLOC: overtake_runtime::EngineAllocator = overtake_runtime::engine_allocator();

const GPR_PATTERNS: [u64; 14] = [
    0x1111_1111_1111_1111, // rax
    0x2222_2222_2222_2222, // rbx
    0x3333_3333_3333_3333, // rcx
    0x4444_4444_4444_4444, // rdx
    0x5555_5555_5555_5555, // rsi
    0x6666_6666_6666_6666, // rdi
    0x7777_7777_7777_7777, // rbp
    0x8888_8888_8888_8888, // r8
    0x9999_9999_9999_9999, // r9
    0xAAAA_AAAA_AAAA_AAAA, // r10
    0xBBBB_BBBB_BBBB_BBBB, // r11
    0xCCCC_CCCC_CCCC_CCCC, // r12
    0xDDDD_DDDD_DDDD_DDDD, // r13
    0xEEEE_EEEE_EEEE_EEEE, // r14
];

/// Vector patterns: 16 ymm registers of 32 bytes each.
fn vector_patterns() -> Vec<u8> {
    (0..16 * 32).map(|i| (i * 7 + 3) as u8).collect()
}

/// Loads the patterns into rax..r14 and ymm0..ymm15, spins `iterations` times in r15, then dumps
/// every register into `out` (14 GPRs, r15, then 16 x 32 bytes of ymm).
fn hold_registers(iterations: u64, vectors: &[u8], out: &mut [u64; 16 + 64]) {
    assert_eq!(vectors.len(), 16 * 32);
    // SAFETY: the block saves and restores rbx and rbp (which cannot be operands), declares every
    // other register it writes as clobbered, and only writes memory through `out`, which is valid
    // for 80 u64s.
    unsafe {
        asm!(
            "push rbp",
            "push rbx",
            "push rdi",
            "vmovdqu ymm0, [rsi]", "vmovdqu ymm1, [rsi + 32]", "vmovdqu ymm2, [rsi + 64]",
            "vmovdqu ymm3, [rsi + 96]", "vmovdqu ymm4, [rsi + 128]", "vmovdqu ymm5, [rsi + 160]",
            "vmovdqu ymm6, [rsi + 192]", "vmovdqu ymm7, [rsi + 224]", "vmovdqu ymm8, [rsi + 256]",
            "vmovdqu ymm9, [rsi + 288]", "vmovdqu ymm10, [rsi + 320]", "vmovdqu ymm11, [rsi + 352]",
            "vmovdqu ymm12, [rsi + 384]", "vmovdqu ymm13, [rsi + 416]", "vmovdqu ymm14, [rsi + 448]",
            "vmovdqu ymm15, [rsi + 480]",
            "mov r15, rdx",
            "mov rax, 0x1111111111111111", "mov rbx, 0x2222222222222222",
            "mov rcx, 0x3333333333333333", "mov rdx, 0x4444444444444444",
            "mov rsi, 0x5555555555555555", "mov rdi, 0x6666666666666666",
            "mov rbp, 0x7777777777777777", "mov r8, 0x8888888888888888",
            "mov r9, 0x9999999999999999", "mov r10, 0xAAAAAAAAAAAAAAAA",
            "mov r11, 0xBBBBBBBBBBBBBBBB", "mov r12, 0xCCCCCCCCCCCCCCCC",
            "mov r13, 0xDDDDDDDDDDDDDDDD", "mov r14, 0xEEEEEEEEEEEEEEEE",
            "2:",
            "dec r15",
            "jnz 2b",
            // Dump: r15 (0 if the loop ran right) and the 14 GPRs, via the stack.
            "push r15", "push r14", "push r13", "push r12", "push r11", "push r10", "push r9",
            "push r8", "push rbp", "push rdi", "push rsi", "push rdx", "push rcx", "push rbx",
            "push rax",
            "mov r15, [rsp + 120]",
            "pop qword ptr [r15]", "pop qword ptr [r15 + 8]", "pop qword ptr [r15 + 16]",
            "pop qword ptr [r15 + 24]", "pop qword ptr [r15 + 32]", "pop qword ptr [r15 + 40]",
            "pop qword ptr [r15 + 48]", "pop qword ptr [r15 + 56]", "pop qword ptr [r15 + 64]",
            "pop qword ptr [r15 + 72]", "pop qword ptr [r15 + 80]", "pop qword ptr [r15 + 88]",
            "pop qword ptr [r15 + 96]", "pop qword ptr [r15 + 104]", "pop qword ptr [r15 + 112]",
            "vmovdqu [r15 + 128], ymm0", "vmovdqu [r15 + 160], ymm1", "vmovdqu [r15 + 192], ymm2",
            "vmovdqu [r15 + 224], ymm3", "vmovdqu [r15 + 256], ymm4", "vmovdqu [r15 + 288], ymm5",
            "vmovdqu [r15 + 320], ymm6", "vmovdqu [r15 + 352], ymm7", "vmovdqu [r15 + 384], ymm8",
            "vmovdqu [r15 + 416], ymm9", "vmovdqu [r15 + 448], ymm10", "vmovdqu [r15 + 480], ymm11",
            "vmovdqu [r15 + 512], ymm12", "vmovdqu [r15 + 544], ymm13", "vmovdqu [r15 + 576], ymm14",
            "vmovdqu [r15 + 608], ymm15",
            "vzeroupper",
            "pop rdi",
            "pop rbx",
            "pop rbp",
            inout("rdi") out.as_mut_ptr() => _,
            inout("rsi") vectors.as_ptr() => _,
            inout("rdx") iterations => _,
            out("rax") _, out("rcx") _, out("r8") _, out("r9") _, out("r10") _, out("r11") _,
            out("r12") _, out("r13") _, out("r14") _, out("r15") _,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _, out("xmm4") _,
            out("xmm5") _, out("xmm6") _, out("xmm7") _, out("xmm8") _, out("xmm9") _,
            out("xmm10") _, out("xmm11") _, out("xmm12") _, out("xmm13") _, out("xmm14") _,
            out("xmm15") _,
        );
    }
}

/// Holds patterns in zmm16..zmm31 and k1..k7 (AVX-512 state) across a spin, and dumps them.
#[target_feature(enable = "avx512f")]
fn hold_avx512(iterations: u64, out: &mut [u64; 16 * 8 + 7]) {
    let patterns: Vec<u64> = (0..16 * 8)
        .map(|i| 0x0101_0101_0101_0101u64.wrapping_mul(i + 1))
        .collect();
    // SAFETY: writes only the declared registers and `out` (valid for 135 u64s); reads `patterns`.
    unsafe {
        asm!(
            "vmovdqu64 zmm16, [rsi]", "vmovdqu64 zmm17, [rsi + 64]", "vmovdqu64 zmm18, [rsi + 128]",
            "vmovdqu64 zmm19, [rsi + 192]", "vmovdqu64 zmm20, [rsi + 256]", "vmovdqu64 zmm21, [rsi + 320]",
            "vmovdqu64 zmm22, [rsi + 384]", "vmovdqu64 zmm23, [rsi + 448]", "vmovdqu64 zmm24, [rsi + 512]",
            "vmovdqu64 zmm25, [rsi + 576]", "vmovdqu64 zmm26, [rsi + 640]", "vmovdqu64 zmm27, [rsi + 704]",
            "vmovdqu64 zmm28, [rsi + 768]", "vmovdqu64 zmm29, [rsi + 832]", "vmovdqu64 zmm30, [rsi + 896]",
            "vmovdqu64 zmm31, [rsi + 960]",
            "mov eax, 0x1357", "kmovw k1, eax", "mov eax, 0x2468", "kmovw k2, eax",
            "mov eax, 0x3579", "kmovw k3, eax", "mov eax, 0x468A", "kmovw k4, eax",
            "mov eax, 0x579B", "kmovw k5, eax", "mov eax, 0x68AC", "kmovw k6, eax",
            "mov eax, 0x79BD", "kmovw k7, eax",
            "2:",
            "dec rdx",
            "jnz 2b",
            "vmovdqu64 [rdi], zmm16", "vmovdqu64 [rdi + 64], zmm17", "vmovdqu64 [rdi + 128], zmm18",
            "vmovdqu64 [rdi + 192], zmm19", "vmovdqu64 [rdi + 256], zmm20", "vmovdqu64 [rdi + 320], zmm21",
            "vmovdqu64 [rdi + 384], zmm22", "vmovdqu64 [rdi + 448], zmm23", "vmovdqu64 [rdi + 512], zmm24",
            "vmovdqu64 [rdi + 576], zmm25", "vmovdqu64 [rdi + 640], zmm26", "vmovdqu64 [rdi + 704], zmm27",
            "vmovdqu64 [rdi + 768], zmm28", "vmovdqu64 [rdi + 832], zmm29", "vmovdqu64 [rdi + 896], zmm30",
            "vmovdqu64 [rdi + 960], zmm31",
            "kmovw eax, k1", "mov [rdi + 1024], rax", "kmovw eax, k2", "mov [rdi + 1032], rax",
            "kmovw eax, k3", "mov [rdi + 1040], rax", "kmovw eax, k4", "mov [rdi + 1048], rax",
            "kmovw eax, k5", "mov [rdi + 1056], rax", "kmovw eax, k6", "mov [rdi + 1064], rax",
            "kmovw eax, k7", "mov [rdi + 1072], rax",
            "vzeroupper",
            in("rdi") out.as_mut_ptr(),
            in("rsi") patterns.as_ptr(),
            inout("rdx") iterations => _,
            out("rax") _,
            out("zmm16") _, out("zmm17") _, out("zmm18") _, out("zmm19") _, out("zmm20") _,
            out("zmm21") _, out("zmm22") _, out("zmm23") _, out("zmm24") _, out("zmm25") _,
            out("zmm26") _, out("zmm27") _, out("zmm28") _, out("zmm29") _, out("zmm30") _,
            out("zmm31") _, out("k1") _, out("k2") _, out("k3") _, out("k4") _, out("k5") _,
            out("k6") _, out("k7") _,
        );
    }
    for (i, p) in patterns.iter().enumerate() {
        assert_eq!(out[i], *p, "zmm{} lane {} changed", 16 + i / 8, i % 8);
    }
    let masks = [0x1357, 0x2468, 0x3579, 0x468A, 0x579B, 0x68AC, 0x79BD];
    for (k, m) in masks.iter().enumerate() {
        assert_eq!(out[128 + k] & 0xFFFF, *m, "k{} changed", k + 1);
    }
}

/// Clobbers every register the preempted code could care about, and MXCSR.
fn clobber_everything(seed: u64) {
    let garbage: Vec<u8> = (0..16 * 32).map(|i| (i as u64 ^ seed) as u8).collect();
    // SAFETY: writes only declared registers; MXCSR is set to round-up with exceptions masked (a
    // valid value). Reads `garbage`.
    unsafe {
        asm!(
            "vmovdqu ymm0, [rsi]", "vmovdqu ymm1, [rsi + 32]", "vmovdqu ymm2, [rsi + 64]",
            "vmovdqu ymm3, [rsi + 96]", "vmovdqu ymm4, [rsi + 128]", "vmovdqu ymm5, [rsi + 160]",
            "vmovdqu ymm6, [rsi + 192]", "vmovdqu ymm7, [rsi + 224]", "vmovdqu ymm8, [rsi + 256]",
            "vmovdqu ymm9, [rsi + 288]", "vmovdqu ymm10, [rsi + 320]", "vmovdqu ymm11, [rsi + 352]",
            "vmovdqu ymm12, [rsi + 384]", "vmovdqu ymm13, [rsi + 416]", "vmovdqu ymm14, [rsi + 448]",
            "vmovdqu ymm15, [rsi + 480]",
            "mov rax, rdx", "mov rcx, rdx", "mov r8, rdx", "mov r9, rdx", "mov r10, rdx",
            "mov r11, rdx", "mov r12, rdx", "mov r13, rdx", "mov r14, rdx", "mov r15, rdx",
            "push rax",
            "mov dword ptr [rsp], 0x5F80",
            "ldmxcsr [rsp]",
            "pop rax",
            "vzeroupper",
            in("rsi") garbage.as_ptr(),
            inout("rdx") seed => _,
            out("rax") _, out("rcx") _, out("r8") _, out("r9") _, out("r10") _, out("r11") _,
            out("r12") _, out("r13") _, out("r14") _, out("r15") _,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _, out("xmm4") _,
            out("xmm5") _, out("xmm6") _, out("xmm7") _, out("xmm8") _, out("xmm9") _,
            out("xmm10") _, out("xmm11") _, out("xmm12") _, out("xmm13") _, out("xmm14") _,
            out("xmm15") _,
        );
    }
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: AVX-512F was detected.
        unsafe { clobber_avx512(seed) };
    }
}

#[target_feature(enable = "avx512f")]
fn clobber_avx512(seed: u64) {
    // SAFETY: writes only the declared registers.
    unsafe {
        asm!(
            "vpbroadcastq zmm16, rdx", "vpbroadcastq zmm20, rdx", "vpbroadcastq zmm24, rdx",
            "vpbroadcastq zmm28, rdx", "vpbroadcastq zmm31, rdx",
            "kmovq k1, rdx", "kmovq k4, rdx", "kmovq k7, rdx",
            in("rdx") seed,
            out("zmm16") _, out("zmm20") _, out("zmm24") _, out("zmm28") _, out("zmm31") _,
            out("k1") _, out("k4") _, out("k7") _,
        );
    }
}

/// A floating-point computation whose result depends on the rounding mode (MXCSR).
fn rounding_sensitive(n: u32) -> f64 {
    let mut x = 0.0f64;
    for i in 1..=n {
        x += std::hint::black_box(1.0) / f64::from(i);
    }
    x
}

fn with_round_down<R>(f: impl FnOnce() -> R) -> R {
    let mut saved: u32 = 0;
    // SAFETY: stmxcsr/ldmxcsr move a valid MXCSR value between the register and a local.
    unsafe {
        asm!("stmxcsr [{0}]", in(reg) &mut saved);
        let down: u32 = (saved & !0x6000) | 0x2000;
        asm!("ldmxcsr [{0}]", in(reg) &down);
    }
    let r = f();
    // SAFETY: as above.
    unsafe { asm!("ldmxcsr [{0}]", in(reg) &saved) };
    r
}

thread_local! {
    static URGENT: RefCell<Option<Context>> = const { RefCell::new(None) };
}

static HOOK_RUNS: AtomicU64 = AtomicU64::new(0);
static TARGET: std::sync::OnceLock<Arc<PreemptTarget>> = std::sync::OnceLock::new();

/// The preemption hook: acknowledge, then run the urgent context, which clobbers everything.
fn switch_to_urgent() {
    if let Some(t) = TARGET.get() {
        t.acknowledge();
    }
    HOOK_RUNS.fetch_add(1, Ordering::Relaxed);
    URGENT.with(|u| {
        if let Some(ctx) = u.borrow_mut().as_mut() {
            let _ = ctx.resume();
        }
    });
}

#[test]
fn registers_survive_ten_thousand_injected_preemptions() {
    assert!(
        std::arch::is_x86_feature_detected!("avx"),
        "this test needs AVX (every machine this project targets has it)"
    );
    let target = Arc::clone(TARGET.get_or_init(PreemptTarget::new));
    let registration =
        preempt::register_worker(Arc::clone(&target), 0, switch_to_urgent).expect("register");
    URGENT.with(|u| {
        *u.borrow_mut() = Some(
            Context::new(256 * 1024, false, |s| {
                let mut seed = 0xDEAD_BEEF_u64;
                loop {
                    seed = seed.rotate_left(7) ^ 0x9E37_79B9_7F4A_7C15;
                    clobber_everything(seed);
                    s.suspend();
                }
            })
            .expect("stack"),
        );
    });

    let expected_sum = rounding_sensitive(20_000);
    let expected_down = with_round_down(|| rounding_sensitive(20_000));
    assert_ne!(
        expected_sum, expected_down,
        "the rounding mode shows in the result"
    );
    let vectors = vector_patterns();
    let avx512 = std::arch::is_x86_feature_detected!("avx512f");

    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let (stop, target) = (Arc::clone(&stop), Arc::clone(&target));
        std::thread::spawn(move || {
            let mut sent = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let _ = target.request();
                if target.interrupt().is_ok() {
                    sent += 1;
                }
                let until = Instant::now() + Duration::from_micros(20);
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
            }
            sent
        })
    };

    let failures = Arc::new(AtomicU64::new(0));
    let rounds = Arc::new(AtomicU64::new(0));
    let mut work = {
        let (failures, rounds, target) = (
            Arc::clone(&failures),
            Arc::clone(&rounds),
            Arc::clone(&target),
        );
        Context::new(1024 * 1024, true, move |_| {
            let deadline = Instant::now() + Duration::from_secs(60);
            while target.stats().injected < 10_000 && Instant::now() < deadline {
                let mut out = [0u64; 80];
                hold_registers(2_000_000, &vectors, &mut out);
                let gprs_ok = out[..14] == GPR_PATTERNS && out[14] == 0;
                let vec_ok = out[16..80]
                    .iter()
                    .flat_map(|w| w.to_le_bytes())
                    .eq(vectors.iter().copied());
                if avx512 {
                    let mut z = [0u64; 135];
                    // SAFETY: AVX-512F was detected above, which is all `hold_avx512` requires.
                    unsafe { hold_avx512(1_000_000, &mut z) };
                }
                let fp_ok = rounding_sensitive(20_000) == expected_sum
                    && with_round_down(|| rounding_sensitive(20_000)) == expected_down;
                if !(gprs_ok && vec_ok && fp_ok) {
                    failures.fetch_add(1, Ordering::Relaxed);
                    eprintln!(
                        "round {}: gprs {gprs_ok} vectors {vec_ok} fp {fp_ok}: {:x?}",
                        rounds.load(Ordering::Relaxed),
                        &out[..15]
                    );
                }
                rounds.fetch_add(1, Ordering::Relaxed);
            }
        })
        .expect("stack")
    };
    assert!(
        work.resume().is_finished(),
        "the preemptible context ran to the end"
    );
    stop.store(true, Ordering::Relaxed);
    let sent = sender.join().expect("sender");
    drop(registration);

    let stats = target.stats();
    assert_eq!(
        failures.load(Ordering::Relaxed),
        0,
        "some state did not survive ({stats:?})"
    );
    assert!(
        stats.injected >= 10_000,
        "only {} injected preemptions ({sent} signals sent, {stats:?})",
        stats.injected
    );
    assert!(HOOK_RUNS.load(Ordering::Relaxed) >= stats.injected);
    assert_eq!(region::depth(), 0);
}

static REGION_HOOK_RUNS: AtomicU64 = AtomicU64::new(0);

fn count_region_hook() {
    REGION_HOOK_RUNS.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn a_region_defers_a_signal_preemption_until_it_ends() {
    let target = PreemptTarget::new();
    let registration =
        preempt::register_worker(Arc::clone(&target), 0, count_region_hook).expect("register");
    let t = Arc::clone(&target);
    let mut work = Context::new(256 * 1024, true, move |_| {
        {
            let _region = NoPreemptGuard::new();
            let _ = t.request();
            t.interrupt().expect("signal");
            let deadline = Instant::now() + Duration::from_secs(10);
            while t.stats().deferred == 0 && Instant::now() < deadline {
                std::hint::spin_loop();
            }
            assert_eq!(t.stats().deferred, 1, "the signal arrived and was deferred");
            assert_eq!(
                REGION_HOOK_RUNS.load(Ordering::SeqCst),
                0,
                "not served inside the region"
            );
            assert!(region::is_pending());
        }
        // The region's end served it, before anything else ran.
        assert_eq!(REGION_HOOK_RUNS.load(Ordering::SeqCst), 1);
        assert!(!region::is_pending());
    })
    .expect("stack");
    assert!(work.resume().is_finished());
    assert_eq!(
        target.stats().injected,
        0,
        "nothing was injected inside the region"
    );
    drop(registration);
}

static POLL_HOOK_RUNS: AtomicU64 = AtomicU64::new(0);

fn count_poll_hook() {
    POLL_HOOK_RUNS.fetch_add(1, Ordering::SeqCst);
    if let Some(t) = POLL_TARGET.get() {
        t.acknowledge();
    }
}

static POLL_TARGET: std::sync::OnceLock<Arc<PreemptTarget>> = std::sync::OnceLock::new();

#[test]
fn polling_serves_a_request_only_in_a_preemptible_context() {
    let target = Arc::clone(POLL_TARGET.get_or_init(PreemptTarget::new));
    let registration =
        preempt::register_worker(Arc::clone(&target), 3, count_poll_hook).expect("register");
    // Outside any preemptible context a request is left for the worker loop.
    let _ = target.request();
    for _ in 0..10 {
        preempt::record_access();
    }
    assert_eq!(POLL_HOOK_RUNS.load(Ordering::SeqCst), 0);
    registration.set_poll_every(3); // restarts the count
    let mut work = Context::new(256 * 1024, true, |_| {
        // Every third access polls: the request is served at the third.
        preempt::record_access();
        preempt::record_access();
        assert_eq!(POLL_HOOK_RUNS.load(Ordering::SeqCst), 0);
        preempt::record_access();
        assert_eq!(POLL_HOOK_RUNS.load(Ordering::SeqCst), 1);
        for _ in 0..10 {
            preempt::record_access();
        }
        assert_eq!(
            POLL_HOOK_RUNS.load(Ordering::SeqCst),
            1,
            "acknowledged: served once"
        );
    })
    .expect("stack");
    assert!(work.resume().is_finished());
    registration.set_poll_every(0);
    drop(registration);
}

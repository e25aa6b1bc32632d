//! `overtake`: run Overtake's benchmarks from the command line.
//!
//! This binary is policy-free glue: it parses flags, loads data with progress shown on a terminal,
//! runs a workload, and prints a readable table or one JSON object. It must never panic on bad
//! input: flags are validated by the parser and errors end the process with a message and a
//! non-zero status.

#![forbid(unsafe_code)]

mod args;
mod bench_clients;
mod bench_engine;
mod bench_q2;
mod bench_sql;
mod bench_stalls;
mod bench_switch;
mod bench_tasks;
mod bench_tpcc;
mod bimodal;
mod crash_test;
mod figures;
mod hints;
mod holder;
mod interrupt;
mod kept;
mod locks;
mod mixed;
mod output;
mod plot;
mod plot_wire;
mod resources;
mod serve;
mod starvation;
mod tail;
mod tiers;

use std::process::ExitCode;

use clap::Parser;
use overtake_runtime::EngineAllocator;

// Every allocation runs inside a non-preemptible region (see `overtake_runtime::alloc`).
#[global_allocator]
static ALLOC: EngineAllocator = overtake_runtime::alloc::engine_allocator();

fn main() -> ExitCode {
    let missing = overtake_runtime::cpu::missing_build_features();
    if !missing.is_empty() {
        eprintln!(
            "error: this build uses {} which this processor lacks; rebuild with \
             RUSTFLAGS=\"-C target-cpu=x86-64\" (see .cargo/config.toml)",
            missing.join(", ")
        );
        return ExitCode::FAILURE;
    }
    // Read the usable cores before any thread is pinned.
    let _ = overtake_runtime::os::thread::usable_cores();
    // A main-memory engine keeps what it frees for reuse: returning it to the kernel costs bursts
    // of system calls inside whichever transaction allocates next (see `overtake_runtime::os::memory`).
    overtake_runtime::os::memory::set_return_freed_memory(false);
    // Under `--json` a caller reads stdout as one JSON object, errors included.
    let json = std::env::args_os().any(|a| a == "--json");
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if json && e.use_stderr() => {
            print_json_error(&parser_message(&e.to_string()));
            return ExitCode::from(2);
        }
        Err(e) => e.exit(),
    };
    // Ctrl-C ends a comparison or a sweep after its run in progress; `serve` shuts down on it
    // with its own handler, and the rest end at once.
    if matches!(
        cli.command,
        args::Command::Compare(_) | args::Command::CrashTest(_)
    ) {
        interrupt::install();
    }
    // Ok(false): the command reported its own failure (a check that found a problem) in its
    // output, which must stay one JSON object under --json.
    let done = |r: Result<(), String>| r.map(|()| true);
    let result: Result<bool, String> = match cli.command {
        args::Command::Bench(args::Bench::Tpcc(a)) => done(bench_tpcc::run(&a)),
        args::Command::Bench(args::Bench::Q2(a)) => done(bench_q2::run(&a)),
        args::Command::Bench(args::Bench::Mixed(a)) => done(mixed::bench(&a)),
        args::Command::Bench(args::Bench::Switch(a)) => done(bench_switch::run(&a)),
        args::Command::Bench(args::Bench::Bimodal(a)) => done(bimodal::bench(&a)),
        args::Command::Bench(args::Bench::Stalls(a)) => done(bench_stalls::run(&a)),
        args::Command::Bench(args::Bench::Locks(a)) => done(locks::bench(&a)),
        args::Command::Bench(args::Bench::Engine(a)) => done(bench_engine::run(&a)),
        args::Command::Bench(args::Bench::Sql(a)) => done(bench_sql::run(&a)),
        args::Command::Check(args::Check::Tpcc(a)) => kept::check(&a),
        args::Command::CrashTest(a) => crash_test::run(&a),
        args::Command::Serve(a) => done(serve::run(&a)),
        args::Command::Plot(args::Plot::Wire(a)) => done(plot_wire::run(&a)),
        args::Command::Compare(args::Compare::Mixed(a)) => done(mixed::compare(&a)),
        args::Command::Compare(args::Compare::Bimodal(a)) => done(bimodal::compare(&a)),
        args::Command::Compare(args::Compare::Locks(a)) => done(locks::compare(&a)),
        args::Command::Compare(args::Compare::Starvation(a)) => done(starvation::compare(&a)),
        args::Command::Compare(args::Compare::Holder(a)) => done(holder::compare(&a)),
        args::Command::Compare(args::Compare::Tiers(a)) => done(tiers::compare(&a)),
        args::Command::Compare(args::Compare::Hints(a)) => done(hints::compare(&a)),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) if json => {
            print_json_error(&message);
            ExitCode::FAILURE
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// `{"error": message}` on stdout.
fn print_json_error(message: &str) {
    println!("{}", serde_json::json!({ "error": message }));
}

/// A parser message on one line: its text up to the usage, without clap's `error: ` prefix.
fn parser_message(message: &str) -> String {
    let text: Vec<&str> = message
        .lines()
        .map(str::trim)
        .take_while(|line| !line.starts_with("Usage:") && !line.starts_with("For more"))
        .filter(|line| !line.is_empty())
        .collect();
    let text = text.join(" ");
    text.strip_prefix("error: ").unwrap_or(&text).to_owned()
}

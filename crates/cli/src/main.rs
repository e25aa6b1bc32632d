//! `overtake`: run Overtake's benchmarks from the command line.
//!
//! This binary is policy-free glue: it parses flags, loads data with progress shown on a terminal,
//! runs a workload, and prints a readable table or one JSON object. It must never panic on bad
//! input: flags are validated by the parser and errors end the process with a message and a
//! non-zero status.

#![forbid(unsafe_code)]

mod commands;
mod harness;
mod report;

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
    let cli = match commands::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if json && e.use_stderr() => {
            print_json_error(&parser_message(&e.to_string()));
            return ExitCode::from(2);
        }
        Err(e) => e.exit(),
    };
    if cli.command.ends_after_run() {
        harness::interrupt::install();
    }
    let result = commands::run(&cli.command);
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
    #[derive(serde::Serialize)]
    struct Failed<'a> {
        error: &'a str,
    }
    if report::print_json(&Failed { error: message }, &[]).is_err() {
        println!("{{\"error\": \"(unprintable)\"}}");
    }
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

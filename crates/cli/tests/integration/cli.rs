//! The command line as a user meets it: flags that do not apply are errors, `--json` errors are
//! JSON on stdout, repeated list values are refused, and asked-for checks are done and reported.
//! Every test runs the built binary.

use std::process::{Command, Output};

fn overtake(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_overtake"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs a command that must fail with a message on stderr that contains `says`; returns its exit
/// code.
fn refused(args: &[&str], says: &str) -> Option<i32> {
    let out = overtake(args);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    out.status.code()
}

/// Runs a command that must fail under `--json`: one JSON object with an `error` on stdout.
fn json_error(args: &[&str]) -> String {
    let out = overtake(args);
    assert!(!out.status.success(), "{args:?} succeeded");
    let value: serde_json::Value = serde_json::from_str(stdout(&out).trim())
        .unwrap_or_else(|e| panic!("{args:?}: stdout is not JSON ({e}): {}", stdout(&out)));
    value["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{args:?}: no error key: {value}"))
        .to_owned()
}

#[test]
fn client_flags_without_clients_are_refused() {
    for flag in [
        &["--think-us", "5"][..],
        &["--hp-share", "0.2"],
        &["--policy", "wait"],
    ] {
        let mut args = vec!["bench", "tpcc"];
        args.extend_from_slice(flag);
        assert_eq!(refused(&args, "--clients"), Some(2), "{args:?}");
    }
}

#[test]
fn json_errors_are_json_on_stdout() {
    let parse = json_error(&["bench", "tpcc", "--json", "--warehouses", "0"]);
    assert!(parse.contains("--warehouses"), "{parse}");
    let missing = json_error(&["bench", "tpcc", "--json", "--think-us", "5"]);
    assert!(missing.contains("--clients"), "{missing}");
    let run = json_error(&["compare", "mixed", "--json", "--policies", "wait,wait"]);
    assert!(run.contains("twice"), "{run}");
}

#[test]
fn a_list_flag_naming_a_value_twice_is_refused() {
    for args in [
        &["compare", "mixed", "--policies", "wait,preempt,wait"][..],
        &["compare", "bimodal", "--policies", "quantum,quantum"],
        &["compare", "locks", "--policies", "pow,pow"],
        &["compare", "holder", "--policies", "pow,cr,pow"],
        &["compare", "starvation", "--thresholds", "0.5,0.5"],
    ] {
        refused(args, "twice");
    }
}

#[test]
fn a_policy_that_cannot_preempt_the_work_is_refused() {
    refused(
        &[
            "bench",
            "mixed",
            "--preempt-mechanism",
            "poll",
            "--lp",
            "compute",
        ],
        "cannot preempt",
    );
}

#[test]
fn every_command_takes_the_same_worker_bound() {
    for command in [
        &["bench", "tpcc"][..],
        &["bench", "mixed"],
        &["bench", "bimodal"],
        &["bench", "locks"],
    ] {
        let mut args = command.to_vec();
        args.extend(["--workers", "257"]);
        assert_eq!(refused(&args, "1..=256"), Some(2), "{args:?}");
    }
}

#[test]
fn closed_loop_clients_run_the_consistency_check_they_are_asked_for() {
    let args = [
        "bench",
        "tpcc",
        "--clients",
        "2",
        "--duration",
        "0.2",
        "--check",
        "--json",
    ];
    let out = overtake(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_str(stdout(&out).trim()).expect("JSON");
    assert_eq!(value["benchmark"], "tpcc");
    assert_eq!(value["consistency"], "ok", "{value}");
    assert_eq!(
        value["classes"]["high"]["breakdown_us"]["preempted"], 0.0,
        "a class never preempted reads zero"
    );
}

#[test]
fn with_a_medium_class_the_arrival_counters_say_they_include_it() {
    let out = overtake(&[
        "bench",
        "mixed",
        "--mp",
        "tpcc",
        "--lp",
        "compute",
        "--policy",
        "wait",
        "--duration",
        "0.3",
        // Far more than one worker serves: the run must warn that it could not keep up.
        "--hp-queue",
        "64",
        "--arrival-interval-us",
        "100",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_str(stdout(&out).trim()).expect("JSON");
    let warnings = value["warnings"].as_array().expect("warnings");
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .is_some_and(|w| w.contains("urgent and medium-priority transactions"))),
        "{warnings:?}"
    );
}

/// True while process `pid` has a thread named `name`.
fn has_thread(pid: u32, name: &str) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|tasks| {
            tasks.flatten().any(|t| {
                std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name)
            })
        })
        .unwrap_or(false)
}

/// True once process `pid` catches SIGINT (its handler is installed).
fn catches_sigint(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (2 - 1)) != 0)
}

/// Runs `overtake args`, sends it SIGINT once `ready(pid)` (waiting as long as a loaded machine
/// may take; `what` names the state waited for), and returns how it ended.
fn interrupted_once(args: &[&str], what: &str, ready: impl Fn(u32) -> bool) -> Output {
    use std::process::Stdio;
    let child = Command::new(env!("CARGO_BIN_EXE_overtake"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !ready(child.id()) {
        assert!(std::time::Instant::now() < give_up, "never reached: {what}");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    child.wait_with_output().expect("exits")
}

#[test]
fn ctrl_c_ends_a_comparison_with_the_runs_it_finished() {
    // Once a worker thread exists, the first run has started (and the handler is installed).
    // The first of five policies takes ten rounds of a 60 ms computation: the signal lands in it.
    let out = interrupted_once(
        &["compare", "holder", "--rounds", "10", "--json"],
        "a run started",
        |pid| catches_sigint(pid) && has_thread(pid, "worker-0"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_str(stdout(&out).trim()).expect("JSON");
    assert_eq!(value["interrupted"], true, "{value}");
    let runs = value["runs"].as_array().expect("runs").len();
    assert!((1..5).contains(&runs), "{runs} runs printed");
}

#[test]
fn ctrl_c_shuts_serve_down_without_a_comparisons_message() {
    // The server's own handler is installed once it waits for a signal.
    let out = interrupted_once(
        &["serve", "--in-memory", "--listen", "127.0.0.1:0"],
        "serve waiting for a signal",
        catches_sigint,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("shutting down"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("interrupted"), "{}", stderr(&out));
}

#[test]
fn plot_and_csv_write_the_figures_and_every_transaction() {
    let dir = std::env::temp_dir().join(format!("overtake-cli-plot-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let csv = dir.join("jobs.csv");
    let (plot, csv_arg) = (dir.to_str().expect("utf-8"), csv.to_str().expect("utf-8"));
    let out = overtake(&[
        "bench",
        "mixed",
        "--lp",
        "compute",
        "--compute-ms",
        "2",
        "--policy",
        "preempt",
        "--duration",
        "0.3",
        "--plot",
        plot,
        "--csv",
        csv_arg,
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_str(stdout(&out).trim()).expect("JSON");
    let files = value["files"].as_array().expect("files listed");
    for name in ["latency-high.svg", "latency-low.svg", "throughput.svg"] {
        let path = dir.join(name);
        let svg = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(svg.starts_with("<svg"), "{name}");
        assert!(
            files.iter().any(|f| f.as_str() == path.to_str()),
            "{files:?}"
        );
    }
    // One row per transaction that ended: as many committed rows per class as the report says.
    let rows = std::fs::read_to_string(&csv).expect("CSV written");
    let mut lines = rows.lines();
    assert_eq!(
        lines.next(),
        Some("run,class,kind,arrival_us,queued_us,latency_us,preempted_us,status")
    );
    let committed = |class: &str| {
        rows.lines()
            .filter(|l| l.split(',').nth(1) == Some(class) && l.ends_with(",committed"))
            .count() as u64
    };
    for class in ["high", "low"] {
        assert_eq!(
            Some(committed(class)),
            value["classes"][class]["committed"].as_u64(),
            "{class}"
        );
    }
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn a_plot_directory_that_cannot_be_made_is_refused_before_any_run() {
    let file = std::env::temp_dir().join(format!("overtake-cli-notadir-{}", std::process::id()));
    std::fs::write(&file, "a file, not a directory").expect("write");
    let inside = file.join("figures");
    let error = json_error(&[
        "bench",
        "mixed",
        "--lp",
        "compute",
        "--duration",
        "30",
        "--json",
        "--plot",
        inside.to_str().expect("utf-8"),
    ]);
    assert!(
        error.contains("cannot create the plot directory"),
        "{error}"
    );
    std::fs::remove_file(&file).expect("clean up");
}

#[test]
fn tpcc_commands_name_their_figures_like_the_class_object() {
    let out = overtake(&["bench", "engine", "--count", "200", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_str(stdout(&out).trim()).expect("JSON");
    assert_eq!(value["benchmark"], "engine");
    assert!(
        value["per_sec"].as_f64().is_some_and(|r| r > 0.0),
        "{value}"
    );
    assert!(value["duration_s"].as_f64().is_some(), "{value}");
    let new_order = &value["by_type"]["new_order"];
    for key in ["per_sec", "committed", "rolled_back", "failed"] {
        assert!(new_order[key].is_number(), "{key}: {new_order}");
    }
    assert!(new_order["latency_us"]["mean"].is_number(), "{new_order}");
}

#[test]
fn a_kept_tpcc_database_is_recovered_continued_and_checked() {
    let dir = std::env::temp_dir().join(format!("overtake-cli-kept-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.to_str().expect("utf-8");
    let run = |durability: &str| {
        let out = overtake(&[
            "bench",
            "tpcc",
            "--data-dir",
            data,
            "--durability",
            durability,
            "--duration",
            "0.3",
            "--prefault-mib",
            "0",
            "--json",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_str::<serde_json::Value>(stdout(&out).trim()).expect("JSON")
    };
    let first = run("sync");
    assert_eq!(first["durability"]["mode"], "sync");
    assert!(
        first["durability"]["flushes"]
            .as_u64()
            .is_some_and(|f| f > 0)
    );
    assert_eq!(first["recovered"]["tables"], 0, "a new directory");
    // Under sync, read-write commits waited for their flush (and say how long).
    assert!(
        first["total"]["durable_wait_us"]["p50"]
            .as_f64()
            .is_some_and(|us| us > 0.0)
    );
    let second = run("async");
    assert_eq!(
        second["recovered"]["tables"], 10,
        "the first run's database (and its load marker)"
    );
    assert!(
        second["total"]["durable_wait_us"].is_null(),
        "async commits do not wait"
    );
    assert!(
        second["recovered"]["transactions"]
            .as_u64()
            .is_some_and(|t| t > 0)
    );
    // The load was checkpointed: its rows come from the checkpoint, not from replayed
    // transactions.
    assert!(
        second["recovered"]["checkpoint"]
            .as_str()
            .is_some_and(|c| c.contains("checkpoint.")),
        "{}",
        second["recovered"]
    );
    assert!(
        second["recovered"]["checkpoint_rows"]
            .as_u64()
            .is_some_and(|r| r > 500_000)
    );
    let out = overtake(&["check", "tpcc", "--data-dir", data, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let check: serde_json::Value = serde_json::from_str(stdout(&out).trim()).expect("JSON");
    assert_eq!(check["consistency"], "ok");
    assert_eq!(check["warehouses"], 1);
    // The durability flag belongs to a kept database.
    refused(&["bench", "tpcc", "--durability", "sync"], "--data-dir");
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn a_mixed_run_with_a_log_reports_commit_to_durable_per_class_and_removes_its_directory() {
    let dir = std::env::temp_dir().join(format!("overtake-cli-mixed-log-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let out = overtake(&[
        "bench",
        "mixed",
        "--durability",
        "sync",
        "--log-dir",
        dir.to_str().expect("utf-8"),
        "--duration",
        "0.3",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_str(stdout(&out).trim()).expect("JSON");
    assert_eq!(value["durability"], "sync");
    assert!(
        value["classes"]["high"]["durable_wait_us"]["p50"]
            .as_f64()
            .is_some_and(|us| us > 0.0),
        "{}",
        value["classes"]["high"]
    );
    assert_eq!(
        std::fs::read_dir(&dir).expect("dir").count(),
        0,
        "the run's database directory is removed"
    );
    std::fs::remove_dir_all(&dir).expect("clean up");
    refused(&["bench", "mixed", "--log-dir", "/tmp"], "--durability");
}

#[test]
fn a_run_killed_again_and_again_loses_nothing_it_acknowledged() {
    let dir = std::env::temp_dir().join(format!("overtake-cli-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = overtake(&[
        "crash-test",
        "--kills",
        "3",
        "--min-ms",
        "300",
        "--max-ms",
        "1500",
        "--data-dir",
        dir.to_str().expect("utf-8"),
        "--json",
    ]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let value: serde_json::Value = serde_json::from_str(stdout(&out).trim()).expect("JSON");
    assert_eq!(value["ok"], true, "{value}");
    assert_eq!(value["kills"], 3, "{value}");
    for run in value["runs"].as_array().expect("runs") {
        assert_eq!(run["missing"], 0, "{run}");
    }
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn a_ledger_with_an_order_that_was_never_committed_fails_the_check() {
    let dir = std::env::temp_dir().join(format!("overtake-cli-ledger-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.to_str().expect("utf-8");
    let ledger = dir.join("acknowledged.txt");
    let ledger_arg = ledger.to_str().expect("utf-8");
    let out = overtake(&[
        "bench",
        "tpcc",
        "--data-dir",
        data,
        "--duration",
        "0.2",
        "--prefault-mib",
        "0",
        "--ack-log",
        ledger_arg,
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let check_ledger = || {
        let out = overtake(&[
            "check",
            "tpcc",
            "--data-dir",
            data,
            "--ack-log",
            ledger_arg,
            "--json",
        ]);
        let check: serde_json::Value = serde_json::from_str(stdout(&out).trim()).expect("JSON");
        (out.status.success(), check)
    };
    let (passed, check) = check_ledger();
    assert!(passed, "{check}");
    assert!(
        check["acknowledged"].as_u64().is_some_and(|n| n > 0),
        "{check}"
    );
    assert_eq!(check["missing"], 0);
    // An order no run entered: the check must say it is missing, and fail.
    let mut lines = std::fs::read_to_string(&ledger).expect("ledger");
    lines.push_str("1 1 999999\n");
    std::fs::write(&ledger, lines).expect("ledger");
    let (passed, check) = check_ledger();
    assert!(!passed, "a lost order must fail the check");
    assert_eq!(check["missing"], 1, "{check}");
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn session_threads_under_ufs_are_refused_unless_overtake_ufs_is_loaded() {
    let ops = std::fs::read_to_string("/sys/kernel/sched_ext/root/ops").unwrap_or_default();
    if ops.trim() == "overtake_ufs" {
        return; // loaded here: `serve` would start
    }
    refused(
        &[
            "serve",
            "--in-memory",
            "--session-threads",
            "ufs",
            "--listen",
            "127.0.0.1:0",
        ],
        "overtake-ufs is not loaded",
    );
    refused(
        &[
            "serve",
            "--in-memory",
            "--ufs-hints",
            "--listen",
            "127.0.0.1:0",
        ],
        "--ufs-hints needs --session-threads",
    );
    refused(
        &[
            "serve",
            "--in-memory",
            "--session-threads",
            "idle",
            "--ufs-hints",
            "/nonexistent/overtake_ufs/hints",
            "--listen",
            "127.0.0.1:0",
        ],
        "no hint map at /nonexistent/overtake_ufs/hints",
    );
}

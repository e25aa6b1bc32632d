//! Progress bars on stderr while data loads and runs run, shown only on a terminal and never
//! under `--json`. They must never write to stdout, which holds the report.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar on stderr when it is a terminal and the output is not JSON; hidden otherwise.
pub fn progress(len: u64, message: &str, json: bool) -> ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {percent:>3}% {elapsed_precise}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(message.to_owned());
    bar
}

/// A progress bar for a run of `seconds`, advanced by the run's tick callback.
pub fn run_progress(seconds: f64, label: &str, json: bool) -> ProgressBar {
    progress((seconds * 10.0) as u64, label, json)
}

/// The tick callback that advances `bar`.
pub fn ticker(bar: &ProgressBar) -> impl Fn(Duration) + '_ {
    move |elapsed| bar.set_position((elapsed.as_secs_f64() * 10.0) as u64)
}

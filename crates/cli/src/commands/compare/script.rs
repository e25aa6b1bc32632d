//! The comparisons over the wire are driven by scripts under `scripts/` (servers, loads,
//! unchanged clients): this runs one, its progress to stderr, and gives back the CSV lines it
//! wrote, one per finished run. It never gives a line the script did not write.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

/// What a script left: its exit status and the lines of its CSV.
pub struct Finished {
    pub path: PathBuf,
    pub status: ExitStatus,
    pub lines: Vec<String>,
}

/// Runs `scripts/NAME` with a fresh CSV path first, then `args`. An error if it cannot be run,
/// or if it failed before writing any line.
pub fn run(name: &str, args: &[String]) -> Result<Finished, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts")
        .join(name);
    if !path.is_file() {
        return Err(format!(
            "{} is missing: run this command from the clone it was built in",
            path.display()
        ));
    }
    let csv = std::env::temp_dir().join(format!(
        "overtake-{}-{}.csv",
        name.trim_end_matches(".sh"),
        std::process::id()
    ));
    // The script's output is progress: it goes to stderr, keeping stdout for the report.
    let progress = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map(Stdio::from)
        .unwrap_or_else(|_| Stdio::null());
    let status = Command::new("bash")
        .arg(&path)
        .arg(&csv)
        .args(args)
        .stdout(progress)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", path.display()))?;
    let text = std::fs::read_to_string(&csv).unwrap_or_default();
    let _ = std::fs::remove_file(&csv);
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    if !status.success() && lines.is_empty() {
        return Err(format!("{} failed ({status})", path.display()));
    }
    Ok(Finished {
        path,
        status,
        lines,
    })
}

impl Finished {
    /// `Ok` if the script succeeded, else the error to end the command with (after its report
    /// of the runs it finished).
    pub fn result(&self) -> Result<(), String> {
        if self.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{} stopped ({}) after the runs above",
                self.path.display(),
                self.status
            ))
        }
    }
}

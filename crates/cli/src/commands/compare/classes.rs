//! Where each priority level's transactions spent their time during a run over the wire: the
//! `class` lines the comparison scripts write from Overtake's `overtake_stat_classes` view
//! (`scripts/classes.sh`), parsed and printed. It reports what the view said, never an
//! estimate: a level with no line had no transaction end during the run.

use serde::Serialize;

use crate::report::print_table;

/// Where one priority level's transactions spent their time during an Overtake run (a
/// transaction block counts as one transaction, a statement outside a block as one).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ClassTime {
    pub priority: String,
    /// Transactions that ended during the run (committed and rolled back).
    pub transactions: u64,
    pub rolled_back: u64,
    pub preemptions: u64,
    /// Mean microseconds per transaction, each of [`TIMES`] in order.
    pub queued_us: f64,
    pub running_us: f64,
    pub preempted_us: f64,
    pub client_wait_us: f64,
    pub lock_wait_us: f64,
    pub log_wait_us: f64,
    pub other_wait_us: f64,
}

/// The times a class line carries, in its order.
const TIMES: [&str; 7] = [
    "queued",
    "running",
    "preempted",
    "client",
    "locks",
    "log",
    "other",
];

/// A `class` line: the run's config, and its level's figures.
pub fn parse_class(line: &str) -> Result<(String, ClassTime), String> {
    let f: Vec<&str> = line.split(',').collect();
    let ["class", config, priority, counts @ ..] = &f[..] else {
        return Err(format!("not a class line: {line}"));
    };
    if counts.len() != 3 + TIMES.len() {
        return Err(format!(
            "a class line has {} fields, not {}: {line}",
            f.len(),
            6 + TIMES.len()
        ));
    }
    let num = |v: &str| {
        v.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("`{v}` is not a count or a time in: {line}"))
    };
    let n: Vec<f64> = counts.iter().map(|v| num(v)).collect::<Result<_, _>>()?;
    let transactions = n[0] + n[1];
    let mean = |total: f64| total / transactions.max(1.0);
    Ok((
        (*config).to_owned(),
        ClassTime {
            priority: (*priority).to_owned(),
            transactions: transactions as u64,
            rolled_back: n[1] as u64,
            preemptions: n[2] as u64,
            queued_us: mean(n[3]),
            running_us: mean(n[4]),
            preempted_us: mean(n[5]),
            client_wait_us: mean(n[6]),
            lock_wait_us: mean(n[7]),
            log_wait_us: mean(n[8]),
            other_wait_us: mean(n[9]),
        },
    ))
}

/// One `class` line: its run's config, and the level's figures.
pub type RunClass = (String, ClassTime);

/// A script's lines split into its runs (each parsed by `parse_run`) and its `class` lines.
pub fn split<T>(
    lines: &[String],
    parse_run: impl Fn(&str) -> Result<T, String>,
) -> Result<(Vec<T>, Vec<RunClass>), String> {
    let (class_lines, run_lines): (Vec<&String>, Vec<&String>) =
        lines.iter().partition(|l| l.starts_with("class,"));
    let runs = run_lines
        .into_iter()
        .map(|l| parse_run(l))
        .collect::<Result<Vec<_>, _>>()?;
    let classes = class_lines
        .into_iter()
        .map(|l| parse_class(l))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((runs, classes))
}

/// The classes of one run: Overtake's run named `config` (PostgreSQL's runs have none: its
/// servers do not say).
pub fn of_run(classes: &[RunClass], server: &str, config: &str) -> Vec<ClassTime> {
    classes
        .iter()
        .filter(|(c, _)| server == "overtake" && c == config)
        .map(|(_, t)| t.clone())
        .collect()
}

/// Prints each run's classes, `(config, classes)`, as a table of mean microseconds per
/// transaction; nothing if there are none. `unit` says what a transaction was in this
/// comparison.
pub fn print<'a>(runs: impl Iterator<Item = (&'a str, &'a [ClassTime])>, unit: &str) {
    let rows: Vec<Vec<String>> = runs
        .flat_map(|(config, classes)| classes.iter().map(move |c| (config, c)))
        .map(|(config, c)| {
            let us = |v: f64| format!("{v:.0}");
            vec![
                config.to_owned(),
                c.priority.clone(),
                c.transactions.to_string(),
                us(c.queued_us),
                us(c.running_us),
                us(c.preempted_us),
                us(c.client_wait_us),
                us(c.lock_wait_us),
                us(c.log_wait_us),
                us(c.other_wait_us),
            ]
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    println!(
        "\nwhere Overtake's transactions spent their time, mean microseconds per transaction \
         ({unit})"
    );
    let mut header = vec!["config", "priority", "transactions"];
    header.extend(TIMES);
    print_table(&header, &rows);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_lines_become_means_per_transaction() {
        let (config, c) =
            parse_class("class,pow,high,90,10,5,100,2000,300,4000,0,0,10.5").expect("valid");
        assert_eq!(config, "pow");
        assert_eq!((c.transactions, c.rolled_back, c.preemptions), (100, 10, 5));
        assert_eq!(
            (c.queued_us, c.running_us, c.client_wait_us),
            (1.0, 20.0, 40.0)
        );
        assert_eq!(c.other_wait_us, 0.105);
    }

    #[test]
    fn bad_class_lines_are_errors() {
        assert!(parse_class("class,same,high,1,0,0,1,1,1,1,1,1").is_err());
        assert!(parse_class("class,same,high,1,0,0,1,1,1,1,1,1,-1").is_err());
        assert!(parse_class("class,same,high,1,0,0,1,1,1,1,1,1,x").is_err());
        assert!(parse_class("overtake,same,high,1,0,0,1,1,1,1,1,1,1").is_err());
    }
}

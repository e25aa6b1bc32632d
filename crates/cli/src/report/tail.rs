//! `--tail-report`: where the slowest 1% of a run's urgent transactions spent their time (see
//! `overtake_sched::trace`), and how long the workers' non-preemptible regions were.

use std::collections::BTreeMap;

use overtake_engine::Priority;
use overtake_runtime::region::trace::RegionTrace;
use overtake_sched::trace::{
    LONG_REGION_US, TailReport as ClassTail, TraceMeans, regions_at_least, tail_report,
};
use overtake_workload::drivers::open_loop::RunReport;
use serde::Serialize;

use crate::report::{print_table, us};

fn row(name: &str, m: &TraceMeans) -> Vec<String> {
    vec![
        name.to_owned(),
        m.jobs.to_string(),
        us(m.latency_from_us),
        us(m.latency_us),
        us(m.delivery_us),
        us(m.behind_us),
        us(m.on_cpu_us),
        us(m.off_cpu_us),
        us(m.preempted_us),
        us(m.waited_us),
        format!("{:.2}", m.faults),
        format!("{:.2}", m.involuntary_switches),
        us(m.longest_region_us),
        us(m.longest_region_max_us),
    ]
}

/// Prints the tail report of every class above the lowest.
pub fn print(report: &RunReport, classes: &[(Priority, String)]) {
    println!();
    println!(
        "{}: where the slowest 1% of each urgent class went, against all of it (means, \
         microseconds): queued waiting for the worker to pause less urgent work (delivery) or \
         behind urgent work, running on the CPU or switched out by the OS, paused, parked; page \
         faults and OS switches per transaction; the longest non-preemptible region met",
        report.config.sched.policy.name()
    );
    let mut rows = Vec::new();
    for (priority, title) in classes.iter().filter(|(p, _)| *p > Priority::LOW) {
        if let Some(t) = tail_report(&report.stats.traces, *priority) {
            rows.push(row(&format!("{title}, slowest 1%"), &t.slowest));
            rows.push(row(&format!("{title}, all"), &t.all));
        }
    }
    print_table(
        &[
            "jobs",
            "n",
            "from",
            "latency",
            "delivery",
            "behind",
            "on cpu",
            "off cpu",
            "paused",
            "parked",
            "faults",
            "os switches",
            "region",
            "region max",
        ],
        &rows,
    );
    print_longest_running(report);
    print_regions(&TailReport::new(report, classes).regions);
}

/// The five urgent transactions that ran longest, each with what its worker counted meanwhile.
fn print_longest_running(report: &RunReport) {
    let mut traces: Vec<_> = report.stats.traces.iter().collect();
    traces.sort_by_key(|t| std::cmp::Reverse(t.running_ns));
    println!();
    println!(
        "the urgent transactions that ran longest (microseconds): on the CPU, switched out by the \
         OS, page faults, OS switches, the longest non-preemptible region met"
    );
    let rows: Vec<Vec<String>> = traces
        .iter()
        .take(5)
        .map(|t| {
            vec![
                us(t.running_ns as f64 / 1e3),
                us(t.cpu_ns.min(t.running_ns) as f64 / 1e3),
                us(t.running_ns.saturating_sub(t.cpu_ns) as f64 / 1e3),
                t.faults.to_string(),
                t.involuntary_switches.to_string(),
                us(t.longest_region_ns as f64 / 1e3),
            ]
        })
        .collect();
    print_table(
        &[
            "running",
            "on cpu",
            "off cpu",
            "faults",
            "os switches",
            "region",
        ],
        &rows,
    );
}

fn print_regions(regions: &Regions) {
    let total: u64 = regions.buckets.iter().sum();
    println!();
    println!(
        "non-preemptible regions of the workers: {total} in all, {} of {LONG_REGION_US} us or \
         more (by power-of-two bucket)",
        regions.at_least_50us
    );
    let rows: Vec<Vec<String>> = regions
        .buckets
        .iter()
        .enumerate()
        .filter(|&(_, &n)| n > 0)
        .map(|(i, n)| {
            vec![
                format!(
                    "{}-{} us",
                    RegionTrace::bucket_floor_us(i),
                    RegionTrace::bucket_floor_us(i + 1)
                ),
                n.to_string(),
            ]
        })
        .collect();
    print_table(&["length", "regions"], &rows);
    println!("the longest, and where they were opened:");
    let rows: Vec<Vec<String>> = regions
        .longest
        .iter()
        .map(|r| vec![us(r.us), r.site.clone()])
        .collect();
    print_table(&["us", "site"], &rows);
}

/// The tail report of a run: per urgent class, the slowest 1% against all of it; and the
/// workers' non-preemptible regions.
#[derive(Debug, Serialize)]
pub struct TailReport {
    pub classes: BTreeMap<&'static str, ClassTail>,
    pub regions: Regions,
}

/// The workers' non-preemptible regions: how many by power-of-two length bucket, how many of
/// [`LONG_REGION_US`] or more, and the longest with where they were opened.
#[derive(Debug, Serialize)]
pub struct Regions {
    pub buckets: Vec<u64>,
    pub at_least_50us: u64,
    pub longest: Vec<LongRegion>,
}

#[derive(Debug, Serialize)]
pub struct LongRegion {
    pub us: f64,
    pub site: String,
}

impl TailReport {
    pub fn new(report: &RunReport, classes: &[(Priority, String)]) -> Self {
        let regions = &report.stats.regions;
        TailReport {
            classes: classes
                .iter()
                .filter(|(p, _)| *p > Priority::LOW)
                .filter_map(|(p, _)| Some((p.as_str(), tail_report(&report.stats.traces, *p)?)))
                .collect(),
            regions: Regions {
                buckets: regions.buckets.to_vec(),
                at_least_50us: regions_at_least(regions, LONG_REGION_US),
                longest: regions
                    .longest
                    .iter()
                    .map(|(ns, site)| LongRegion {
                        us: *ns as f64 / 1e3,
                        site: site.to_string(),
                    })
                    .collect(),
            },
        }
    }
}

//! `overtake compare mixed`: the mixed workload of `bench mixed` under several scheduling
//! policies, each on a freshly loaded database, side by side with ratios to `wait`.

use clap::Args;

use crate::commands::bench::mixed::{
    Calibrated, MixedArgs, MixedComparison, MixedRun, check_can_preempt, check_resources,
    print_comparison, run_one, set_huge_pages, settings, settle_between_runs, write_figures,
};
use crate::commands::flags::{PolicyArg, each_once};
use crate::harness::interrupt;
use crate::report::figures::print_files;
use crate::report::print_json;

#[derive(Debug, Args)]
pub struct CompareMixedArgs {
    /// Policies to run, in order (comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "wait,cooperative,preempt"
    )]
    pub policies: Vec<PolicyArg>,
    #[command(flatten)]
    pub mixed: MixedArgs,
}

pub fn compare(args: &CompareMixedArgs) -> Result<(), String> {
    if args.policies.is_empty() {
        return Err("--policies needs at least one policy".into());
    }
    each_once("--policies", &args.policies, |p| {
        p.policy().name().to_owned()
    })?;
    for p in &args.policies {
        settings(p.policy(), &args.mixed)
            .validate()
            .map_err(|e| e.to_string())?;
        check_can_preempt(&args.mixed, p.policy())?;
    }
    check_resources(&args.mixed)?;
    set_huge_pages(&args.mixed)?;
    args.mixed.figures.prepare()?;
    let work = Calibrated::for_args(&args.mixed);
    let mut runs = Vec::with_capacity(args.policies.len());
    for policy in &args.policies {
        if interrupt::requested() {
            break;
        }
        runs.push(run_one(*policy, &args.mixed, &work)?);
        // The run's database is gone: free what it leaves behind now, not inside the next run.
        settle_between_runs();
    }
    interrupt::check_any(runs.len())?;
    let files = write_figures(&runs, &args.mixed)?;
    if args.mixed.json {
        let comparison = MixedComparison {
            interrupted: runs.len() < args.policies.len(),
            runs: runs.iter().map(|r| MixedRun::new(r, &args.mixed)).collect(),
        };
        print_json(&comparison, &files)?;
    } else {
        print_comparison(&runs, &args.mixed);
        interrupt::print_if_cut(runs.len(), args.policies.len());
        print_files(&files);
    }
    Ok(())
}

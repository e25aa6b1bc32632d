//! Ctrl-C during a comparison: the first ends it after the run in progress, so that the runs
//! already finished are still printed (a sweep can take many minutes); the second quits at once.
//! Commands look at [`requested`] between runs; nothing here touches a run in progress.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Installs the handler (once, at start-up). A failure to install only loses the feature.
pub fn install() {
    let installed = ctrlc::set_handler(|| {
        if REQUESTED.swap(true, Ordering::SeqCst) {
            eprintln!("interrupted again: quitting");
            std::process::exit(130);
        }
        eprintln!(
            "interrupted: stopping after the run in progress and printing the finished ones \
             (Ctrl-C again quits at once)"
        );
    });
    if let Err(e) = installed {
        eprintln!("warning: Ctrl-C will quit at once ({e})");
    }
}

/// True once Ctrl-C was pressed: start no further run.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// The line a table ends with when Ctrl-C cut the comparison short.
pub fn print_if_cut(done: usize, planned: usize) {
    if done < planned {
        println!("interrupted: {done} of {planned} runs finished and shown");
    }
}

/// Refuses to print a comparison with no finished run (Ctrl-C came before the first ended).
pub fn check_any(done: usize) -> Result<(), String> {
    if done == 0 {
        return Err("interrupted before any run finished".into());
    }
    Ok(())
}

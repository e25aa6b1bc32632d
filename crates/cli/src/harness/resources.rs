//! Refusing runs this machine cannot hold, and saying when it will share cores, before any work
//! starts. A run that would need more memory than is available is an error with the figures that
//! decide it; more workers than usable cores is allowed (a user may want to see it) with a
//! warning on stderr.

use overtake_workload::tpcc::load::estimated_load_bytes;

const GIB: f64 = (1u64 << 30) as f64;

/// Memory the operating system says can be allocated without swapping, in bytes.
fn available_memory() -> Option<u64> {
    Some(crate::harness::database::proc_kib("/proc/meminfo", "MemAvailable:")? * 1024)
}

/// Checks that loading `warehouses` and then growing by `growth` bytes fits in `available` bytes.
fn fits(warehouses: i64, growth: u64, available: u64) -> Result<(), String> {
    let load = estimated_load_bytes(warehouses);
    let needed = load + growth;
    if needed <= available {
        return Ok(());
    }
    let per_warehouse = estimated_load_bytes(1) - estimated_load_bytes(0);
    let most = available.saturating_sub(estimated_load_bytes(0) + growth) / per_warehouse;
    Err(format!(
        "{warehouses} warehouse(s) need about {:.1} GiB ({:.1} GiB to load, about {} MiB per \
         warehouse{}), and this machine has {:.1} GiB available: use at most {most} warehouse(s) \
         here, or a shorter run",
        needed as f64 / GIB,
        load as f64 / GIB,
        per_warehouse >> 20,
        if growth > 0 {
            format!(", plus {:.1} GiB the run adds", growth as f64 / GIB)
        } else {
            String::new()
        },
        available as f64 / GIB,
    ))
}

/// Refuses a run whose database would not fit in available memory, and warns (on stderr) when
/// `workers` exceed the cores this process may use. `growth` is what the run itself adds.
pub fn check(warehouses: i64, workers: usize, growth: u64) -> Result<(), String> {
    if let Some(available) = available_memory() {
        fits(warehouses, growth, available)?;
    }
    let cores = overtake_runtime::os::thread::available_cores();
    if workers > cores {
        eprintln!(
            "warning: {workers} workers on {cores} usable core(s): workers take turns on cores, \
             so latencies include waiting for one"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_that_does_not_fit_is_refused_with_the_figures() {
        let gib = 1u64 << 30;
        assert!(fits(1, 0, gib).is_ok());
        let err = fits(1000, 0, 24 * gib).expect_err("about 137 GiB");
        assert!(
            err.contains("1000 warehouse(s) need about 136.8 GiB"),
            "{err}"
        );
        assert!(err.contains("use at most 175 warehouse(s)"), "{err}");
        let err = fits(10, 20 * gib, 16 * gib).expect_err("the run's growth counts");
        assert!(err.contains("the run adds"), "{err}");
    }
}

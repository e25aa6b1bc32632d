//! An async service on tokio that keeps its orders fast while a report runs: the report is a
//! background transaction that scans every order many times, the order an urgent transaction
//! placed 10 ms later. Both are submitted from async handlers, which await their tickets (a
//! `Ticket` is a `Future`), so no tokio thread blocks. With one worker, the order overtakes the
//! running report: the worker pauses the report wherever it is, commits the order, and resumes
//! the report where it was.
//!
//! Run: `cargo run --release -p overtake-sched --example tokio_orders`

use std::error::Error;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use overtake_engine::{
    ColumnType, Database, Isolation, KeyRange, Options, RetryPolicy, ScanOptions, Table,
    TableSchema,
};
use overtake_sched::{CallExecutor, Priority, SchedConfig, Scheduler, Shutdown};

// Preemption anywhere (by signal) needs every allocation inside a non-preemptible region.
#[global_allocator]
static ALLOC: overtake_runtime::EngineAllocator = overtake_runtime::engine_allocator();

type BoxError = Box<dyn Error + Send + Sync>;

/// The service's shared state: the database, its table, and the scheduler every handler submits
/// transactions to.
struct Service {
    db: Arc<Database>,
    orders: Arc<Table>,
    scheduler: Scheduler<CallExecutor>,
}

const AMOUNT: usize = 1; // column positions of `orders`

/// An urgent handler: places one order and returns when it is committed.
async fn place_order(service: Arc<Service>, id: i64, amount: i64) -> Result<(), BoxError> {
    let s = Arc::clone(&service);
    let ticket = service.scheduler.call(Priority::HIGH, move || {
        let attempts = s.db.run(
            Priority::HIGH,
            Isolation::Serializable,
            &RetryPolicy::default(),
            |txn| {
                let row = s
                    .orders
                    .row_builder()
                    .int(0, id)
                    .int(AMOUNT, amount)
                    .finish()?;
                txn.insert(&s.orders, row)
            },
        );
        attempts.result
    })?;
    Ok(ticket.await??)
}

/// A background handler: the total of every order, computed `passes` times (a long report).
async fn report(service: Arc<Service>, passes: usize) -> Result<(usize, i64), BoxError> {
    let s = Arc::clone(&service);
    let ticket = service.scheduler.call(Priority::LOW, move || {
        let attempts = s.db.run(
            Priority::LOW,
            Isolation::Snapshot,
            &RetryPolicy::default(),
            |txn| {
                let (mut rows, mut total) = (0, 0);
                for _ in 0..passes {
                    (rows, total) = (0, 0);
                    txn.scan(&s.orders, &KeyRange::all(), ScanOptions::forward(), |r| {
                        rows += 1;
                        total += r.int(AMOUNT);
                        ControlFlow::Continue(())
                    })?;
                }
                Ok((rows, total))
            },
        );
        attempts.result
    })?;
    Ok(ticket.await??)
}

/// What [`run`] observed.
struct Observed {
    order_latency: Duration,
    order_done: Duration,
    report_done: Duration,
    report: (usize, i64),
}

/// Loads `rows` orders, then runs the report and, 10 ms into it, one urgent order.
async fn run(rows: i64, passes: usize) -> Result<Observed, BoxError> {
    let db = Arc::new(Database::in_memory(Options::default()));
    let orders = db.create_table(
        TableSchema::builder("orders")
            .column("id", ColumnType::Int64)
            .column("amount", ColumnType::Int64)
            .primary_key(&["id"])
            .build()?,
    )?;
    let scheduler = Scheduler::start(&SchedConfig::default().workers(1), Arc::new(CallExecutor))?;
    let service = Arc::new(Service {
        db,
        orders,
        scheduler,
    });
    // Loading is background work too (in batches, so that each transaction stays small).
    for batch in 0..(rows + 999) / 1_000 {
        let s = Arc::clone(&service);
        let ticket = service.scheduler.call(Priority::LOW, move || {
            let mut txn = s.db.begin(Priority::LOW, Isolation::Snapshot)?;
            for id in batch * 1_000..((batch + 1) * 1_000).min(rows) {
                let row = s.orders.row_builder().int(0, id).int(AMOUNT, 10).finish()?;
                txn.insert(&s.orders, row)?;
            }
            txn.commit()?;
            Ok::<_, overtake_engine::Error>(())
        })?;
        ticket.await??;
    }

    let t0 = Instant::now();
    let background = tokio::spawn(report(Arc::clone(&service), passes));
    tokio::time::sleep(Duration::from_millis(10)).await;
    let submitted = t0.elapsed();
    place_order(Arc::clone(&service), rows, 25).await?;
    let order_done = t0.elapsed();
    let report = background.await??;
    let report_done = t0.elapsed();

    let service = Arc::into_inner(service).ok_or("a handler still holds the service")?;
    let stats = service.scheduler.shutdown(Shutdown::Drain)?.stats;
    println!(
        "order: submitted at {submitted:.1?}, committed at {order_done:.1?} ({:.1?} later)",
        order_done - submitted
    );
    println!(
        "report: finished at {report_done:.1?}, paused {} time(s)",
        stats.class(Priority::LOW).preemptions
    );
    Ok(Observed {
        order_latency: order_done - submitted,
        order_done,
        report_done,
        report,
    })
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let seen = run(100_000, 40).await?;
    println!(
        "the report saw {} orders totalling {}",
        seen.report.0, seen.report.1
    );
    println!(
        "the order overtook the report: {} (order took {:.1?})",
        seen.order_done < seen.report_done,
        seen.order_latency
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The example runs and its transactions commit. Which one finishes first is not asserted: on
    /// a loaded machine the report may be done before the order arrives.
    #[test]
    fn the_example_runs_on_a_multi_thread_runtime() {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let seen = runtime.block_on(super::run(5_000, 2)).expect("run");
        // The report saw the snapshot at its start: either with the order or without it.
        assert!(
            seen.report == (5_000, 50_000) || seen.report == (5_001, 50_025),
            "{:?}",
            seen.report
        );
    }
}

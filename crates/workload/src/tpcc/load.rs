//! The TPC-C initial population (clause 4.3.3), loaded in parallel.
//!
//! The work is cut into independent tasks (ranges of items, each warehouse's own rows, ranges of its
//! stock, and each district with its customers, history, orders, order lines and new orders) that
//! loader threads take from a shared list. Each task has its own seeded generator, so a load is
//! reproducible whatever the thread count. Rows are inserted through ordinary transactions,
//! committed every few hundred rows.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use overtake_engine::{Database, Isolation, Priority, Result, Row, Table, Transaction};

use super::schema::{
    customer, district, history, item, new_order, order, order_line, stock, warehouse,
};
use super::{
    CUSTOMERS, DISTRICTS, FIRST_UNDELIVERED, ITEMS, STOCK, TpccTables, dollars, now_micros,
};
use crate::rng::{NuRandConstants, TpccRng, last_name};

/// Rows per loader transaction.
const BATCH: usize = 512;
/// Items or stock rows per task.
const CHUNK: i64 = 25_000;

/// What to load.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Number of warehouses (at least 1).
    pub warehouses: i64,
    /// Loader threads.
    pub threads: usize,
    /// Seed of every generator.
    pub seed: u64,
}

/// The result of a load.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The NURand constants the data was generated with (a run derives its own from these).
    pub constants: NuRandConstants,
    /// Rows inserted.
    pub rows: u64,
    /// Wall time.
    pub elapsed: Duration,
}

#[derive(Clone, Copy, Debug)]
enum Task {
    Items { first: i64, last: i64 },
    Warehouse { w: i64 },
    Stock { w: i64, first: i64, last: i64 },
    District { w: i64, d: i64 },
}

/// Number of rows a load of `warehouses` inserts (for progress reporting).
pub fn expected_rows(warehouses: i64) -> u64 {
    // Order lines average 10 per order (5..=15).
    let per_district = CUSTOMERS * 3 + CUSTOMERS * 10 + (CUSTOMERS - FIRST_UNDELIVERED + 1);
    (ITEMS + warehouses * (1 + STOCK + DISTRICTS * (1 + per_district))) as u64
}

/// Memory a loaded database needs, in bytes: an estimate for refusing loads that cannot fit.
/// Measured as the process's resident memory after loading (release build, `bench tpcc`): 181 MiB
/// for one warehouse, 587 MiB for four, i.e. about 46 MiB of items and process plus 135 MiB per
/// warehouse; rounded up.
pub fn estimated_load_bytes(warehouses: i64) -> u64 {
    const MIB: u64 = 1 << 20;
    50 * MIB + warehouses.max(0) as u64 * 140 * MIB
}

/// How much a database grows per TPC-C transaction of the standard mix, in bytes (New-Order adds
/// about eleven rows, Delivery removes some): measured at 80 MiB over a 2 s one-worker run of
/// about 80,000 transactions, rounded up.
pub const GROWTH_PER_TRANSACTION: u64 = 1_300;

/// How fast a database grows while one worker runs the mix back to back, in bytes per second:
/// [`GROWTH_PER_TRANSACTION`] at 80,000 transactions a second (faster than any machine of this
/// kind measured: 58,000 on an Intel VM), so that the estimate errs on the side of refusing.
pub const GROWTH_PER_WORKER_SECOND: u64 = 80_000 * GROWTH_PER_TRANSACTION;

fn tasks(warehouses: i64) -> Vec<Task> {
    let mut tasks = Vec::new();
    // Districts first: they are the largest tasks, so the threads finish together.
    for w in 1..=warehouses {
        for d in 1..=DISTRICTS {
            tasks.push(Task::District { w, d });
        }
    }
    for w in 1..=warehouses {
        tasks.push(Task::Warehouse { w });
        for first in (1..=STOCK).step_by(CHUNK as usize) {
            tasks.push(Task::Stock {
                w,
                first,
                last: (first + CHUNK - 1).min(STOCK),
            });
        }
    }
    for first in (1..=ITEMS).step_by(CHUNK as usize) {
        tasks.push(Task::Items {
            first,
            last: (first + CHUNK - 1).min(ITEMS),
        });
    }
    tasks
}

/// Loads the initial population into `tables`. `progress` is called with the number of rows each
/// committed batch added.
pub fn load(
    db: &Database,
    tables: &TpccTables,
    options: &LoadOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Loaded> {
    let start = Instant::now();
    let constants = NuRandConstants::for_load(&mut TpccRng::new(options.seed));
    let tasks = tasks(options.warehouses.max(1));
    let next = AtomicUsize::new(0);
    let threads = options.threads.clamp(1, tasks.len());
    let results: Vec<Result<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut rows = 0;
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&task) = tasks.get(i) else { break };
                        let seed =
                            options.seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                        let mut loader = Loader::new(db, tables, progress, TpccRng::new(seed));
                        loader.run(task, &constants)?;
                        rows += loader.finish()?;
                    }
                    Ok(rows)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("loader thread panicked"))
            .collect()
    });
    let mut rows = 0;
    for r in results {
        rows += r?;
    }
    Ok(Loaded {
        constants,
        rows,
        elapsed: start.elapsed(),
    })
}

/// One loader thread working on one task.
struct Loader<'a> {
    db: &'a Database,
    t: &'a TpccTables,
    progress: &'a (dyn Fn(u64) + Sync),
    rng: TpccRng,
    txn: Option<Transaction<'a>>,
    in_batch: usize,
    rows: u64,
    /// Scratch strings, reused for every field.
    s: [String; 4],
    now: i64,
}

impl<'a> Loader<'a> {
    fn new(
        db: &'a Database,
        t: &'a TpccTables,
        progress: &'a (dyn Fn(u64) + Sync),
        rng: TpccRng,
    ) -> Self {
        Loader {
            db,
            t,
            progress,
            rng,
            txn: None,
            in_batch: 0,
            rows: 0,
            s: Default::default(),
            now: now_micros(),
        }
    }

    fn insert(&mut self, table: &Table, row: Row) -> Result<()> {
        if self.txn.is_none() {
            self.txn = Some(self.db.begin(Priority::LOW, Isolation::Snapshot)?);
        }
        if let Some(txn) = self.txn.as_mut() {
            txn.insert(table, row)?;
        }
        self.in_batch += 1;
        if self.in_batch == BATCH {
            self.commit()?;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        if let Some(mut txn) = self.txn.take() {
            txn.commit()?;
            (self.progress)(self.in_batch as u64);
            self.rows += self.in_batch as u64;
            self.in_batch = 0;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<u64> {
        self.commit()?;
        Ok(self.rows)
    }

    /// Fills scratch string `i` with a random a-string and returns it.
    fn astr(&mut self, i: usize, min: usize, max: usize) -> &str {
        self.s[i].clear();
        self.rng.astring(&mut self.s[i], min, max);
        &self.s[i]
    }

    fn run(&mut self, task: Task, constants: &NuRandConstants) -> Result<()> {
        match task {
            Task::Items { first, last } => self.items(first, last),
            Task::Warehouse { w } => self.warehouse(w),
            Task::Stock { w, first, last } => self.stock(w, first, last),
            Task::District { w, d } => self.district(w, d, constants),
        }
    }

    fn items(&mut self, first: i64, last: i64) -> Result<()> {
        let t = self.t;
        let table = &t.item;
        let mut b = table.row_builder();
        for i_id in first..=last {
            let im_id = self.rng.uniform(1, 10_000);
            let price = self.rng.uniform(dollars(1), dollars(100));
            b.int(item::I_ID, i_id)
                .int(item::I_IM_ID, im_id)
                .str(item::I_NAME, self.astr(0, 14, 24))
                .decimal_units(item::I_PRICE, price);
            self.s[1].clear();
            self.rng.data_with_original(&mut self.s[1], 26, 50);
            b.str(item::I_DATA, &self.s[1]);
            let row = b.finish()?;
            self.insert(table, row)?;
        }
        Ok(())
    }

    /// Fills the address columns starting at `street_1` (street 1, street 2, city, state, zip).
    fn address(&mut self, b: &mut overtake_engine::RowBuilder<'_>, street_1: usize) {
        b.str(street_1, self.astr(0, 10, 20));
        b.str(street_1 + 1, self.astr(0, 10, 20));
        b.str(street_1 + 2, self.astr(0, 10, 20));
        b.str(street_1 + 3, self.astr(0, 2, 2));
        self.s[0].clear();
        self.rng.zip(&mut self.s[0]);
        b.str(street_1 + 4, &self.s[0]);
    }

    fn warehouse(&mut self, w: i64) -> Result<()> {
        let t = self.t;
        let mut b = t.warehouse.row_builder();
        b.int(warehouse::W_ID, w)
            .str(warehouse::W_NAME, self.astr(0, 6, 10));
        self.address(&mut b, warehouse::W_STREET_1);
        let tax = self.rng.uniform(0, 2_000);
        b.decimal_units(warehouse::W_TAX, tax)
            .decimal_units(warehouse::W_YTD, dollars(300_000));
        self.insert(&t.warehouse, b.finish()?)?;

        let mut b = t.district.row_builder();
        for d in 1..=DISTRICTS {
            b.int(district::D_W_ID, w)
                .int(district::D_ID, d)
                .str(district::D_NAME, self.astr(0, 6, 10));
            self.address(&mut b, district::D_STREET_1);
            let tax = self.rng.uniform(0, 2_000);
            b.decimal_units(district::D_TAX, tax)
                .decimal_units(district::D_YTD, dollars(30_000))
                .int(district::D_NEXT_O_ID, CUSTOMERS + 1);
            self.insert(&t.district, b.finish()?)?;
        }
        Ok(())
    }

    fn stock(&mut self, w: i64, first: i64, last: i64) -> Result<()> {
        let t = self.t;
        let table = &t.stock;
        let mut b = table.row_builder();
        for i_id in first..=last {
            let quantity = self.rng.uniform(10, 100);
            b.int(stock::S_W_ID, w)
                .int(stock::S_I_ID, i_id)
                .int(stock::S_QUANTITY, quantity);
            for d in 0..10 {
                b.str(stock::S_DIST_01 + d, self.astr(0, 24, 24));
            }
            b.int(stock::S_YTD, 0)
                .int(stock::S_ORDER_CNT, 0)
                .int(stock::S_REMOTE_CNT, 0);
            self.s[1].clear();
            self.rng.data_with_original(&mut self.s[1], 26, 50);
            b.str(stock::S_DATA, &self.s[1]);
            let row = b.finish()?;
            self.insert(table, row)?;
        }
        Ok(())
    }

    fn district(&mut self, w: i64, d: i64, constants: &NuRandConstants) -> Result<()> {
        let t = self.t;
        let now = self.now;
        let mut c = t.customer.row_builder();
        let mut h = t.history.row_builder();
        for c_id in 1..=CUSTOMERS {
            let name_number = if c_id <= 1_000 {
                c_id - 1
            } else {
                self.rng.nurand(255, 0, 999, constants.c_last)
            };
            self.s[2].clear();
            last_name(name_number, &mut self.s[2]);
            c.int(customer::C_W_ID, w)
                .int(customer::C_D_ID, d)
                .int(customer::C_ID, c_id)
                .str(customer::C_FIRST, self.astr(0, 8, 16))
                .str(customer::C_MIDDLE, "OE")
                .str(customer::C_LAST, &self.s[2]);
            self.address(&mut c, customer::C_STREET_1);
            self.s[0].clear();
            self.rng.nstring(&mut self.s[0], 16, 16);
            let credit = if self.rng.uniform(1, 10) == 1 {
                "BC"
            } else {
                "GC"
            };
            let discount = self.rng.uniform(0, 5_000);
            c.str(customer::C_PHONE, &self.s[0])
                .timestamp(customer::C_SINCE, now)
                .str(customer::C_CREDIT, credit)
                .decimal_units(customer::C_CREDIT_LIM, dollars(50_000))
                .decimal_units(customer::C_DISCOUNT, discount)
                .decimal_units(customer::C_BALANCE, -dollars(10))
                .decimal_units(customer::C_YTD_PAYMENT, dollars(10))
                .int(customer::C_PAYMENT_CNT, 1)
                .int(customer::C_DELIVERY_CNT, 0)
                .str(customer::C_DATA, self.astr(1, 300, 500));
            self.insert(&t.customer, c.finish()?)?;

            h.int(history::H_C_ID, c_id)
                .int(history::H_C_D_ID, d)
                .int(history::H_C_W_ID, w)
                .int(history::H_D_ID, d)
                .int(history::H_W_ID, w)
                .timestamp(history::H_DATE, now)
                .decimal_units(history::H_AMOUNT, dollars(10))
                .str(history::H_DATA, self.astr(0, 12, 24));
            self.insert(&t.history, h.finish()?)?;
        }

        // Orders go to customers in a random permutation.
        let mut customers: Vec<i64> = (1..=CUSTOMERS).collect();
        for i in (1..customers.len()).rev() {
            customers.swap(i, self.rng.below(i + 1));
        }
        let mut o = t.order.row_builder();
        let mut ol = t.order_line.row_builder();
        let mut no = t.new_order.row_builder();
        for o_id in 1..=CUSTOMERS {
            let delivered = o_id < FIRST_UNDELIVERED;
            let lines = self.rng.uniform(5, 15);
            o.int(order::O_W_ID, w)
                .int(order::O_D_ID, d)
                .int(order::O_ID, o_id)
                .int(order::O_C_ID, customers[(o_id - 1) as usize])
                .timestamp(order::O_ENTRY_D, now)
                .int(order::O_OL_CNT, lines)
                .int(order::O_ALL_LOCAL, 1);
            if delivered {
                let carrier = self.rng.uniform(1, 10);
                o.int(order::O_CARRIER_ID, carrier);
            } else {
                o.null(order::O_CARRIER_ID);
            }
            self.insert(&t.order, o.finish()?)?;
            for number in 1..=lines {
                let i_id = self.rng.uniform(1, ITEMS);
                ol.int(order_line::OL_W_ID, w)
                    .int(order_line::OL_D_ID, d)
                    .int(order_line::OL_O_ID, o_id)
                    .int(order_line::OL_NUMBER, number)
                    .int(order_line::OL_I_ID, i_id)
                    .int(order_line::OL_SUPPLY_W_ID, w)
                    .int(order_line::OL_QUANTITY, 5);
                if delivered {
                    ol.timestamp(order_line::OL_DELIVERY_D, now)
                        .decimal_units(order_line::OL_AMOUNT, 0);
                } else {
                    let amount = self.rng.uniform(1, 999_999);
                    ol.null(order_line::OL_DELIVERY_D)
                        .decimal_units(order_line::OL_AMOUNT, amount);
                }
                ol.str(order_line::OL_DIST_INFO, self.astr(0, 24, 24));
                self.insert(&t.order_line, ol.finish()?)?;
            }
            if !delivered {
                no.int(new_order::NO_W_ID, w)
                    .int(new_order::NO_D_ID, d)
                    .int(new_order::NO_O_ID, o_id);
                self.insert(&t.new_order, no.finish()?)?;
            }
        }
        Ok(())
    }
}

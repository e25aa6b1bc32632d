//! Running statements as scheduler tasks. A statement outside a transaction block is one call:
//! begin, execute, commit. A transaction block is one task that lives from its first statement to
//! COMMIT or ROLLBACK: it executes each statement the session sends it and parks in between,
//! waiting for the next (its writes are deferred, its row locks revocable: while it waits for its
//! client it holds nothing an urgent transaction cannot take).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use overtake_engine::{Database, Isolation, Savepoint, Transaction};
use overtake_sched::{CallError, Group, Outcome, Priority, Promise, Status, Ticket};
use overtake_sql::Catalog;
use overtake_sql::catalog::pending::{Change, Pending, Tables};
use overtake_sql::exec::access::Actor;
use overtake_sql::exec::ddl;
use overtake_sql::exec::{self, Output};
use overtake_sql::{Context, Datum, IsolationLevel, Prepared, Query, SqlError, SqlTable, sqlstate};

use crate::runner::Runner;

/// The engine's isolation for a SQL level.
pub fn isolation(level: IsolationLevel) -> Isolation {
    match level {
        IsolationLevel::ReadCommitted => Isolation::ReadCommitted,
        IsolationLevel::RepeatableRead => Isolation::Snapshot,
        IsolationLevel::Serializable => Isolation::Serializable,
    }
}

/// Begins a SQL transaction at `priority` and `level`. Its writers lock the rows they write at
/// every level, as PostgreSQL's do, so that READ COMMITTED and REPEATABLE READ writers of one
/// row wait for each other (the second then applies its change, or fails with 40001).
fn begin(
    db: &Database,
    priority: Priority,
    level: IsolationLevel,
) -> Result<overtake_engine::Transaction<'_>, overtake_engine::Error> {
    let mut txn = db.begin(priority, isolation(level))?;
    txn.lock_rows_it_writes();
    Ok(txn)
}

/// Rows to insert: COPY's data in its format, for `columns` of `table`, as the client sends it.
pub struct Rows {
    pub table: Arc<SqlTable>,
    pub columns: Vec<usize>,
    pub options: overtake_sql::plan::copy::CopyOptions,
    /// The foreign keys the rows involve (`None`: none).
    pub references: Option<Arc<overtake_sql::catalog::references::References>>,
    pub data: Ticket<CopyData>,
}

/// A piece of COPY's data on its way to the statement's task, or its end.
pub enum CopyData {
    /// A piece, the promise to fulfil once it is taken (the session then reads the next from
    /// the client: at most two pieces are held), and where the next comes.
    Piece {
        bytes: Vec<u8>,
        taken: Promise<()>,
        next: Ticket<CopyData>,
    },
    /// The client sent CopyDone.
    Done,
}

/// Rows of a statement's result on their way from its task to the session: a batch, the promise
/// to fulfil once the batch is handed to the connection, and where the next batch comes.
pub struct Chunk {
    pub rows: Vec<Vec<Datum>>,
    pub taken: Promise<Take>,
    pub next: Ticket<Chunk>,
}

/// What the session says of a batch it took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// Make the next.
    More,
    /// Make no more: a portal closed before its end. The statement ends with the rows it made;
    /// its transaction goes on (only statements that write nothing run this way).
    Stop,
}

/// A batch is sent when its rows take this much memory (see `overtake_sql::values::datum::row_bytes`).
const CHUNK_BYTES: usize = 64 * 1024;

/// The task's side of a result sent in batches: at most two batches exist at once (one being
/// written to the client, one being filled), so a result of any size takes bounded memory. The
/// statement parks (holding no latch: between rows of its scan) while the client is slow to
/// take a batch, and ends with 57014 if the session stops taking them (a cancel, or the client
/// gone). Each batch waits until what the statement read so far is durable before it leaves.
///
/// A batch that fills inside a scan parks inside the scan's callback, where the scan's epoch is
/// entered: while a client is slow, memory retired meanwhile (by any thread) waits to be freed.
/// That delays no one's progress, and the statement's snapshot holds back the collector anyway
/// for as long (as PostgreSQL's does vacuum); leaving the epoch there would need the engine's scan
/// to offer a pause point.
struct RowSender<'db> {
    /// Where the next batch goes (`None`: no one takes batches; every row goes with the reply).
    out: Option<Promise<Chunk>>,
    /// Fulfilled once the last batch sent was taken.
    taken: Option<Ticket<Take>>,
    batch: Vec<Vec<Datum>>,
    bytes: usize,
    /// A batch is also sent once it holds this many rows (a portal's fetch size).
    batch_rows: usize,
    reads: overtake_engine::Reads<'db>,
    /// The session asked for no more rows ([`Take::Stop`]).
    stopped: bool,
}

impl RowSender<'_> {
    fn push(&mut self, row: Vec<Datum>) -> Result<(), SqlError> {
        self.bytes += overtake_sql::values::datum::row_bytes(&row);
        self.batch.push(row);
        if (self.bytes >= CHUNK_BYTES || self.batch.len() >= self.batch_rows) && self.out.is_some()
        {
            self.send()?;
        }
        Ok(())
    }

    /// Waits until the batch sent before was taken. An error stops the statement: the session
    /// asked for no more (`stopped` tells that from a cancel) or is gone.
    fn wait_taken(&mut self) -> Result<(), SqlError> {
        match self.taken.take().map(Ticket::wait) {
            None | Some(Ok(Take::More)) => Ok(()),
            Some(Ok(Take::Stop)) => {
                self.stopped = true;
                Err(cancelled())
            }
            Some(Err(_)) => Err(cancelled()),
        }
    }

    fn send(&mut self) -> Result<(), SqlError> {
        self.wait_taken()?;
        self.reads
            .wait_durable()
            .map_err(|why| SqlError::from(overtake_engine::CommitError::NotDurable(why)))?;
        let (next, next_ticket) = Promise::new();
        let (taken, taken_ticket) = Promise::new();
        let out = self
            .out
            .replace(next)
            .expect("only sent with somewhere to go");
        out.fulfil(Chunk {
            rows: std::mem::take(&mut self.batch),
            taken,
            next: next_ticket,
        });
        self.taken = Some(taken_ticket);
        self.bytes = 0;
        Ok(())
    }

    /// The statement's result, with command tag `tag` and the rows not sent yet, once every
    /// batch was taken (so that those rows follow the batches).
    fn finish(&mut self, tag: String) -> Result<Done, SqlError> {
        self.wait_taken()?;
        Ok(Done {
            out: Output {
                tag,
                rows: std::mem::take(&mut self.batch),
            },
            changes: Vec::new(),
            batches: self.out.take(),
        })
    }
}

/// What a session asks of its transaction's task.
pub enum Request {
    /// Run a statement's work; `cancel` is set if the client cancels it meanwhile.
    Run {
        work: StatementWork,
        cancel: Arc<Cancel>,
        reply: Promise<Reply>,
    },
    /// SAVEPOINT, ROLLBACK TO or RELEASE, and where the answer goes.
    Savepoint(SavepointOp, Promise<SavepointReply>),
    Commit(Promise<Result<(), SqlError>>),
    Rollback(Promise<()>),
}

/// What a block's task does for a savepoint statement. Its writes are buffered, so a savepoint
/// is a point in them (see `overtake_engine::Savepoint`); the session keeps the names.
#[derive(Debug)]
pub enum SavepointOp {
    /// A savepoint where the transaction's writes are now (`None` if it has not begun: it then
    /// begins later, and rolling back to `None` undoes everything since it began).
    Make,
    /// Undo the writes since `Some` savepoint, or since the transaction began.
    RollbackTo(Option<Savepoint>),
    /// The session holds no savepoint any more: a failed statement ends the transaction again,
    /// and writes stop keeping what they change.
    ReleasedAll,
}

/// A savepoint statement's answer, and where the block's next request goes.
pub struct SavepointReply {
    pub result: Result<Option<Savepoint>, SqlError>,
    pub next: Promise<Request>,
}

/// What a statement's task hands back: its output, the catalog changes of DDL (uncommitted),
/// and where a next batch of rows would have gone. The session drops that once it has the
/// reply: dropped by the task, it would wake the session once more for every statement.
pub struct Done {
    pub out: Output,
    pub changes: Vec<Change>,
    pub batches: Option<Promise<Chunk>>,
}

impl Done {
    fn new(out: Output) -> Done {
        Done {
            out,
            changes: Vec::new(),
            batches: None,
        }
    }
}

/// A statement's result, and where to send the next request (`None`: the transaction ended,
/// rolled back by the statement's error).
pub struct Reply {
    pub result: Result<Done, SqlError>,
    pub next: Option<Promise<Request>>,
}

fn query_of(prepared: &Prepared) -> Result<&Query, SqlError> {
    match &prepared.command {
        overtake_sql::Command::Query(q) | overtake_sql::Command::CopyOut(q, _) => Ok(q),
        _ => Err(SqlError::new(
            sqlstate::INTERNAL_ERROR,
            "not a data statement",
        )),
    }
}

/// Runs `request` in `txn`; a scan stops with 57014 once `cancel` is set. Returns the
/// statement's output and, for DDL, the catalog changes it made (uncommitted).
fn run(
    txn: &mut overtake_engine::Transaction<'_>,
    request: StatementWork,
    cancel: &Cancel,
) -> Result<Done, SqlError> {
    txn.next_statement();
    txn.set_lock_timeout(cancel.lock_timeout);
    txn.set_interrupt(Some(Arc::clone(&cancel.requested)));
    // Set once per statement (a cancel is made per statement): the flag is set first, so a
    // request that finds no waker yet is seen by the wait when it begins. In a region: a
    // OnceLock being set is a lock of a kind (the canceller only reads it, never waits).
    {
        let _region = overtake_runtime::NoPreemptGuard::new();
        let _ = cancel.waker.set(overtake_runtime::park::current_unparker());
    }
    let cancel = cancel.flag();
    match request {
        StatementWork::Run(s) => {
            let mut cx = Context::new(&s.params, s.started)
                .in_transaction_since(s.began)
                .for_user(&s.user)
                .with_backends(&*s.backends)
                .with_memory(s.memory)
                .cancelled_by(cancel);
            if let Some(settings) = &s.settings {
                cx = cx.with_settings(&**settings);
            }
            let mut sender = RowSender {
                out: s.rows,
                taken: None,
                batch: Vec::new(),
                bytes: 0,
                batch_rows: s.batch_rows.unwrap_or(usize::MAX),
                reads: txn.reads(),
                stopped: false,
            };
            let done =
                exec::execute_each(txn, query_of(&s.prepared)?, &cx, &mut |r| sender.push(r))
                    .and_then(|tag| sender.finish(tag));
            if sender.stopped {
                // Its portal was closed: what it made so far was its result.
                return Ok(Done::new(Output {
                    tag: String::new(),
                    rows: Vec::new(),
                }));
            }
            done
        }
        StatementWork::Insert(rows) => {
            let cx =
                Context::new(&[], overtake_sql::values::time::now_micros()).cancelled_by(cancel);
            // Parsed here, in the statement's task, as it arrives: never in the session's step,
            // where a large COPY would hold up every other session on it.
            let mut parser =
                overtake_sql::exec::copy::RowParser::new(&rows.table, &rows.columns, &rows.options);
            let mut insertion = exec::Insertion::new(&rows.table, rows.references.as_deref());
            let (mut n, mut next) = (0, rows.data);
            loop {
                match next.wait() {
                    Ok(CopyData::Piece {
                        bytes,
                        taken,
                        next: after,
                    }) => {
                        // Taken at once: the session reads the next piece while this is parsed.
                        taken.fulfil(());
                        let parsed = parser.feed(&bytes)?;
                        drop(bytes);
                        n += insertion.rows(txn, &rows.columns, parsed, &cx)?;
                        next = after;
                    }
                    Ok(CopyData::Done) => break,
                    // The session gave up the COPY (CopyFail, or the client went away).
                    Err(_) => return Err(cancelled()),
                }
            }
            let parsed = parser.finish()?;
            n += insertion.rows(txn, &rows.columns, parsed, &cx)?;
            insertion.finish(txn, &cx)?;
            let out = Output {
                tag: format!("COPY {n}"),
                rows: Vec::new(),
            };
            Ok(Done::new(out))
        }
        StatementWork::Ddl(catalog, prepared, pending, actor) => {
            let tables = Tables::with(&catalog, &pending).acting_for(&actor);
            let (tag, changes) = match &prepared.command {
                overtake_sql::Command::Ddl(ddl) => ddl::execute_in(tables, txn, ddl)?,
                overtake_sql::Command::Role(command) => {
                    (crate::roles::run(txn, tables, &actor, command)?, Vec::new())
                }
                _ => return Err(SqlError::new(sqlstate::INTERNAL_ERROR, "not DDL")),
            };
            let out = Output {
                tag: tag.to_owned(),
                rows: Vec::new(),
            };
            Ok(Done {
                changes,
                ..Done::new(out)
            })
        }
    }
}

/// A data statement to run, and what it runs with.
pub struct Statement {
    pub prepared: Arc<Prepared>,
    pub params: Vec<Datum>,
    /// When its transaction began, and it (microseconds since the epoch).
    pub began: i64,
    pub started: i64,
    /// The session's user.
    pub user: Arc<str>,
    pub backends: Arc<dyn overtake_sql::expr::Backends>,
    /// The session's settings as it started, if it reads or sets them (`current_setting`,
    /// `set_config`).
    pub settings: Option<Arc<crate::statement_settings::StatementSettings>>,
    /// Its memory budget for sorts, groups and DISTINCT (bytes).
    pub memory: usize,
    /// Where its rows go in batches as they are made (`None`: all with its reply).
    pub rows: Option<Promise<Chunk>>,
    /// At most this many rows per batch (a portal's fetch size; `None`: batches by size alone).
    pub batch_rows: Option<usize>,
}

/// A statement's work, whether it runs alone or in a block: a data statement; COPY's rows; or
/// DDL over the catalog as the block has changed it so far, acting for the session's role.
pub enum StatementWork {
    Run(Statement),
    Insert(Rows),
    /// DDL or a change of roles.
    Ddl(Arc<Catalog>, Arc<Prepared>, Arc<Pending>, Actor),
}

/// The body of a transaction block's task: begins, then serves requests until COMMIT, ROLLBACK,
/// a failed statement, or the session going away (its promise dropped), which rolls back.
/// `savepoints`: the session made savepoints before the task started.
fn serve(
    db: &Database,
    priority: Priority,
    (level, mut savepoints): (IsolationLevel, bool),
    mut inbox: Ticket<Request>,
) -> Outcome {
    let mut txn = None;
    // Where the transaction began (ROLLBACK TO a savepoint made before it did), and whether
    // the session holds savepoints (a failed statement then leaves the transaction open, for
    // ROLLBACK TO to undo).
    let mut start = None;
    // Time parked for the client's next request: every wait but the first, which waits for the
    // session to hand over the statement that opened the block.
    let mut client_wait = Duration::ZERO;
    let mut first = true;
    loop {
        let waiting = (!first).then(Instant::now);
        first = false;
        let request = inbox.wait();
        client_wait += waiting.map_or(Duration::ZERO, |since| since.elapsed());
        let Ok(request) = request else {
            // The session went away: dropping the transaction rolls it back.
            return booked(txn.as_ref(), Status::RolledBack, client_wait);
        };
        let (work, cancel, reply) = match request {
            Request::Run {
                work,
                cancel,
                reply,
            } => (work, cancel, reply),
            Request::Commit(reply) => {
                let Some(mut t) = txn.take() else {
                    reply.fulfil(Ok(()));
                    return booked(None, Status::Committed, client_wait);
                };
                let result = Transaction::commit(&mut t).map_err(SqlError::from);
                let status = if result.is_ok() {
                    Status::Committed
                } else {
                    Status::RolledBack
                };
                reply.fulfil(result);
                return booked(Some(&t), status, client_wait);
            }
            Request::Rollback(reply) => {
                let outcome = booked(txn.as_ref(), Status::RolledBack, client_wait);
                drop(txn.take());
                reply.fulfil(());
                return outcome;
            }
            Request::Savepoint(op, reply) => {
                let result = savepoint(&mut txn, start, &mut savepoints, op);
                let (next, ticket) = Promise::new();
                reply.fulfil(SavepointReply { result, next });
                inbox = ticket;
                continue;
            }
        };
        if txn.is_none() {
            match begin(db, priority, level) {
                Ok(mut t) => {
                    start = t.savepoint().ok();
                    txn = Some(t);
                }
                Err(e) => {
                    reply.fulfil(Reply {
                        result: Err(e.into()),
                        next: None,
                    });
                    return booked(None, Status::RolledBack, client_wait);
                }
            }
        }
        let t = txn.as_mut().expect("begun above");
        // Rows it returns leave only once what the transaction read is durable (under `sync`):
        // a client never sees a commit that a crash could take back. A row count does not wait
        // (the block's COMMIT does: its record follows everything it read).
        let shows_rows = matches!(&work, StatementWork::Run(s) if !s.prepared.columns.is_empty());
        let result = run(t, work, &cancel).and_then(|done| {
            if shows_rows {
                t.wait_reads_durable()
                    .map_err(|why| SqlError::from(overtake_engine::CommitError::NotDurable(why)))?;
            }
            Ok(done)
        });
        if result.is_err() && !savepoints {
            // As in PostgreSQL, an error ends the transaction's work: roll back now, so that its
            // locks go at once; the session answers 25P02 until the block ends. (With savepoints
            // the transaction stays, failed, for ROLLBACK TO to undo the failed statement.)
            let outcome = booked(txn.as_ref(), Status::RolledBack, client_wait);
            drop(txn.take());
            reply.fulfil(Reply { result, next: None });
            return outcome;
        }
        let (next, ticket) = Promise::new();
        reply.fulfil(Reply {
            result,
            next: Some(next),
        });
        inbox = ticket;
    }
}

/// How a statement's or block's transaction ended, for the scheduler's statistics: `status`,
/// its lock waits, its commit's wait for the log, and (a block) its waits for the client.
fn booked(txn: Option<&Transaction<'_>>, status: Status, client_wait: Duration) -> Outcome {
    let mut outcome = Outcome::ended(status);
    outcome.client_wait = client_wait;
    if let Some(t) = txn {
        let locks = t.lock_stats();
        outcome.locks.waits = locks.waits;
        outcome.locks.queue = locks.queue;
        outcome.locks.excess = locks.excess;
        outcome.durable_wait = t.durable_wait();
    }
    outcome
}

/// Carries out a savepoint statement in the block's transaction (`txn`, begun at `start`).
fn savepoint(
    txn: &mut Option<Transaction<'_>>,
    start: Option<Savepoint>,
    open: &mut bool,
    op: SavepointOp,
) -> Result<Option<Savepoint>, SqlError> {
    match op {
        SavepointOp::Make => {
            *open = true;
            Ok(txn.as_mut().map(Transaction::savepoint).transpose()?)
        }
        SavepointOp::RollbackTo(to) => {
            if let (Some(t), Some(to)) = (txn.as_mut(), to.or(start)) {
                t.rollback_to(&to)?;
            }
            Ok(None)
        }
        SavepointOp::ReleasedAll => {
            *open = false;
            if let Some(t) = txn.as_mut() {
                t.forget_savepoints();
            }
            Ok(None)
        }
    }
}

/// The error for a statement or block whose task ended without an answer: `NotRun` when the
/// scheduler could not start it (every task context of its worker held by open transactions,
/// as PostgreSQL runs out of backends) or is shutting down.
pub fn unanswered(e: CallError) -> SqlError {
    match e {
        CallError::NotRun => SqlError::new(
            sqlstate::TOO_MANY_CONNECTIONS,
            "the server could not start the statement: too many open transactions (or it is shutting down)",
        ),
        other => SqlError::new(sqlstate::INTERNAL_ERROR, other.to_string()),
    }
}

fn refused(what: &str) -> SqlError {
    SqlError::new(
        sqlstate::TOO_MANY_CONNECTIONS,
        format!("the server is overloaded: {what} was not admitted"),
    )
}

/// Starts a transaction block's task at `priority` in `group`; returns where to send its
/// requests.
pub async fn start_block(
    runner: Runner<'_>,
    db: &Arc<Database>,
    (priority, group): (Priority, Group),
    (level, savepoints): (IsolationLevel, bool),
) -> Result<Promise<Request>, SqlError> {
    let (promise, inbox) = Promise::new();
    let db = Arc::clone(db);
    // The block's own result is nothing: its statements answer through their replies.
    runner
        .submit_reporting((priority, group), move || {
            ((), serve(&db, priority, (level, savepoints), inbox))
        })
        .await
        .map_err(|_| refused("the transaction"))?;
    Ok(promise)
}

/// A statement's cancellation (PostgreSQL's cancel request): the client asks, the statement stops
/// at its next check with 57014 and does not commit; but one that has begun to commit is let
/// finish, and its own answer is the truth (a cancel never reports a commit that happened as
/// cancelled). Two flags in Dekker's pattern decide which side wins.
///
/// It also carries the statement's `lock_timeout`, the other limit the session sets on it.
#[derive(Debug, Default)]
pub struct Cancel {
    /// Shared with the statement's transaction, whose lock waits it ends
    /// (`Transaction::set_interrupt`).
    requested: Arc<AtomicBool>,
    committing: AtomicBool,
    lock_timeout: Option<std::time::Duration>,
    /// Wakes the task (or thread) running the statement, set when it starts: a statement
    /// parked in a lock wait sees the request only when woken.
    waker: std::sync::OnceLock<overtake_runtime::park::Unparker>,
}

impl Cancel {
    /// A statement's cancellation, with how long each of its lock waits may last.
    pub fn with_lock_timeout(lock_timeout: Option<std::time::Duration>) -> Self {
        Cancel {
            lock_timeout,
            ..Cancel::default()
        }
    }

    /// Asks the statement to stop. True if it will not commit (its answer need not be awaited:
    /// 57014 is the truth); false if it has begun to commit (await its answer).
    pub fn request(&self) -> bool {
        self.requested.store(true, Ordering::SeqCst);
        if let Some(waker) = self.waker.get() {
            // A wake the statement does not need is harmless: every park rechecks its state.
            waker.unpark();
        }
        !self.committing.load(Ordering::SeqCst)
    }

    /// The statement is about to commit: false if a cancel came first (it must roll back).
    fn begin_commit(&self) -> bool {
        self.committing.store(true, Ordering::SeqCst);
        !self.requested.load(Ordering::SeqCst)
    }

    /// The flag the statement's scans check.
    fn flag(&self) -> &AtomicBool {
        &self.requested
    }
}

/// Requests its statement's cancel when dropped: the future awaiting the statement was dropped
/// (the client cancelled it, or went away), so the statement must not commit, and its scans stop.
pub struct Abandon(Option<Arc<Cancel>>);

impl Abandon {
    /// A guard over `cancel`.
    pub fn new(cancel: &Arc<Cancel>) -> Abandon {
        Abandon(Some(Arc::clone(cancel)))
    }

    /// The statement ended: nothing to tell it.
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if let Some(cancel) = &self.0 {
            cancel.request();
        }
    }
}

/// The error of a cancelled statement.
pub fn cancelled() -> SqlError {
    SqlError::new(
        sqlstate::QUERY_CANCELED,
        "canceling statement due to user request",
    )
}

/// Starts an automatic ANALYZE of `table` as background work, at the lowest priority (whatever
/// else runs overtakes it), if the scheduler has room now; else the table's next writes try
/// again. Its statistics are told when it ends, whether it did or failed (a table dropped
/// meanwhile).
pub fn auto_analyze(
    scheduler: &overtake_sched::Scheduler<overtake_sched::CallExecutor>,
    db: &Arc<Database>,
    table: Arc<SqlTable>,
) {
    let db = Arc::clone(db);
    let statistics = Arc::clone(&table.statistics);
    let job = move || {
        let analyzed = (|| -> Result<(), SqlError> {
            let mut txn = begin(&db, Priority::LOW, IsolationLevel::ReadCommitted)?;
            let cx = Context::new(&[], overtake_sql::values::time::now_micros());
            exec::analyze_table(&mut txn, &table, &cx)?;
            txn.commit()?;
            Ok(())
        })();
        // A failure leaves the statistics as they were.
        drop(analyzed);
        table.statistics.auto_analyze_ended();
    };
    let class = (Priority::LOW, Group::of(Priority::LOW));
    if crate::runner::offer(scheduler, class, job).is_err() {
        statistics.auto_analyze_ended();
    }
}

/// Runs `work` as a transaction of its own (autocommit). If this future is dropped before the
/// statement begins to commit (a cancel), the statement rolls back instead of committing.
pub async fn run_alone(
    runner: Runner<'_>,
    db: &Arc<Database>,
    (priority, group): (Priority, Group),
    level: IsolationLevel,
    work: StatementWork,
    cancel: &Arc<Cancel>,
) -> Result<Done, SqlError> {
    let db = Arc::clone(db);
    let guard = Abandon::new(cancel);
    let cancel = Arc::clone(cancel);
    let ticket = runner
        .submit_reporting((priority, group), move || {
            let mut txn = match begin(&db, priority, level) {
                Ok(txn) => txn,
                Err(e) => return (Err(e.into()), Outcome::ended(Status::RolledBack)),
            };
            let result = run(&mut txn, work, &cancel).and_then(|done| {
                if !cancel.begin_commit() {
                    return Err(cancelled());
                }
                txn.commit()?;
                Ok(done)
            });
            let status = if result.is_ok() {
                Status::Committed
            } else {
                Status::RolledBack
            };
            let outcome = booked(Some(&txn), status, Duration::ZERO);
            (result, outcome)
        })
        .await
        .map_err(|_| refused("the statement"))?;
    let result = ticket.await;
    guard.disarm();
    result.map_err(unanswered)?
}

/// Whether `work` may run where nothing preempts it, inside the step that serves its session
/// ([`run_here`]): a point read (see `Query::is_point_read`) whose rows go with its reply, in a
/// database whose reads wait for no lock, below SERIALIZABLE (whose reads are validated).
pub fn runs_here(db: &Database, level: IsolationLevel, work: &StatementWork) -> bool {
    matches!(work, StatementWork::Run(s) if s.rows.is_none() && s.prepared.point_read)
        && level != IsolationLevel::Serializable
        && !db.reads_lock()
}

/// Runs `work` (one that [`runs_here`]) as a transaction of its own, now, on this thread:
/// begin, one key lookup, commit in memory. Nothing in it parks; only the acknowledgement
/// (under `sync`, the commits it read becoming durable) is awaited, as a future: the session's
/// step ends meanwhile. Saves the statement's hand-off to a task of its own and back, most of
/// what serving a point read costs besides the socket.
pub async fn run_here(
    db: &Database,
    priority: Priority,
    level: IsolationLevel,
    work: StatementWork,
    cancel: &Cancel,
) -> Result<Done, SqlError> {
    let (done, acknowledged) = {
        // It locks nothing: it joins no lock manager (should it lock, it joins then).
        let mut txn = db.begin_reader(priority, isolation(level))?;
        let done = run(&mut txn, work, cancel)?;
        if !cancel.begin_commit() {
            return Err(cancelled());
        }
        (done, txn.commit_pipelined()?)
    };
    acknowledged.await?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::Cancel;

    #[test]
    fn a_cancel_before_the_commit_stops_it_and_one_after_awaits_its_answer() {
        let early = Cancel::default();
        assert!(early.request(), "nothing committing: the cancel wins");
        assert!(!early.begin_commit(), "the statement must roll back");
        let late = Cancel::default();
        assert!(late.begin_commit(), "no cancel yet: the commit goes ahead");
        assert!(
            !late.request(),
            "the commit began: the client must await its answer"
        );
    }
}

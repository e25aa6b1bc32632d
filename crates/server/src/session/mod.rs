//! A client session: its settings (priority first), its transaction block, and how each kind of
//! statement is carried out for it. Independent of the wire: the protocol handlers turn messages
//! into calls here and answers into messages.
//!
//! Parts: `block` (PostgreSQL's transaction state machine: the block, implicit or begun, failed,
//! its task, its uncommitted DDL, the idle timeout) and `config` (the session's settings as
//! statements see and change them); here, what each statement does.

mod block;
mod config;
mod cursor;

pub use block::failed_block;
use block::{Block, TxnState, set_read_only};
use config::on_off;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use overtake_sched::{CallExecutor, OsScheduling, Scheduler};
use overtake_sql::exec::access::{self, Actor, Grantee};
use overtake_sql::plan::{Command, Ddl, OutputColumn, RoleCommand};
use overtake_sql::{Catalog, Datum, Prepared, SqlError, SqlType, sqlstate};

use crate::runner::{Runner, SessionThread};
use crate::settings::{self, Settings};
use crate::txn::{self, Chunk, CopyData, Rows, StatementWork};

/// Where a statement's rows go while it runs: the connection, which writes them to the client
/// (a result is never held whole in the server; see `txn::RowSender`).
#[async_trait::async_trait]
pub trait RowOut: Send {
    /// Sends `rows` (of `columns`) to the client; an error if the client cannot be written to.
    async fn rows(
        &mut self,
        columns: &[OutputColumn],
        rows: Vec<Vec<Datum>>,
    ) -> Result<(), SqlError>;
}

/// Passes a statement's batches of rows to `out` as they come, until the statement's task stops
/// sending them. Each batch is marked taken once written, which lets the task make the next.
async fn drain(
    mut next: overtake_sched::Ticket<Chunk>,
    columns: &[OutputColumn],
    out: &mut dyn RowOut,
) -> Result<(), SqlError> {
    while let Ok(chunk) = next.await {
        out.rows(columns, chunk.rows).await?;
        chunk.taken.fulfil(txn::Take::More);
        next = chunk.next;
    }
    Ok(())
}

/// What every session shares: the catalog (and through it the database), the scheduler, and
/// role defaults (`ALTER ROLE ... SET`).
pub struct Shared {
    pub catalog: Arc<Catalog>,
    pub scheduler: Arc<Scheduler<CallExecutor>>,
    pub roles: Mutex<HashMap<String, Settings>>,
    /// Who may raise priority and change others' defaults.
    pub privileges: crate::privileges::Privileges,
    /// Sessions run their statements on their own OS threads, placed so (`--session-threads`),
    /// instead of on the scheduler's workers.
    pub session_threads: Option<OsScheduling>,
    /// The connections admitted and not yet gone, against `max_connections`.
    pub connections: Connections,
    /// The sessions by process id (`pg_cancel_backend` and `pg_terminate_backend`).
    pub backends: Arc<crate::backends::Registry>,
}

/// Connections admitted, against a limit (`max_connections`) of which the last places
/// (`superuser_reserved_connections`) are kept for superusers.
pub struct Connections {
    open: std::sync::atomic::AtomicUsize,
    limit: usize,
    reserved: usize,
}

/// Why a connection was not admitted.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Every place is taken.
    Full,
    /// Only places kept for superusers are left.
    Reserved,
}

impl Connections {
    /// None open yet, at most `limit`, the last `reserved` of them for superusers.
    pub fn new(limit: usize, reserved: usize) -> Self {
        Connections {
            open: std::sync::atomic::AtomicUsize::new(0),
            limit,
            reserved,
        }
    }

    /// Takes a place for one more connection, of a `superuser` or not.
    pub fn admit(&self, superuser: bool) -> Result<(), Refusal> {
        use std::sync::atomic::Ordering;
        let free_for = if superuser {
            self.limit
        } else {
            self.limit.saturating_sub(self.reserved)
        };
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < free_for).then_some(n + 1)
            })
            .map(|_| ())
            .map_err(|n| {
                if n >= self.limit {
                    Refusal::Full
                } else {
                    Refusal::Reserved
                }
            })
    }

    /// Gives a place back.
    pub fn leave(&self) {
        self.open.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// What a statement answers.
#[derive(Debug)]
pub enum StatementAnswer {
    /// Rows, with their columns and the command tag.
    Rows {
        columns: Vec<OutputColumn>,
        rows: Vec<Vec<Datum>>,
        tag: String,
    },
    /// A command tag alone.
    Done(String),
    /// The start of a transaction block (tag `BEGIN`).
    Begin,
    /// The end of one (tag `COMMIT` or `ROLLBACK`).
    End(String),
    /// COPY FROM STDIN: rows follow, this many columns each.
    CopyIn(usize),
    /// `DEALLOCATE`: the connection, which keeps prepared statements, forgets them (see
    /// `Connection::deallocate`).
    Deallocate(Option<String>),
    /// A fetch from a portal gave the rows asked for: more may follow (PortalSuspended).
    Suspended,
    Empty,
    Error(SqlError),
}

/// A COPY in progress: its statement's task takes the data piece by piece as it comes.
pub struct CopyState {
    /// Where the next piece goes.
    next: overtake_sched::Promise<txn::CopyData>,
    /// Fulfilled once the last piece sent was taken.
    taken: Option<overtake_sched::Ticket<()>>,
    /// Data received and not sent yet: clients send a message per line (pgbench, psql), and a
    /// hand-off per line would cost more than the line's parsing.
    pending: Vec<u8>,
    /// The statement's reply, once the data ended.
    reply: overtake_sched::Ticket<txn::Reply>,
    /// It has a block of its own (no block was open), which ends with it.
    alone: bool,
}

/// COPY data is handed to its statement in pieces of at least this many bytes.
const COPY_PIECE: usize = 64 * 1024;

/// One client's session.
pub struct Session {
    /// The session's own OS thread (with `--session-threads`).
    thread: Option<SessionThread>,
    shared: Arc<Shared>,
    user: Arc<str>,
    /// The role its statements act for (privileges on tables).
    actor: Actor,
    /// The other sessions, as its statements may signal them.
    backends: Arc<crate::backends::SessionBackends>,
    settings: Settings,
    block: Option<Block>,
    pub copy: Option<CopyState>,
    /// The cancel of the statement in flight (a new one per statement).
    cancel: Arc<txn::Cancel>,
    /// Counts the client's messages: an idle timer armed after one knows whether another came.
    moment: u64,
    /// Ended by `idle_in_transaction_session_timeout`: every message gets FATAL 25P03.
    terminated: bool,
    /// The worker serving it, if one does (see `crate::worker_io`).
    home: Option<Home>,
}

/// The worker a session is served by, and where its steps read the class they run at.
pub type Home = Arc<crate::worker_io::Placement>;

/// Where a session's statements run: its own thread, else its worker, else any worker.
fn runner_of<'a>(
    thread: &'a Option<SessionThread>,
    shared: &'a Shared,
    home: &Option<Home>,
) -> Runner<'a> {
    match (thread, home) {
        (Some(thread), _) => Runner::Thread(thread),
        (None, Some(home)) => Runner::Worker(&shared.scheduler, home.worker()),
        (None, None) => Runner::Scheduler(&shared.scheduler),
    }
}

/// What a statement that writes is called in the error a read-only transaction gives it; `None`
/// for one that does not write.
fn writes(command: &Command) -> Option<&'static str> {
    use overtake_sql::Query;
    use overtake_sql::plan::Ddl;
    Some(match command {
        Command::Query(q) => match &**q {
            Query::Insert(_) => "INSERT",
            Query::Update(_) => "UPDATE",
            Query::Delete(_) => "DELETE",
            Query::Select(s) if s.for_update => "SELECT FOR UPDATE",
            Query::Select(_) => return None,
        },
        Command::Ddl(d) => match d {
            Ddl::CreateTable { .. } => "CREATE TABLE",
            Ddl::DropTable { .. } => "DROP TABLE",
            Ddl::Truncate(_) => "TRUNCATE TABLE",
            Ddl::AddPrimaryKey { .. } => "ALTER TABLE",
            Ddl::CreateIndex { .. } => "CREATE INDEX",
            Ddl::Grant { revoke: false, .. } => "GRANT",
            Ddl::Grant { revoke: true, .. } => "REVOKE",
            Ddl::SetOwner { .. } => "ALTER TABLE",
        },
        Command::CopyIn(_) => "COPY FROM",
        Command::Role(r) => match r {
            RoleCommand::Create { .. } => "CREATE ROLE",
            RoleCommand::Alter { .. } => "ALTER ROLE",
            RoleCommand::Drop { .. } => "DROP ROLE",
        },
        _ => return None,
    })
}

impl Session {
    /// The session is served by `home`'s worker: its statements run there, and its steps at its
    /// class from now on.
    pub fn serve_from(&mut self, home: Home) {
        self.home = Some(home);
        self.class();
    }

    /// Tells the session's steps its class (a statement's, or after a change of settings).
    fn note_class(&self, (priority, group): (overtake_sched::Priority, overtake_sched::Group)) {
        if let Some(home) = &self.home {
            home.set(priority, group);
        }
    }

    /// A session for `user`, with the role's defaults, then the startup packet's options.
    pub fn new(
        shared: Arc<Shared>,
        user: &str,
        options: &[(String, String)],
        pid: i32,
    ) -> Result<Self, SqlError> {
        let mut settings = shared
            .roles
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(user)
            .cloned()
            .unwrap_or_default();
        for (name, value) in options {
            // A role's defaults were set by someone allowed to; the client's options were not.
            shared.privileges.check_setting(user, name, value)?;
            settings.set(name, value)?;
        }
        let thread = match &shared.session_threads {
            Some(os) => {
                static SESSIONS: std::sync::atomic::AtomicU64 =
                    std::sync::atomic::AtomicU64::new(0);
                let id = SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Some(SessionThread::spawn(id, os.clone()).map_err(|e| {
                    SqlError::new(
                        sqlstate::TOO_MANY_CONNECTIONS,
                        format!("cannot start the session's thread: {e}"),
                    )
                })?)
            }
            None => None,
        };
        // The role's superuser attribute is read once, at login (as PostgreSQL's session does).
        let actor = shared.privileges.actor(user);
        Ok(Session {
            thread,
            backends: Arc::new(crate::backends::SessionBackends {
                registry: Arc::clone(&shared.backends),
                pid,
                actor: actor.clone(),
            }),
            actor,
            shared,
            user: Arc::from(user),
            settings,
            block: None,
            copy: None,
            cancel: Arc::default(),
            moment: 0,
            terminated: false,
            home: None,
        })
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.shared.catalog
    }

    /// Carries out `prepared` with `params`. The rows of a data statement go to `out` as they
    /// are made (those of the answer follow them); with no `out`, all come with the answer.
    pub async fn execute(
        &mut self,
        prepared: Arc<Prepared>,
        params: Vec<Datum>,
        out: Option<&mut dyn RowOut>,
    ) -> StatementAnswer {
        self.cancel = Arc::default();
        self.execute_current(prepared, params, out).await
    }

    /// [`execute`](Self::execute), cancelled through `self.cancel`.
    async fn execute_current(
        &mut self,
        prepared: Arc<Prepared>,
        params: Vec<Datum>,
        out: Option<&mut dyn RowOut>,
    ) -> StatementAnswer {
        match self.execute_inner(prepared, params, out).await {
            Ok(a) => a,
            Err(e) => self.fail(e),
        }
    }

    /// Carries out `prepared` unless `cancelled` completes first (the client's cancel request):
    /// then the statement is stopped and answers 57014 — unless it had begun to commit, whose
    /// real answer is awaited. COMMIT and ROLLBACK are not cancelled, as in PostgreSQL.
    pub async fn execute_until(
        &mut self,
        prepared: Arc<Prepared>,
        params: Vec<Datum>,
        cancelled: impl std::future::Future<Output = ()>,
        out: Option<&mut dyn RowOut>,
    ) -> StatementAnswer {
        if matches!(prepared.command, Command::Commit | Command::Rollback) {
            return self.execute(prepared, params, out).await;
        }
        let cancel = self.new_cancel();
        let timer = self.statement_timer();
        let mut run = Box::pin(self.execute_current(prepared, params, out));
        let why = tokio::select! {
            answer = &mut run => return answer,
            _ = cancelled => "user request",
            _ = timer => "statement timeout",
        };
        if !cancel.request() {
            return run.await;
        }
        drop(run);
        self.fail(SqlError::new(
            sqlstate::QUERY_CANCELED,
            format!("canceling statement due to {why}"),
        ))
    }

    /// A data statement to run now, its rows going to `rows` in batches if given.
    fn statement(
        &mut self,
        prepared: Arc<Prepared>,
        params: Vec<Datum>,
        rows: Option<overtake_sched::Promise<Chunk>>,
    ) -> txn::Statement {
        // now() is the transaction's start: a block's first statement's.
        let started = overtake_sql::values::time::now_micros();
        let began = match &mut self.block {
            Some(b) => *b.began.get_or_insert(started),
            None => started,
        };
        let memory = self.statement_memory();
        txn::Statement {
            prepared,
            params,
            began,
            started,
            user: Arc::clone(&self.user),
            backends: Arc::clone(&self.backends) as Arc<dyn overtake_sql::expr::Backends>,
            memory,
            rows,
            batch_rows: None,
        }
    }

    /// Reports `e`, whatever raised it (parsing, binding, a bad parameter, the statement itself,
    /// a cancel): an open block fails, and refuses every statement but COMMIT and ROLLBACK from
    /// here on (PostgreSQL's failed transaction block, 25P02).
    pub fn fail(&mut self, e: SqlError) -> StatementAnswer {
        self.mark_failed();
        // The log stopped: say why (the I/O error), as PostgreSQL's PANIC would have.
        let told = e.about.as_ref().is_some_and(|a| a.detail.is_some());
        let e = match self.shared.catalog.database().log_stopped() {
            Some(why) if e.code == sqlstate::IO_ERROR && !told => e.with_detail(why),
            _ => e,
        };
        StatementAnswer::Error(e)
    }

    /// Runs DDL or a change of roles in the block's transaction: both are transactional (a
    /// statement alone gets a block of its own), and DDL's changes stay the block's until it
    /// commits.
    async fn change_catalog(
        &mut self,
        prepared: Arc<Prepared>,
    ) -> Result<StatementAnswer, SqlError> {
        let alone = self.block.is_none();
        if alone {
            self.block = Some(self.new_block(self.default_level(), false));
        }
        let pending = self
            .block
            .as_ref()
            .map(|b| Arc::clone(&b.pending))
            .unwrap_or_default();
        let catalog = Arc::clone(&self.shared.catalog);
        let work = StatementWork::Ddl(catalog, prepared, pending, self.actor.clone());
        let done = self.run(work).await;
        if alone {
            let end = self.end_block(done.is_ok()).await;
            if let (Ok(_), StatementAnswer::Error(e)) = (&done, end) {
                return Err(e);
            }
        }
        Ok(StatementAnswer::Done(done?.tag))
    }

    async fn execute_inner(
        &mut self,
        prepared: Arc<Prepared>,
        params: Vec<Datum>,
        out: Option<&mut dyn RowOut>,
    ) -> Result<StatementAnswer, SqlError> {
        let block_failed = self.block.as_ref().is_some_and(|b| b.failed);
        match &prepared.command {
            Command::Commit | Command::Rollback => {
                return Ok(self
                    .end_block(matches!(prepared.command, Command::Commit))
                    .await);
            }
            _ if block_failed => return Err(failed_block()),
            _ => {}
        }
        if let Some(what) = writes(&prepared.command)
            && self.read_only()
        {
            return Err(SqlError::new(
                sqlstate::READ_ONLY_SQL_TRANSACTION,
                format!("cannot execute {what} in a read-only transaction"),
            ));
        }
        // After the read-only check, as PostgreSQL's executor checks them.
        access::check(&prepared.command, &self.actor)?;
        match &prepared.command {
            Command::Query(_) => {
                let columns = prepared.columns.clone();
                // A point read's row (one at most) goes with its reply.
                let streams = !columns.is_empty() && !prepared.point_read;
                let (rows, batches) = match (&out, streams) {
                    (Some(_), true) => {
                        let (rows, batches) = overtake_sched::Promise::new();
                        (Some(rows), Some(batches))
                    }
                    _ => (None, None),
                };
                let work = StatementWork::Run(self.statement(Arc::clone(&prepared), params, rows));
                let done = match (batches, out) {
                    (Some(batches), Some(out)) => {
                        // The statement's batches go to the client while it runs; its answer
                        // (the rows after the last batch, and its tag) comes once it is done.
                        let (done, drained) =
                            futures::join!(self.run(work), drain(batches, &columns, out));
                        drained?;
                        done?
                    }
                    _ => self.run(work).await?,
                };
                Ok(if columns.is_empty() {
                    StatementAnswer::Done(done.tag)
                } else {
                    StatementAnswer::Rows {
                        columns,
                        rows: done.rows,
                        tag: done.tag,
                    }
                })
            }
            Command::Role(_) => self.change_catalog(prepared).await,
            Command::Ddl(ddl) => {
                // The roles a GRANT or ALTER TABLE ... OWNER TO names must exist.
                let privileges = &self.shared.privileges;
                match ddl {
                    Ddl::Grant { grantees, .. } => {
                        for g in grantees {
                            if let Grantee::Role(r) = g {
                                privileges.check_role_exists(r)?;
                            }
                        }
                    }
                    Ddl::SetOwner { owner, .. } => privileges.check_role_exists(owner)?,
                    _ => {}
                }
                self.change_catalog(prepared).await
            }
            Command::CopyIn(c) => {
                // The statement starts now and takes the data as it comes: in the open block, or
                // in one of its own.
                let alone = self.block.is_none();
                if alone {
                    self.block = Some(self.new_block(self.default_level(), false));
                }
                let (next, data) = overtake_sched::Promise::new();
                let rows = Rows {
                    table: Arc::clone(&c.table),
                    columns: c.columns.clone(),
                    data,
                };
                let reply = match self.send_to_block(StatementWork::Insert(rows)).await {
                    Ok(reply) => reply,
                    Err(e) => {
                        if alone {
                            self.end_block(false).await;
                        }
                        return Err(e);
                    }
                };
                self.copy = Some(CopyState {
                    next,
                    taken: None,
                    pending: Vec::new(),
                    reply,
                    alone,
                });
                Ok(StatementAnswer::CopyIn(c.columns.len()))
            }
            Command::Begin(modes) => {
                match &mut self.block {
                    None => {
                        let level = modes.level.unwrap_or_else(|| self.default_level());
                        let mut block = self.new_block(level, false);
                        block.read_only = modes.read_only.unwrap_or(block.read_only);
                        self.block = Some(block);
                    }
                    // BEGIN in a multi-statement message makes its implicit block a real one,
                    // left open when the message ends (PostgreSQL's rule).
                    Some(b) if b.implicit => {
                        b.implicit = false;
                        if matches!(b.txn, TxnState::NotStarted) {
                            b.level = modes.level.unwrap_or(b.level);
                            b.read_only = modes.read_only.unwrap_or(b.read_only);
                        }
                    }
                    // PostgreSQL warns that a transaction is already in progress, and goes on.
                    Some(_) => {}
                }
                Ok(StatementAnswer::Begin)
            }
            Command::Commit | Command::Rollback => unreachable!("handled above"),
            Command::Set { name, value, local } => {
                self.set(name, value.as_deref(), *local)?;
                Ok(StatementAnswer::Done("SET".into()))
            }
            Command::SetTransaction { modes, session } => {
                if *session {
                    if let Some(level) = modes.level {
                        self.settings
                            .set("default_transaction_isolation", level.name())?;
                    }
                    if let Some(read_only) = modes.read_only {
                        self.settings
                            .set("default_transaction_read_only", on_off(read_only))?;
                    }
                } else if let Some(b) = &mut self.block {
                    let started = !matches!(b.txn, TxnState::NotStarted);
                    if let Some(level) = modes.level {
                        if started {
                            return Err(SqlError::new(
                                sqlstate::ACTIVE_SQL_TRANSACTION,
                                "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                            ));
                        }
                        b.level = level;
                    }
                    if let Some(read_only) = modes.read_only {
                        set_read_only(b, read_only)?;
                    }
                }
                // Outside a block: PostgreSQL warns, and nothing changes.
                Ok(StatementAnswer::Done("SET".into()))
            }
            Command::Show(name) => {
                let value = if name.eq_ignore_ascii_case("all") {
                    return Ok(self.show_all());
                } else {
                    self.setting(name).ok_or_else(|| {
                        SqlError::new(
                            sqlstate::UNDEFINED_OBJECT,
                            format!("unrecognized configuration parameter \"{name}\""),
                        )
                    })?
                };
                Ok(StatementAnswer::Rows {
                    columns: vec![OutputColumn {
                        name: name.to_ascii_lowercase(),
                        ty: SqlType::Text,
                    }],
                    rows: vec![vec![Datum::Text(value)]],
                    tag: "SHOW".into(),
                })
            }
            Command::Reset(name) => {
                if name.eq_ignore_ascii_case("all") || settings::default_value(name).is_some() {
                    self.settings.reset(name);
                    Ok(StatementAnswer::Done("RESET".into()))
                } else {
                    Err(SqlError::new(
                        sqlstate::UNDEFINED_OBJECT,
                        format!("unrecognized configuration parameter \"{name}\""),
                    ))
                }
            }
            Command::AlterRoleSet { role, name, value } => {
                let privileges = &self.shared.privileges;
                privileges.check_alter_role(&self.user, role)?;
                if let Some(v) = value {
                    privileges.check_setting(&self.user, name, v)?;
                }
                let mut roles = self.shared.roles.lock().unwrap_or_else(|p| p.into_inner());
                let defaults = roles.entry(role.clone()).or_default();
                match value {
                    Some(v) => defaults.set(name, v)?,
                    None => defaults.reset(name),
                }
                Ok(StatementAnswer::Done("ALTER ROLE".into()))
            }
            Command::GrantRole {
                roles,
                grantees,
                revoke,
            } => {
                self.shared
                    .privileges
                    .grant(&self.user, roles, grantees, *revoke)?;
                Ok(StatementAnswer::Done(
                    if *revoke { "REVOKE ROLE" } else { "GRANT ROLE" }.into(),
                ))
            }
            Command::Noop("VACUUM") if self.block.is_some() => Err(SqlError::new(
                sqlstate::ACTIVE_SQL_TRANSACTION,
                "VACUUM cannot run inside a transaction block",
            )),
            Command::Noop(tag) => Ok(StatementAnswer::Done((*tag).into())),
            Command::Deallocate(name) => Ok(StatementAnswer::Deallocate(name.clone())),
            Command::Explain(lines, _) => Ok(StatementAnswer::Rows {
                columns: prepared.columns.clone(),
                rows: lines.iter().map(|l| vec![Datum::Text(l.clone())]).collect(),
                tag: "EXPLAIN".into(),
            }),
            Command::Empty => Ok(StatementAnswer::Empty),
        }
    }

    /// A message of COPY's data: gathered into pieces of `COPY_PIECE` bytes, each passed to
    /// the statement once it took the one before (so the client's data is read no faster than
    /// the statement takes it). Ignored if no COPY is in progress, or its statement has failed
    /// (its error comes at the end).
    pub async fn copy_data(&mut self, bytes: &[u8]) {
        let Some(copy) = self.copy.as_mut() else {
            return;
        };
        copy.pending.extend_from_slice(bytes);
        if copy.pending.len() >= COPY_PIECE {
            Self::send_piece(copy).await;
        }
    }

    /// Sends the data received to the COPY's statement, once it took the piece before.
    async fn send_piece(copy: &mut CopyState) {
        let bytes = std::mem::take(&mut copy.pending);
        if let Some(taken) = copy.taken.take()
            && taken.await.is_err()
        {
            return;
        }
        let (next, after) = overtake_sched::Promise::new();
        let (taken, taken_ticket) = overtake_sched::Promise::new();
        std::mem::replace(&mut copy.next, next).fulfil(CopyData::Piece {
            bytes,
            taken,
            next: after,
        });
        copy.taken = Some(taken_ticket);
    }

    /// The end of COPY's data (`failed`: the client's CopyFail message, which fails it with
    /// 57014 as PostgreSQL does): the statement's answer, its block ended if it had its own.
    pub async fn finish_copy(&mut self, failed: Option<&str>) -> StatementAnswer {
        if let Some(copy) = self.copy.as_mut()
            && failed.is_none()
            && !copy.pending.is_empty()
        {
            Self::send_piece(copy).await;
        }
        let Some(copy) = self.copy.take() else {
            return StatementAnswer::Error(SqlError::new(
                sqlstate::PROTOCOL_VIOLATION,
                "no COPY in progress",
            ));
        };
        match failed {
            None => copy.next.fulfil(CopyData::Done),
            // Dropping the promise tells the statement the data will not come.
            Some(_) => drop(copy.next),
        }
        let done = match copy.reply.await {
            Ok(reply) => self.on_reply(reply),
            Err(e) => Err(txn::unanswered(e)),
        };
        let done = match failed {
            Some(message) => Err(SqlError::new(
                sqlstate::QUERY_CANCELED,
                format!("COPY from stdin failed: {message}"),
            )),
            None => done,
        };
        if copy.alone {
            let end = self.end_block(done.is_ok()).await;
            if let (Ok(_), StatementAnswer::Error(e)) = (&done, end) {
                return self.fail(e);
            }
        }
        match done {
            Ok(out) => StatementAnswer::Done(out.tag),
            Err(e) => self.fail(e),
        }
    }

    /// The role its statements act for.
    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    /// The session's user.
    pub fn user(&self) -> &str {
        &self.user
    }
}

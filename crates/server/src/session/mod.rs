//! A client session: its settings (priority first), its transaction block, and how each kind of
//! statement is carried out for it. Independent of the wire: the protocol handlers turn messages
//! into calls here and answers into messages.
//!
//! Parts: `block` (PostgreSQL's transaction state machine: the block, implicit or begun, failed,
//! its task, its uncommitted DDL, the idle timeout), `config` (the session's settings as
//! statements see and change them: SET, SHOW, RESET, role defaults), `copy` (COPY FROM STDIN's
//! data as it comes), `cursor` (portals read in parts), `sql_cursor` (DECLARE, FETCH, MOVE and
//! CLOSE over them), `savepoints` (SAVEPOINT, ROLLBACK TO, RELEASE), `prepared_sql` (PREPARE,
//! EXECUTE), `connections` (admission against `max_connections`); here, what each statement
//! does.

mod block;
mod config;
mod connections;
mod copy;
mod cursor;
mod prepared_sql;
mod savepoints;
mod sql_cursor;

pub use block::failed_block;
use block::{Block, TxnState};
pub use connections::{Connections, Refusal};
pub use copy::CopyState;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use overtake_sched::{CallExecutor, OsScheduling, Scheduler};
use overtake_sql::exec::access::{self, Actor, Grantee};
use overtake_sql::plan::{Command, Ddl, OutputColumn, RoleCommand};
use overtake_sql::{Catalog, Datum, Prepared, SqlError, sqlstate};

use crate::runner::{Runner, SessionThread};
use crate::settings::Settings;
use crate::txn::{self, Chunk, StatementWork};

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

    /// Sends COPY TO's data, a message per piece (CopyOutResponse, as `start` says, before the
    /// first).
    async fn copy_out(&mut self, start: CopyStart, pieces: Vec<Vec<u8>>) -> Result<(), SqlError>;
}

/// What the CopyOutResponse before COPY TO's data says: how many columns, and whether the
/// data is binary.
#[derive(Debug, Clone, Copy)]
pub struct CopyStart {
    pub columns: usize,
    pub binary: bool,
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
    /// COPY FROM STDIN: rows follow, this many columns each, in binary or text.
    CopyIn {
        columns: usize,
        binary: bool,
    },
    /// COPY TO STDOUT's data after the pieces sent while it ran (a message each), and its tag.
    CopyOut {
        start: CopyStart,
        pieces: Vec<Vec<u8>>,
        tag: String,
    },
    /// `DEALLOCATE`: the connection, which keeps prepared statements, forgets them (see
    /// `Connection::deallocate`).
    Deallocate(Option<String>),
    /// `DISCARD ALL`: the session's settings were reset; the connection forgets every prepared
    /// statement as for `DEALLOCATE ALL` (see `Connection::deallocate`).
    DiscardAll,
    /// A fetch from a portal gave the rows asked for: more may follow (PortalSuspended).
    Suspended,
    Empty,
    Error(SqlError),
}

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
    /// What `currval` and `lastval` give.
    sequences: crate::statement_settings::SequenceValues,
    /// Cursors declared `WITH HOLD` whose transaction committed: their rows, read to the end.
    held: Vec<cursor::Cursor>,
    /// The statements `PREPARE` named.
    prepared: HashMap<String, Arc<crate::prepared::Statement>>,
}

/// The worker a session is served by, and where its steps read the class they run at.
pub type Home = Arc<crate::worker_io::Placement>;

impl Session {
    /// Counts the rows a statement wrote to `table` (its command tag's count) toward the
    /// table's automatic ANALYZE, and starts one if that makes it due (see
    /// `Statistics::note_writes`). Rows written in a block that rolls back count too, as
    /// PostgreSQL counts them.
    fn note_writes(&self, table: &Arc<overtake_sql::SqlTable>, tag: &str) {
        let rows = tag.rsplit(' ').next().and_then(|n| n.parse().ok());
        if table.statistics.note_writes(rows.unwrap_or(0)) {
            let db = self.shared.catalog.database();
            txn::auto_analyze(&self.shared.scheduler, db, Arc::clone(table));
        }
    }
}

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
    use overtake_sql::plan::{Ddl, IndexKind};
    Some(match command {
        Command::Query(q) => match &**q {
            Query::Insert(_) => "INSERT",
            Query::Update(_) => "UPDATE",
            Query::Delete(_) => "DELETE",
            Query::Select(s) if s.for_update => "SELECT FOR UPDATE",
            Query::Select(_) | Query::Analyze(_) => return None,
        },
        Command::Ddl(d) => match d {
            Ddl::CreateTable { .. } => "CREATE TABLE",
            Ddl::CreateSequence { .. } => "CREATE SEQUENCE",
            Ddl::CreateView { .. } => "CREATE VIEW",
            Ddl::DropTable { kind, .. } => kind.drop_tag(),
            Ddl::Truncate { .. } => "TRUNCATE TABLE",
            Ddl::AddPrimaryKey { .. } => "ALTER TABLE",
            Ddl::CreateIndex {
                kind: IndexKind::UniqueConstraint,
                ..
            } => "ALTER TABLE",
            Ddl::CreateIndex { .. } => "CREATE INDEX",
            Ddl::DropIndex { .. } => "DROP INDEX",
            Ddl::DropConstraint { .. }
            | Ddl::AlterColumn { .. }
            | Ddl::AddForeignKey { .. }
            | Ddl::Steps(_) => "ALTER TABLE",
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
                scheduler: Arc::clone(&shared.scheduler),
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
            sequences: Default::default(),
            held: Vec::new(),
            prepared: HashMap::new(),
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
        if Self::is_cursor_command(&prepared.command) {
            let cancelled = Box::pin(std::future::pending());
            return Box::pin(self.cursor_command(prepared, params, cancelled, out)).await;
        }
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
        cancelled: impl std::future::Future<Output = ()> + Send,
        out: Option<&mut dyn RowOut>,
    ) -> StatementAnswer {
        if matches!(
            prepared.command,
            Command::Commit
                | Command::Rollback
                | Command::Savepoint(_)
                | Command::RollbackTo(_)
                | Command::Release(_)
        ) {
            return self.execute(prepared, params, out).await;
        }
        if Self::is_cursor_command(&prepared.command) {
            // A fetch is cancelled, and timed, where it waits for rows.
            let cancelled = Box::pin(cancelled);
            return Box::pin(self.cursor_command(prepared, params, cancelled, out)).await;
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
    /// (`applied`: the session applies what its `set_config` calls change once it succeeds.)
    fn statement(
        &mut self,
        prepared: Arc<Prepared>,
        params: Vec<Datum>,
        (rows, applied): (Option<overtake_sched::Promise<Chunk>>, bool),
    ) -> txn::Statement {
        // now() is the transaction's start: a block's first statement's.
        let started = overtake_sql::values::time::now_micros();
        let began = match &mut self.block {
            Some(b) => *b.began.get_or_insert(started),
            None => started,
        };
        let memory = self.statement_memory();
        // The settings only for a statement that reads them: gathering them all is no cost
        // to put on every INSERT into a table with a serial column.
        let settings = (prepared.reads_settings || prepared.uses_sequences).then(|| {
            let (values, may_raise) = match prepared.reads_settings {
                true => (
                    self.settings_now(),
                    self.shared.privileges.may_raise(&self.user),
                ),
                false => Default::default(),
            };
            Arc::new(crate::statement_settings::StatementSettings::new(
                (values, self.sequences.clone()),
                may_raise,
                applied,
            ))
        });
        txn::Statement {
            settings,
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
            Command::RollbackTo(name) => return self.rollback_to(name).await,
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
            Command::Query(_) => self.run_query(prepared, params, out).await,
            Command::CopyOut(_, options) => {
                let options = options.clone();
                self.copy_out(prepared, params, options, out).await
            }
            Command::Role(_) => self.change_catalog(prepared).await,
            Command::Ddl(ddl) => {
                // The roles a GRANT or ALTER TABLE ... OWNER TO names must exist.
                let privileges = &self.shared.privileges;
                let steps = match ddl {
                    Ddl::Steps(steps) => steps.as_slice(),
                    one => std::slice::from_ref(one),
                };
                for step in steps {
                    match step {
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
                }
                self.change_catalog(prepared).await
            }
            Command::CopyIn(c) => self.start_copy(c).await,
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
            Command::Commit | Command::Rollback | Command::RollbackTo(_) => {
                unreachable!("handled above")
            }
            Command::Savepoint(name) => self.savepoint(name).await,
            Command::Release(name) => self.release(name).await,
            Command::Set { name, value, local } => {
                self.set(name, value.as_deref(), *local)?;
                Ok(StatementAnswer::Done("SET".into()))
            }
            Command::SetTransaction { modes, session } => self.set_transaction(modes, *session),
            Command::Show(name) => self.show(name),
            Command::Reset(name) => self.reset(name),
            Command::AlterRoleSet { role, name, value } => {
                self.alter_role_set(role, name, value.as_deref())
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
            Command::Prepare {
                name,
                statement,
                declared,
            } => self.prepare_named(name, statement, declared),
            Command::Execute {
                name,
                arguments,
                untyped,
            } => {
                self.execute_named(name, (arguments.as_ref(), untyped), params, out)
                    .await
            }
            Command::Deallocate(name) => Ok(StatementAnswer::Deallocate(name.clone())),
            Command::DiscardAll => {
                if self.block.is_some() {
                    return Err(SqlError::new(
                        sqlstate::ACTIVE_SQL_TRANSACTION,
                        "DISCARD ALL cannot run inside a transaction block",
                    ));
                }
                self.settings.reset("all");
                self.class();
                // As CLOSE ALL: held cursors go too.
                self.held.clear();
                Ok(StatementAnswer::DiscardAll)
            }
            Command::Explain(lines, _) => Ok(StatementAnswer::Rows {
                columns: prepared.columns.clone(),
                rows: lines.iter().map(|l| vec![Datum::Text(l.clone())]).collect(),
                tag: "EXPLAIN".into(),
            }),
            Command::Empty => Ok(StatementAnswer::Empty),
            // Carried out by `cursor_command`, which `execute` and `execute_until` call.
            Command::Declare { .. } | Command::Fetch(_) | Command::CloseCursor(_) => {
                Err(SqlError::new(
                    sqlstate::INTERNAL_ERROR,
                    "a cursor statement run as another",
                ))
            }
        }
    }

    /// Runs a data statement; its rows go to `out` as they are made (with no `out`, all with
    /// the answer).
    pub(super) async fn run_query(
        &mut self,
        prepared: Arc<Prepared>,
        params: Vec<Datum>,
        out: Option<&mut dyn RowOut>,
    ) -> Result<StatementAnswer, SqlError> {
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
        let statement = self.statement(Arc::clone(&prepared), params, (rows, true));
        let settings = statement.settings.clone();
        let work = StatementWork::Run(statement);
        let done = match (batches, out) {
            (Some(batches), Some(out)) => {
                // The statement's batches go to the client while it runs; its answer
                // (the rows after the last batch, and its tag) comes once it is done.
                let (done, drained) = futures::join!(self.run(work), drain(batches, &columns, out));
                drained.and(done)
            }
            _ => self.run(work).await,
        };
        // What its sequences gave stays the session's even if it failed after, as
        // PostgreSQL's currval does.
        if let Some(s) = &settings {
            self.sequences = s.take_sequences();
        }
        let done = done?;
        // What its set_config calls set, as SET would (validated when called).
        for (name, value, local) in settings.iter().flat_map(|s| s.take_changes()) {
            self.set(&name, value.as_deref(), local)?;
        }
        if let Command::Query(q) = &prepared.command
            && let Some(table) = q.written_table()
        {
            self.note_writes(table, &done.tag);
        }
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

    /// The role its statements act for.
    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    /// The session's user.
    pub fn user(&self) -> &str {
        &self.user
    }
}

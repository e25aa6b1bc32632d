//! A client session: its settings (priority first), its transaction block, and how each kind of
//! statement is carried out for it. Independent of the wire: the protocol handlers turn messages
//! into calls here and answers into messages.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use overtake_sched::{Calls, Group, OsScheduling, Priority, Promise, Scheduler, Tier, Weight};
use overtake_sql::pending::{Pending, Tables};
use overtake_sql::plan::{Command, OutputColumn};
use overtake_sql::{Catalog, Datum, Level, Prepared, SqlError, SqlType, sqlstate};

use crate::runner::{Runner, SessionThread};
use crate::settings::{self, Settings};
use crate::txn::{self, Reply, Request, Rows, RunOrInsert};

/// What every session shares: the catalog (and through it the database), the scheduler, and
/// role defaults (`ALTER ROLE ... SET`).
pub struct Shared {
    pub catalog: Arc<Catalog>,
    pub scheduler: Arc<Scheduler<Calls>>,
    pub roles: Mutex<HashMap<String, Settings>>,
    /// Sessions run their statements on their own OS threads, placed so (`--session-threads`),
    /// instead of on the scheduler's workers.
    pub session_threads: Option<OsScheduling>,
    /// The connections admitted and not yet gone, against `max_connections`.
    pub connections: Connections,
}

/// Connections admitted, against a limit (`max_connections`).
pub struct Connections {
    open: std::sync::atomic::AtomicUsize,
    limit: usize,
}

impl Connections {
    /// None open yet, at most `limit`.
    pub fn new(limit: usize) -> Self {
        Connections {
            open: std::sync::atomic::AtomicUsize::new(0),
            limit,
        }
    }

    /// Takes a place for one more connection: false if all are taken.
    pub fn admit(&self) -> bool {
        use std::sync::atomic::Ordering;
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.limit).then_some(n + 1)
            })
            .is_ok()
    }

    /// Gives a place back.
    pub fn leave(&self) {
        self.open.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// What a statement answers.
#[derive(Debug)]
pub enum Answer {
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
    Empty,
    Error(SqlError),
}

enum TxnState {
    /// BEGIN was seen; no statement has run yet (the task starts with the first).
    NotStarted,
    Running(Promise<Request>),
    /// A statement failed or was cancelled: the task has ended.
    Gone,
}

struct Block {
    level: Level,
    /// `READ ONLY`: statements that write are refused (25006).
    read_only: bool,
    txn: TxnState,
    failed: bool,
    /// `SET LOCAL` values, gone with the block.
    local: Settings,
    /// The session's settings when the block began: a rollback restores them (a `SET` in a
    /// transaction that rolls back is undone, as in PostgreSQL).
    saved: Settings,
    /// Opened by a Query message holding several statements, not by BEGIN: it commits when the
    /// message ends and rolls back at its first error (PostgreSQL's implicit transaction block).
    implicit: bool,
    /// When its first statement began: `now()` for all of them.
    began: Option<i64>,
    /// Its catalog changes (DDL), seen by its own statements until it commits.
    pending: Arc<Pending>,
}

/// A COPY in progress: its plan and the data received so far.
pub struct CopyState {
    pub plan: Arc<Prepared>,
    pub data: Vec<u8>,
    /// The data exceeded [`MAX_COPY_BYTES`]: the rest is discarded and the COPY fails.
    pub overflowed: bool,
}

/// Largest COPY data accepted in one statement (bytes).
pub const MAX_COPY_BYTES: usize = 1 << 30;

/// One client's session.
pub struct Session {
    /// The session's own OS thread (with `--session-threads`).
    thread: Option<SessionThread>,
    shared: Arc<Shared>,
    user: Arc<str>,
    settings: Settings,
    block: Option<Block>,
    pub copy: Option<CopyState>,
    /// The cancel of the statement in flight (a new one per statement).
    cancel: Arc<txn::Cancel>,
    /// Counts the client's messages: an idle timer armed after one knows whether another came.
    moment: u64,
    /// Ended by `idle_in_transaction_session_timeout`: every message gets FATAL 25P03.
    terminated: bool,
}

/// Where a session's statements run: its own thread, else the scheduler.
fn runner_of<'a>(thread: &'a Option<SessionThread>, shared: &'a Shared) -> Runner<'a> {
    match thread {
        Some(thread) => Runner::Thread(thread),
        None => Runner::Scheduler(&shared.scheduler),
    }
}

/// `on` or `off`, as PostgreSQL shows a boolean setting.
fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

/// Makes `block` read-only, or read-write again if no statement has run in it yet.
fn set_read_only(block: &mut Block, read_only: bool) -> Result<(), SqlError> {
    if !read_only && block.read_only && !matches!(block.txn, TxnState::NotStarted) {
        return Err(SqlError::new(
            sqlstate::ACTIVE_SQL_TRANSACTION,
            "transaction read-write mode must be set before any query",
        ));
    }
    block.read_only = read_only;
    Ok(())
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
        },
        Command::CopyIn(_) => "COPY FROM",
        _ => return None,
    })
}

/// The error of a statement sent to a failed block (25P02).
pub fn failed_block() -> SqlError {
    SqlError::new(
        sqlstate::IN_FAILED_TRANSACTION,
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

impl Session {
    /// A session for `user`, with the role's defaults, then the startup packet's options.
    pub fn new(
        shared: Arc<Shared>,
        user: &str,
        options: &[(String, String)],
    ) -> Result<Self, SqlError> {
        let mut settings = shared
            .roles
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(user)
            .cloned()
            .unwrap_or_default();
        for (name, value) in options {
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
        Ok(Session {
            thread,
            shared,
            user: Arc::from(user),
            settings,
            block: None,
            copy: None,
            cancel: Arc::default(),
            moment: 0,
            terminated: false,
        })
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.shared.catalog
    }

    /// The open block's uncommitted catalog changes, if it has any.
    pub fn pending(&self) -> Option<Arc<Pending>> {
        self.block
            .as_ref()
            .filter(|b| !b.pending.is_empty())
            .map(|b| Arc::clone(&b.pending))
    }

    /// The catalog as this session's next statement sees it: its open block's uncommitted
    /// changes over the shared catalog.
    pub fn tables(&self) -> Tables<'_> {
        match &self.block {
            Some(b) => Tables::with(&self.shared.catalog, &b.pending),
            None => Tables::shared(&self.shared.catalog),
        }
    }

    /// The value of setting `name` in effect: SET LOCAL, then SET (over the role's default),
    /// then the built-in default.
    pub fn setting(&self, name: &str) -> Option<String> {
        if name.eq_ignore_ascii_case("transaction_read_only") {
            return Some(on_off(self.read_only()).to_owned());
        }
        if name.eq_ignore_ascii_case("transaction_isolation")
            && let Some(b) = &self.block
        {
            return Some(b.level.name().to_owned());
        }
        let name = if name.eq_ignore_ascii_case("transaction_isolation") {
            "default_transaction_isolation"
        } else {
            name
        };
        self.explicit(name)
            .or_else(|| settings::default_value(name).map(str::to_owned))
    }

    /// The value of `name` set in this session (or its transaction), not its default.
    fn explicit(&self, name: &str) -> Option<String> {
        self.block
            .as_ref()
            .and_then(|b| b.local.get(name))
            .or_else(|| self.settings.get(name))
            .map(str::to_owned)
    }

    /// The level `priority` names (normal by default).
    fn level_asked(&self) -> Priority {
        self.setting("priority")
            .and_then(|p| settings::parse_priority(&p).ok())
            .unwrap_or(Priority::MEDIUM)
    }

    /// The priority and group of this session's next statement: the group `task_tier` (if set,
    /// else the tier of `priority`) and `task_weight` (100 by default) name, and `priority`
    /// moved into that tier if it lies outside it (as [`Call::in_group`](overtake_sched::Call::in_group)).
    fn class(&self) -> (Priority, Group) {
        let asked = self.level_asked();
        let tier = self
            .explicit("task_tier")
            .and_then(|t| Tier::parse(&t))
            .unwrap_or_else(|| Tier::of(asked));
        let weight = self
            .explicit("task_weight")
            .and_then(|w| w.trim().parse().ok())
            .and_then(Weight::new)
            .unwrap_or_default();
        let group = Group::new(tier, weight);
        (group.level_for(asked), group)
    }

    /// The priority this session's next statement runs at: `priority` (or the tier's default
    /// when only `task_tier` is set), moved into the `task_tier` group's tier if it lies outside.
    pub fn priority(&self) -> Priority {
        self.class().0
    }

    /// Whether the transaction a statement runs in now is read-only: the block's, or a statement
    /// of its own under `default_transaction_read_only`.
    fn read_only(&self) -> bool {
        match &self.block {
            Some(b) => b.read_only,
            None => self.default_read_only(),
        }
    }

    fn default_read_only(&self) -> bool {
        self.setting("default_transaction_read_only")
            .is_some_and(|v| v == "on")
    }

    fn default_level(&self) -> Level {
        self.setting("default_transaction_isolation")
            .and_then(|l| Level::parse(&l))
            .unwrap_or(Level::ReadCommitted)
    }

    /// Whether the open transaction block has failed (statements are refused until it ends).
    pub fn block_failed(&self) -> bool {
        self.block.as_ref().is_some_and(|b| b.failed)
    }

    /// Whether a transaction block is open.
    pub fn in_block(&self) -> bool {
        self.block.is_some()
    }

    /// Carries out `prepared` with `params`.
    pub async fn execute(&mut self, prepared: Arc<Prepared>, params: Vec<Datum>) -> Answer {
        self.cancel = Arc::default();
        self.execute_current(prepared, params).await
    }

    /// [`execute`](Self::execute), cancelled through `self.cancel`.
    async fn execute_current(&mut self, prepared: Arc<Prepared>, params: Vec<Datum>) -> Answer {
        match self.execute_inner(prepared, params).await {
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
    ) -> Answer {
        if matches!(prepared.command, Command::Commit | Command::Rollback) {
            return self.execute(prepared, params).await;
        }
        let cancel = Arc::new(txn::Cancel::default());
        self.cancel = Arc::clone(&cancel);
        let timeout = self
            .setting("statement_timeout")
            .and_then(|v| settings::milliseconds(&v))
            .filter(|ms| *ms > 0)
            .map(std::time::Duration::from_millis);
        let timer = async {
            match timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        let mut run = Box::pin(self.execute_current(prepared, params));
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

    /// Reports `e`, whatever raised it (parsing, binding, a bad parameter, the statement itself,
    /// a cancel): an open block fails, and refuses every statement but COMMIT and ROLLBACK from
    /// here on (PostgreSQL's failed transaction block, 25P02).
    pub fn fail(&mut self, e: SqlError) -> Answer {
        self.mark_failed();
        Answer::Error(e)
    }

    /// Fails the open block, if any (an error was reported).
    pub fn mark_failed(&mut self) {
        if let Some(b) = &mut self.block {
            b.failed = true;
        }
    }

    /// Opens the implicit transaction block of a Query message holding several statements, unless
    /// a block is open: its statements then commit or roll back together.
    pub fn begin_implicit(&mut self) {
        if self.block.is_none() {
            self.block = Some(self.new_block(self.default_level(), true));
        }
    }

    /// Ends the implicit block of a Query message (if one is open): commits it, or rolls it back
    /// if a statement failed. A block that BEGIN made explicit stays open.
    pub async fn end_implicit(&mut self) -> Option<SqlError> {
        if !self.block.as_ref().is_some_and(|b| b.implicit) {
            return None;
        }
        match self.end_block(true).await {
            Answer::Error(e) => Some(e),
            _ => None,
        }
    }

    fn new_block(&self, level: Level, implicit: bool) -> Block {
        Block {
            level,
            read_only: self.default_read_only(),
            txn: TxnState::NotStarted,
            failed: false,
            local: Settings::default(),
            saved: self.settings.clone(),
            implicit,
            began: None,
            pending: Arc::default(),
        }
    }

    async fn execute_inner(
        &mut self,
        prepared: Arc<Prepared>,
        params: Vec<Datum>,
    ) -> Result<Answer, SqlError> {
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
        match &prepared.command {
            Command::Query(_) => {
                let columns = prepared.columns.clone();
                // now() is the transaction's start: a block's first statement's.
                let started = overtake_sql::time::now_micros();
                let began = match &mut self.block {
                    Some(b) => *b.began.get_or_insert(started),
                    None => started,
                };
                let out = self
                    .run(RunOrInsert::Run(
                        Arc::clone(&prepared),
                        params,
                        (began, started),
                        Arc::clone(&self.user),
                    ))
                    .await?;
                Ok(if columns.is_empty() {
                    Answer::Done(out.tag)
                } else {
                    Answer::Rows {
                        columns,
                        rows: out.rows,
                        tag: out.tag,
                    }
                })
            }
            Command::Ddl(_) => {
                // DDL is transactional: it runs in the block's transaction (a statement alone
                // gets a block of its own), and its changes stay the block's until it commits.
                let alone = self.block.is_none();
                if alone {
                    self.block = Some(self.new_block(self.default_level(), false));
                }
                let pending = self
                    .block
                    .as_ref()
                    .map(|b| Arc::clone(&b.pending))
                    .unwrap_or_default();
                let work = RunOrInsert::Ddl(Arc::clone(&self.shared.catalog), prepared, pending);
                let done = self.run(work).await;
                if alone {
                    let end = self.end_block(done.is_ok()).await;
                    if let (Ok(_), Answer::Error(e)) = (&done, end) {
                        return Err(e);
                    }
                }
                Ok(Answer::Done(done?.tag))
            }
            Command::CopyIn(c) => {
                let n = c.columns.len();
                self.copy = Some(CopyState {
                    plan: prepared,
                    data: Vec::new(),
                    overflowed: false,
                });
                Ok(Answer::CopyIn(n))
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
                Ok(Answer::Begin)
            }
            Command::Commit | Command::Rollback => unreachable!("handled above"),
            Command::Set { name, value, local } => {
                self.set(name, value.as_deref(), *local)?;
                Ok(Answer::Done("SET".into()))
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
                Ok(Answer::Done("SET".into()))
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
                Ok(Answer::Rows {
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
                    Ok(Answer::Done("RESET".into()))
                } else {
                    Err(SqlError::new(
                        sqlstate::UNDEFINED_OBJECT,
                        format!("unrecognized configuration parameter \"{name}\""),
                    ))
                }
            }
            Command::AlterRoleSet { role, name, value } => {
                let mut roles = self.shared.roles.lock().unwrap_or_else(|p| p.into_inner());
                let defaults = roles.entry(role.clone()).or_default();
                match value {
                    Some(v) => defaults.set(name, v)?,
                    None => defaults.reset(name),
                }
                Ok(Answer::Done("ALTER ROLE".into()))
            }
            Command::Noop("VACUUM") if self.block.is_some() => Err(SqlError::new(
                sqlstate::ACTIVE_SQL_TRANSACTION,
                "VACUUM cannot run inside a transaction block",
            )),
            Command::Noop(tag) => Ok(Answer::Done((*tag).into())),
            Command::Explain(lines) => Ok(Answer::Rows {
                columns: prepared.columns.clone(),
                rows: lines.iter().map(|l| vec![Datum::Text(l.clone())]).collect(),
                tag: "EXPLAIN".into(),
            }),
            Command::Empty => Ok(Answer::Empty),
        }
    }

    fn show_all(&self) -> Answer {
        let mut names: Vec<String> = [
            "priority",
            "task_tier",
            "task_weight",
            "transaction_isolation",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        names.extend(self.settings.iter().map(|(k, _)| k.clone()));
        names.sort();
        names.dedup();
        Answer::Rows {
            columns: vec![
                OutputColumn {
                    name: "name".into(),
                    ty: SqlType::Text,
                },
                OutputColumn {
                    name: "setting".into(),
                    ty: SqlType::Text,
                },
            ],
            rows: names
                .into_iter()
                .map(|n| {
                    let v = self.setting(&n).unwrap_or_default();
                    vec![Datum::Text(n), Datum::Text(v)]
                })
                .collect(),
            tag: "SHOW".into(),
        }
    }

    fn set(&mut self, name: &str, value: Option<&str>, local: bool) -> Result<(), SqlError> {
        if name.eq_ignore_ascii_case("transaction_read_only") {
            let (_, v) = settings::validate(name, value.unwrap_or("off"))?;
            if let Some(b) = &mut self.block {
                set_read_only(b, v == "on")?;
            }
            return Ok(());
        }
        if name.eq_ignore_ascii_case("transaction_isolation") {
            let level = value.and_then(Level::parse).ok_or_else(|| {
                SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    "invalid transaction isolation level",
                )
            })?;
            if let Some(b) = &mut self.block {
                if !matches!(b.txn, TxnState::NotStarted) {
                    return Err(SqlError::new(
                        sqlstate::ACTIVE_SQL_TRANSACTION,
                        "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                    ));
                }
                b.level = level;
            }
            return Ok(());
        }
        let target = match (&mut self.block, local) {
            (Some(b), true) => &mut b.local,
            // SET LOCAL outside a block does nothing (PostgreSQL warns).
            (None, true) => {
                return value.map_or(Ok(()), |v| settings::validate(name, v).map(|_| ()));
            }
            (_, false) => &mut self.settings,
        };
        match value {
            Some(v) => target.set(name, v),
            None => {
                settings::validate(name, settings::default_value(name).unwrap_or(""))?;
                target.reset(name);
                Ok(())
            }
        }
    }

    /// Runs a statement's work: alone, or in the block's task (started by its first statement,
    /// at the priority then in effect).
    async fn run(&mut self, work: RunOrInsert) -> Result<overtake_sql::Output, SqlError> {
        let class = self.class();
        let Some(block) = &mut self.block else {
            let level = self.default_level();
            return txn::run_alone(
                runner_of(&self.thread, &self.shared),
                self.shared.catalog.database(),
                class,
                level,
                work,
                &self.cancel,
            )
            .await;
        };
        let promise = match std::mem::replace(&mut block.txn, TxnState::Gone) {
            TxnState::Running(p) => p,
            TxnState::NotStarted => {
                txn::start_block(
                    runner_of(&self.thread, &self.shared),
                    self.shared.catalog.database(),
                    class,
                    block.level,
                )
                .await?
            }
            TxnState::Gone => return Err(failed_block()),
        };
        let (reply, answer) = Promise::<Reply>::new();
        let guard = txn::Abandon::new(&self.cancel);
        promise.fulfil(Request::Run {
            work,
            cancel: Arc::clone(&self.cancel),
            reply,
        });
        // If this future is dropped here (the statement was cancelled), the guard stops the
        // statement's scans and the block stays `Gone`: the task, finding no one to answer,
        // rolls back.
        let reply = answer.await.map_err(crate::txn::unanswered)?;
        guard.disarm();
        if let Some(next) = reply.next {
            block.txn = TxnState::Running(next);
        }
        let (out, changes) = reply.result?;
        if !changes.is_empty() {
            Arc::make_mut(&mut block.pending).record(changes);
        }
        Ok(out)
    }

    /// COMMIT (or ROLLBACK): ends the block. A block that does not commit takes back the `SET`s
    /// made in it.
    async fn end_block(&mut self, commit: bool) -> Answer {
        let Some(block) = self.block.take() else {
            // PostgreSQL warns that no transaction is in progress, and succeeds.
            return Answer::End(if commit { "COMMIT" } else { "ROLLBACK" }.into());
        };
        let answer = Self::finish(block.txn, commit && !block.failed).await;
        let pending = Arc::unwrap_or_clone(block.pending);
        if matches!(&answer, Answer::End(tag) if tag == "COMMIT") {
            // Committed: every session sees the block's catalog changes from now on.
            if let Err(e) = pending.publish(&self.shared.catalog) {
                return Answer::Error(e);
            }
        } else {
            self.settings = block.saved;
            pending.discard(&self.shared.catalog);
        }
        answer
    }

    /// Commits (or rolls back) a block's transaction.
    async fn finish(txn: TxnState, commit: bool) -> Answer {
        match txn {
            TxnState::Running(p) if commit => {
                let (reply, answer) = Promise::new();
                p.fulfil(Request::Commit(reply));
                match answer.await {
                    Ok(Ok(())) => Answer::End("COMMIT".into()),
                    Ok(Err(e)) => Answer::Error(e),
                    Err(e) => Answer::Error(crate::txn::unanswered(e)),
                }
            }
            TxnState::Running(p) => {
                let (reply, answer) = Promise::new();
                p.fulfil(Request::Rollback(reply));
                let _ = answer.await;
                Answer::End("ROLLBACK".into())
            }
            TxnState::NotStarted if commit => Answer::End("COMMIT".into()),
            _ => Answer::End("ROLLBACK".into()),
        }
    }

    /// The end of COPY's data: inserts the rows (in the block, or as a transaction of their own).
    pub async fn finish_copy(&mut self) -> Answer {
        self.cancel = Arc::default();
        let Some(copy) = self.copy.take() else {
            return Answer::Error(SqlError::new(
                sqlstate::PROTOCOL_VIOLATION,
                "no COPY in progress",
            ));
        };
        let Command::CopyIn(c) = &copy.plan.command else {
            unreachable!("a COPY plan")
        };
        // The data is parsed where the rows are inserted, in the statement's task: never on the
        // network thread, where a large COPY would hold up every other session on it.
        let rows = Rows {
            table: Arc::clone(&c.table),
            columns: c.columns.clone(),
            data: copy.data,
        };
        let result = self.run(RunOrInsert::Insert(rows)).await;
        match result {
            Ok(out) => Answer::Done(out.tag),
            Err(e) => self.fail(e),
        }
    }

    /// A message came from the client; fails with FATAL 25P03 if the session was ended for idling
    /// in a transaction.
    pub fn touch(&mut self) -> Result<(), SqlError> {
        if self.terminated {
            return Err(SqlError::new(
                sqlstate::IDLE_IN_TRANSACTION_TIMEOUT,
                "terminating connection due to idle-in-transaction timeout",
            ));
        }
        self.moment += 1;
        Ok(())
    }

    /// If the session is idle in a block and `idle_in_transaction_session_timeout` is set: how
    /// long it may stay so, and the moment it became idle.
    pub fn idle_watch(&self) -> Option<(std::time::Duration, u64)> {
        self.block.as_ref()?;
        let ms = self
            .setting("idle_in_transaction_session_timeout")
            .and_then(|v| settings::milliseconds(&v))
            .filter(|ms| *ms > 0)?;
        Some((std::time::Duration::from_millis(ms), self.moment))
    }

    /// Ends the session if it has stayed idle in its block since `moment`: the block rolls back
    /// now (its task ends, freeing its slot, snapshot and locks).
    pub fn end_if_idle_since(&mut self, moment: u64) {
        if self.moment != moment || self.block.is_none() || self.terminated {
            return;
        }
        if let Some(block) = self.block.take() {
            // Dropping the block's promise ends its task, which rolls back.
            drop(block.txn);
            self.settings = block.saved;
            Arc::unwrap_or_clone(block.pending).discard(&self.shared.catalog);
        }
        self.terminated = true;
    }

    /// The session's user.
    pub fn user(&self) -> &str {
        &self.user
    }
}

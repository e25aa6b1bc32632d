//! A client connection's state shared by its protocol handlers: its session, its place among
//! `max_connections`, the Execute it may have deferred to Sync, and the helpers every handler
//! uses to report errors (which fail an open block) and answers. Holds no protocol logic of its
//! own: `handler` (simple queries, COPY, startup) and `extended` build on it.

use std::fmt::Debug;
use std::sync::Arc;

use futures::{Sink, SinkExt, stream};
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::send_query_response;
use pgwire::api::results::{CopyResponse, QueryResponse, Response, Tag};
use pgwire::api::store::PortalStore;
use pgwire::api::{
    ClientInfo, ClientPortalStore, ConnectionHandle, ConnectionManager, PgWireConnectionState,
    RandomPidSecretKeyGenerator,
};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::response::{EmptyQueryResponse, TransactionStatus};
use tokio::sync::Mutex;

use overtake_sql::{SqlError, sqlstate};

use crate::prepared::StatementRef;
use crate::session::{CopyStart, Session, Shared, StatementAnswer};
use crate::settings;
use crate::wire;

/// One client connection's handlers and session.
pub struct Connection {
    pub(crate) shared: Arc<Shared>,
    /// Shared with the timer of `idle_in_transaction_session_timeout`.
    pub(crate) session: Arc<Mutex<Option<Session>>>,
    pub(crate) manager: Arc<ConnectionManager>,
    pub(crate) pids: Arc<RandomPidSecretKeyGenerator>,
    /// Holds one of the server's `max_connections` places (given back when dropped).
    admitted: std::sync::atomic::AtomicBool,
    /// An Execute not run yet: it waits for the next message to learn whether it is alone
    /// before Sync (see `extended`).
    pub(crate) deferred: std::sync::Mutex<Option<Arc<Portal<StatementRef>>>>,
    /// The names of the client's prepared statements (pgwire's store cannot list them), for
    /// `DEALLOCATE ALL`. This mutex and the next are taken only on the connection's network
    /// thread, for a few map operations, never across an await or on a worker.
    statement_names: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// Statements `DEALLOCATE` forgot, still in the client's store.
    deallocated: std::sync::Mutex<Vec<String>>,
    /// Told when the session was ended (idle in a transaction too long, or by
    /// `pg_terminate_backend`): the connection's loop sends the FATAL error and closes (see
    /// `socket`).
    pub(crate) ending: Arc<crate::backends::Ending>,
    /// The process id its session is registered under (0: none yet), to unregister it.
    pid: std::sync::atomic::AtomicI32,
    /// The worker serving it, if one does.
    pub(crate) home: Option<crate::session::Home>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        if *self.admitted.get_mut() {
            self.shared.connections.leave();
        }
        let pid = *self.pid.get_mut();
        if pid != 0 {
            self.shared.backends.unregister(pid);
        }
    }
}

impl Connection {
    pub fn new(
        shared: Arc<Shared>,
        manager: Arc<ConnectionManager>,
        pids: Arc<RandomPidSecretKeyGenerator>,
        home: Option<crate::session::Home>,
    ) -> Self {
        Connection {
            shared,
            session: Arc::new(Mutex::new(None)),
            manager,
            pids,
            admitted: std::sync::atomic::AtomicBool::new(false),
            deferred: std::sync::Mutex::new(None),
            statement_names: Default::default(),
            deallocated: Default::default(),
            ending: Default::default(),
            pid: Default::default(),
            home,
        }
    }

    /// Whether the connection is between statements with nothing tied to its worker: a
    /// session, no block open (whose task runs on the worker), no COPY, no deferred Execute.
    pub(crate) fn between_statements(&self) -> bool {
        let deferred = self.deferred.lock().unwrap_or_else(|p| p.into_inner());
        if deferred.is_some() {
            return false;
        }
        let Ok(session) = self.session.try_lock() else {
            return false;
        };
        session
            .as_ref()
            .is_some_and(|s| !s.in_block() && s.copy.is_none())
    }

    /// Notes a statement the client prepared under `name` (Parse), or closed (Close).
    pub(crate) fn name_statement(&self, name: &str, kept: bool) {
        let mut names = self
            .statement_names
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if kept && !name.is_empty() {
            names.insert(name.to_owned());
        } else {
            names.remove(name);
        }
    }

    /// Carries out a `DEALLOCATE` the session answered: the statement named (26000 if there is
    /// none, which fails `session`'s block as any error does), or every one, is forgotten, and
    /// dropped from the client's store by [`Connection::drop_deallocated`] before the client's
    /// next message reads the store. Other answers pass unchanged.
    pub(crate) fn deallocate(
        &self,
        session: &mut Session,
        answer: StatementAnswer,
    ) -> StatementAnswer {
        let (target, all_tag) = match answer {
            StatementAnswer::Deallocate(target) => (target, "DEALLOCATE ALL"),
            StatementAnswer::DiscardAll => (None, "DISCARD ALL"),
            other => return other,
        };
        let mut names = self
            .statement_names
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let mut dropped = self.deallocated.lock().unwrap_or_else(|p| p.into_inner());
        let tag = match target {
            None => {
                session.forget_named(None);
                dropped.extend(std::mem::take(&mut *names));
                all_tag
            }
            // PREPARE's statements and the client's share one namespace.
            Some(name) if session.forget_named(Some(&name)) => "DEALLOCATE",
            Some(name) if names.remove(&name) => {
                dropped.push(name);
                "DEALLOCATE"
            }
            Some(name) => {
                return session.fail(SqlError::new(
                    sqlstate::INVALID_SQL_STATEMENT_NAME,
                    format!("prepared statement \"{name}\" does not exist"),
                ));
            }
        };
        StatementAnswer::Done(tag.into())
    }

    /// Drops from the client's store the statements `DEALLOCATE` forgot (the protocol handlers
    /// that run a statement cannot all reach the store; every one that reads it calls this
    /// first).
    pub(crate) fn drop_deallocated<C>(&self, client: &C)
    where
        C: ClientPortalStore,
        C::PortalStore: PortalStore,
    {
        let dropped =
            std::mem::take(&mut *self.deallocated.lock().unwrap_or_else(|p| p.into_inner()));
        for name in dropped {
            client.portal_store().rm_statement(&name);
        }
    }

    /// Takes one of the server's connection places for this connection (once), for `user` (a
    /// superuser may take the reserved ones: a client naming one must still prove it).
    pub(crate) fn admit(&self, user: &str) -> Result<(), crate::session::Refusal> {
        use std::sync::atomic::Ordering;
        if self.admitted.load(Ordering::Acquire) {
            return Ok(());
        }
        let superuser = self.shared.privileges.is_superuser(user);
        let admitted = self.shared.connections.admit(superuser);
        self.admitted.store(admitted.is_ok(), Ordering::Release);
        admitted
    }

    /// The session, created on first use from the client's startup parameters.
    pub(crate) async fn session<C: ClientInfo>(
        &self,
        client: &C,
    ) -> Result<tokio::sync::MutexGuard<'_, Option<Session>>, SqlError> {
        let mut guard = self.session.lock().await;
        match guard.as_mut() {
            None => *guard = Some(self.new_session(client)?),
            Some(session) => session.touch()?,
        }
        Ok(guard)
    }

    /// After a message that leaves the session idle in a transaction block: ends the block and
    /// the session once `idle_in_transaction_session_timeout` passes with no message (the
    /// block rolls back at once, freeing what it held; the client is sent FATAL 25P03 and the
    /// connection closes, as PostgreSQL closes it).
    pub(crate) fn watch_idle(&self, session: &mut Session) {
        let Some((timeout, moment)) = session.idle_watch() else {
            return;
        };
        let shared = Arc::clone(&self.session);
        let ending = Arc::clone(&self.ending);
        tokio::spawn(async move {
            tokio::time::sleep(timeout).await;
            if let Some(session) = shared.lock().await.as_mut()
                && session.end_if_idle_since(moment)
            {
                ending.end(
                    overtake_sql::sqlstate::IDLE_IN_TRANSACTION_TIMEOUT,
                    "terminating connection due to idle-in-transaction timeout",
                );
            }
        });
    }

    /// Whether the session's open block has failed.
    pub(crate) async fn block_failed(&self) -> bool {
        self.session
            .lock()
            .await
            .as_ref()
            .is_some_and(Session::block_failed)
    }

    /// Passes `result` on; an error (about to reach the client, whatever raised it) fails the
    /// session's open block, and the status the next ReadyForQuery reports follows.
    pub(crate) async fn failing<C: ClientInfo, T>(
        &self,
        client: &mut C,
        result: PgWireResult<T>,
    ) -> PgWireResult<T> {
        if result.is_err() {
            let mut guard = self.session.lock().await;
            if let Some(session) = guard.as_mut() {
                session.mark_failed();
            }
            client.set_transaction_status(status_of(&guard));
        }
        result
    }

    /// Fails if the startup packet's settings (its `options`, and its parameters naming
    /// settings) are malformed or hold a setting `user` may not set (a priority above the
    /// default without the privilege).
    pub(crate) fn check_options<'a>(
        &self,
        user: &str,
        parameters: impl IntoIterator<Item = (&'a String, &'a String)>,
    ) -> Result<(), SqlError> {
        for (name, value) in settings::startup_settings(parameters)? {
            settings::validate(&name, &value)?;
            self.shared.privileges.check_setting(user, &name, &value)?;
        }
        Ok(())
    }

    pub(crate) fn new_session<C: ClientInfo>(&self, client: &C) -> Result<Session, SqlError> {
        let meta = client.metadata();
        let user = meta
            .get("user")
            .cloned()
            .unwrap_or_else(|| "overtake".into());
        let options = settings::startup_settings(meta.iter())?;
        let (pid, _) = client.pid_and_secret_key();
        let mut session = Session::new(Arc::clone(&self.shared), &user, &options, pid)?;
        if let Some(home) = &self.home {
            session.serve_from(home.clone());
        }
        if let Some(handle) = client.session_extensions().get::<Arc<ConnectionHandle>>() {
            let ending = Arc::clone(&self.ending);
            let handle = Arc::clone(&*handle);
            (self.shared.backends).register(pid, session.actor(), handle, ending);
            self.pid.store(pid, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(session)
    }
}

pub(crate) fn status_of(session: &Option<Session>) -> TransactionStatus {
    match session {
        Some(s) if s.in_block() && s.block_failed() => TransactionStatus::Error,
        Some(s) if s.in_block() => TransactionStatus::Transaction,
        _ => TransactionStatus::Idle,
    }
}

/// The answer as pgwire's response (`Err` for an error: the caller has set the status).
pub(crate) fn response(answer: StatementAnswer, format: &Format) -> Result<Response, SqlError> {
    Ok(match answer {
        StatementAnswer::Rows { columns, rows, tag } => {
            let fields = Arc::new(wire::fields(&columns, format));
            let format = format.clone();
            let encoded: Vec<PgWireResult<_>> = rows
                .iter()
                .map(|r| Ok(wire::data_row(r, &columns, &format)))
                .collect();
            let mut q = QueryResponse::new(fields, stream::iter(encoded));
            q.set_command_tag(tag.split_whitespace().next().unwrap_or("SELECT"));
            Response::Query(q)
        }
        StatementAnswer::Done(tag) => Response::Execution(Tag::new(&tag)),
        StatementAnswer::Begin => Response::TransactionStart(Tag::new("BEGIN")),
        StatementAnswer::End(tag) => Response::TransactionEnd(Tag::new(&tag)),
        StatementAnswer::CopyIn { columns, binary } => Response::CopyIn(CopyResponse::new(
            i8::from(binary),
            columns,
            stream::empty(),
        )),
        StatementAnswer::Empty => Response::EmptyQuery,
        // Carried out by the connection before its answer is sent (`Connection::deallocate`).
        StatementAnswer::Deallocate(_) | StatementAnswer::DiscardAll => {
            Response::Execution(Tag::new("DEALLOCATE"))
        }
        StatementAnswer::Error(e) => return Err(e),
        // Only a fetch or a COPY TO gives them, and their connection sends them
        // (`RowsToClient::answer`).
        StatementAnswer::Suspended | StatementAnswer::CopyOut { .. } => {
            return Err(SqlError::new(
                sqlstate::INTERNAL_ERROR,
                "a portal was suspended outside a fetch",
            ));
        }
    })
}

/// Writes a statement's rows to the client as they come (`RowOut`), then its answer: with
/// their description first in the simple protocol (the extended one sends it at Describe).
pub(crate) struct RowsToClient<'c, C> {
    pub(crate) client: &'c mut C,
    format: Format,
    /// The simple protocol: rows are described before the first is sent.
    describe: bool,
    /// Their description was sent (with a first batch).
    described: bool,
    /// COPY TO's CopyOutResponse was sent.
    copying: bool,
}

impl<'c, C> RowsToClient<'c, C>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    /// For the simple protocol (`extended` false) or the extended one, in `format`.
    pub(crate) fn new(client: &'c mut C, format: Format, extended: bool) -> Self {
        RowsToClient {
            client,
            format,
            describe: !extended,
            described: false,
            copying: false,
        }
    }

    async fn feed_rows(
        &mut self,
        columns: &[overtake_sql::plan::OutputColumn],
        rows: &[Vec<overtake_sql::Datum>],
    ) -> PgWireResult<()> {
        if self.describe && !self.described {
            let fields = wire::fields(columns, &self.format);
            let description = pgwire::messages::data::RowDescription::new(
                fields.iter().map(Into::into).collect(),
            );
            self.client
                .feed(PgWireBackendMessage::RowDescription(description))
                .await?;
            self.described = true;
        }
        for r in rows {
            // A full write buffer is flushed as it fills: a slow client holds the statement back.
            let row = wire::data_row(r, columns, &self.format);
            self.client.feed(PgWireBackendMessage::DataRow(row)).await?;
        }
        Ok(())
    }

    /// Feeds COPY TO's `pieces`, a CopyData message each, after CopyOutResponse if it was not
    /// sent yet.
    async fn feed_copy(&mut self, start: CopyStart, pieces: Vec<Vec<u8>>) -> PgWireResult<()> {
        if !std::mem::replace(&mut self.copying, true) {
            let format = i16::from(start.binary);
            let response = pgwire::messages::copy::CopyOutResponse::new(
                i8::from(start.binary),
                start.columns as i16,
                vec![format; start.columns],
            );
            self.client
                .feed(PgWireBackendMessage::CopyOutResponse(response))
                .await?;
        }
        for piece in pieces {
            let data = pgwire::messages::copy::CopyData::new(piece.into());
            self.client
                .feed(PgWireBackendMessage::CopyData(data))
                .await?;
        }
        Ok(())
    }

    /// Feeds COPY TO's last `pieces`, CopyDone and its command tag.
    async fn end_copy(
        &mut self,
        start: CopyStart,
        pieces: Vec<Vec<u8>>,
        tag: String,
    ) -> PgWireResult<()> {
        self.feed_copy(start, pieces).await?;
        let done = pgwire::messages::copy::CopyDone::new();
        self.client
            .feed(PgWireBackendMessage::CopyDone(done))
            .await?;
        let tag = pgwire::messages::response::CommandComplete::new(tag);
        self.client
            .feed(PgWireBackendMessage::CommandComplete(tag))
            .await?;
        Ok(())
    }

    /// Feeds the statement's answer (ReadyForQuery, or Sync's, flushes it): the rows left and
    /// its command tag, or another answer (see [`feed_response`]). An error answer is `Err`
    /// (the caller sends it).
    pub(crate) async fn answer(
        &mut self,
        answer: StatementAnswer,
    ) -> Result<PgWireResult<()>, SqlError> {
        Ok(match answer {
            StatementAnswer::Rows { columns, rows, tag } => {
                let fed = self.feed_rows(&columns, &rows).await;
                match fed {
                    Ok(()) => {
                        let tag = pgwire::messages::response::CommandComplete::new(tag);
                        self.client
                            .feed(PgWireBackendMessage::CommandComplete(tag))
                            .await
                            .map_err(PgWireError::from)
                    }
                    Err(e) => Err(e),
                }
            }
            StatementAnswer::CopyOut { start, pieces, tag } => {
                self.end_copy(start, pieces, tag).await
            }
            StatementAnswer::Suspended => self
                .client
                .feed(PgWireBackendMessage::PortalSuspended(
                    pgwire::messages::extendedquery::PortalSuspended::new(),
                ))
                .await
                .map_err(PgWireError::from),
            other => {
                let response = response(other, &self.format)?;
                feed_response(&mut *self.client, response, !self.describe).await
            }
        })
    }
}

#[async_trait::async_trait]
impl<C> crate::session::RowOut for RowsToClient<'_, C>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    async fn rows(
        &mut self,
        columns: &[overtake_sql::plan::OutputColumn],
        rows: Vec<Vec<overtake_sql::Datum>>,
    ) -> Result<(), SqlError> {
        self.feed_rows(columns, &rows).await.map_err(unsent)
    }

    async fn copy_out(&mut self, start: CopyStart, pieces: Vec<Vec<u8>>) -> Result<(), SqlError> {
        self.feed_copy(start, pieces).await.map_err(unsent)
    }
}

/// The error of rows the client could not be sent.
fn unsent(e: PgWireError) -> SqlError {
    SqlError::new(
        sqlstate::CONNECTION_FAILURE,
        format!("could not send rows to the client: {e}"),
    )
}

/// Completes when the client's cancel request for the statement about to run arrives.
pub(crate) async fn cancel_request(
    handle: &ConnectionHandle,
) -> impl std::future::Future<Output = ()> + use<> {
    let request = handle.start_query().await;
    async move {
        // An error means a later statement took the cancel over: this one is never cancelled.
        if request.await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Feeds a statement's answer (ReadyForQuery, or Sync's, flushes it): its rows, with their
/// description unless Describe sent it already (the extended protocol), its command tag, an
/// empty query's answer, or the start of a COPY FROM STDIN (begun by the `extended` protocol or
/// the simple one: the copy's end differs).
pub(crate) async fn feed_response<C>(
    client: &mut C,
    response: Response,
    extended: bool,
) -> PgWireResult<()>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    match response {
        Response::Query(q) => send_query_response(client, q, !extended).await?,
        Response::Execution(tag)
        | Response::TransactionStart(tag)
        | Response::TransactionEnd(tag) => {
            client
                .feed(PgWireBackendMessage::CommandComplete(tag.into()))
                .await?;
        }
        Response::EmptyQuery => {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(
                    EmptyQueryResponse::new(),
                ))
                .await?;
        }
        Response::CopyIn(c) => {
            client.set_state(PgWireConnectionState::CopyInProgress(extended));
            pgwire::api::copy::send_copy_in_response(client, c).await?;
        }
        _ => {}
    }
    Ok(())
}

//! The protocol side of a connection: pgwire's handler traits over a [`Session`]. Simple queries
//! (several statements in one message, answered in order, stopping at the first error), the
//! extended protocol (statements parsed and planned once, bound and executed many times; a plan
//! made before a catalog change is made again), COPY FROM STDIN, startup and cancel.
//!
//! Runs on the network threads; statements go to the scheduler's workers (`txn`), never the
//! other way round. A malformed or hostile message ends only its own connection.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, SinkExt, stream};
use pgwire::api::auth::{
    DefaultServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::Format;
use pgwire::api::query::{SimpleQueryHandler, send_query_response};
use pgwire::api::results::{CopyResponse, QueryResponse, Response, Tag};
use pgwire::api::store::PortalStore;
use pgwire::api::{
    ClientInfo, ClientPortalStore, ConnectionHandle, ConnectionManager, PgWireConnectionState,
    PidSecretKeyGenerator, RandomPidSecretKeyGenerator,
};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, ReadyForQuery, TransactionStatus,
};
use pgwire::messages::simplequery::Query as QueryMessage;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use tokio::sync::Mutex;

use overtake_sql::statement::{ends_transaction, parse, prepare};
use overtake_sql::{SqlError, sqlstate};

use crate::session::{Answer, MAX_COPY_BYTES, Session, Shared, failed_block};
use crate::settings;
use crate::wire;

/// The server parameters reported at startup (a PostgreSQL 15 server, as clients expect).
pub fn server_parameters() -> DefaultServerParameterProvider {
    let mut p = DefaultServerParameterProvider::default();
    p.server_version = "15.0".to_owned();
    p
}

/// One client connection's handlers and session.
pub struct Connection {
    pub(crate) shared: Arc<Shared>,
    session: Mutex<Option<Session>>,
    manager: Arc<ConnectionManager>,
    pids: Arc<RandomPidSecretKeyGenerator>,
    /// Holds one of the server's `max_connections` places (given back when dropped).
    admitted: std::sync::atomic::AtomicBool,
    /// An Execute not run yet: it waits for the next message to learn whether it is alone
    /// before Sync (see `extended`).
    pub(crate) deferred:
        std::sync::Mutex<Option<Arc<pgwire::api::portal::Portal<crate::extended::StatementRef>>>>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        if *self.admitted.get_mut() {
            self.shared.connections.leave();
        }
    }
}

impl Connection {
    pub fn new(
        shared: Arc<Shared>,
        manager: Arc<ConnectionManager>,
        pids: Arc<RandomPidSecretKeyGenerator>,
    ) -> Self {
        Connection {
            shared,
            session: Mutex::new(None),
            manager,
            pids,
            admitted: std::sync::atomic::AtomicBool::new(false),
            deferred: std::sync::Mutex::new(None),
        }
    }

    /// Takes one of the server's connection places for this connection (once): false if none
    /// is left.
    pub(crate) fn admit(&self) -> bool {
        use std::sync::atomic::Ordering;
        if self.admitted.load(Ordering::Acquire) {
            return true;
        }
        let admitted = self.shared.connections.admit();
        self.admitted.store(admitted, Ordering::Release);
        admitted
    }

    /// The session, created on first use from the client's startup parameters.
    pub(crate) async fn session<C: ClientInfo>(
        &self,
        client: &C,
    ) -> Result<tokio::sync::MutexGuard<'_, Option<Session>>, SqlError> {
        let mut guard = self.session.lock().await;
        if guard.is_none() {
            *guard = Some(self.new_session(client)?);
        }
        Ok(guard)
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

    fn new_session<C: ClientInfo>(&self, client: &C) -> Result<Session, SqlError> {
        let meta = client.metadata();
        let user = meta
            .get("user")
            .cloned()
            .unwrap_or_else(|| "overtake".into());
        let mut options = match meta.get("options") {
            Some(o) => settings::startup_options(o)?,
            None => Vec::new(),
        };
        if let Some(app) = meta.get("application_name") {
            options.push(("application_name".into(), app.clone()));
        }
        Session::new(Arc::clone(&self.shared), &user, &options)
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
pub(crate) fn response(answer: Answer, format: &Format) -> Result<Response, SqlError> {
    Ok(match answer {
        Answer::Rows { columns, rows, tag } => {
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
        Answer::Done(tag) => Response::Execution(Tag::new(&tag)),
        Answer::Begin => Response::TransactionStart(Tag::new("BEGIN")),
        Answer::End(tag) => Response::TransactionEnd(Tag::new(&tag)),
        Answer::CopyIn(n) => Response::CopyIn(CopyResponse::new(0, n, stream::empty())),
        Answer::Empty => Response::EmptyQuery,
        Answer::Error(e) => return Err(e),
    })
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

/// Sends a simple query's answer to one statement (fed: ReadyForQuery flushes).
async fn send_answer<C>(client: &mut C, answer: Answer) -> PgWireResult<()>
where
    C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    match response(answer, &Format::UnifiedText) {
        Ok(Response::Query(q)) => send_query_response(client, q, true).await?,
        Ok(
            Response::Execution(tag)
            | Response::TransactionStart(tag)
            | Response::TransactionEnd(tag),
        ) => {
            client
                .feed(PgWireBackendMessage::CommandComplete(tag.into()))
                .await?;
        }
        Ok(Response::EmptyQuery) => {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(
                    EmptyQueryResponse::new(),
                ))
                .await?
        }
        Ok(Response::CopyIn(c)) => {
            pgwire::api::copy::send_copy_in_response(client, c).await?;
            client.set_state(PgWireConnectionState::CopyInProgress(false));
        }
        Ok(_) => {}
        Err(e) => {
            client
                .feed(PgWireBackendMessage::ErrorResponse(
                    wire::error_info(&e).into(),
                ))
                .await?;
        }
    }
    Ok(())
}

#[async_trait]
impl SimpleQueryHandler for Connection {
    async fn on_query<C>(&self, client: &mut C, query: QueryMessage) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        let guard = match self.session(client).await {
            Ok(g) => g,
            Err(e) => return Err(wire::pg_error(&e)),
        };
        drop(guard);
        // An Execute still deferred (a Query before its Sync) runs first, in an implicit block
        // this message's statements then join, as PostgreSQL continues the open transaction.
        if let Err(e) = self.run_deferred(client).await {
            let mut guard = self.session.lock().await;
            if let Some(s) = guard.as_mut() {
                s.mark_failed();
            }
            client.set_transaction_status(status_of(&guard));
            return Err(e);
        }
        let mut guard = match self.session(client).await {
            Ok(g) => g,
            Err(e) => return Err(wire::pg_error(&e)),
        };
        let session = guard.as_mut().expect("created above");
        let statements = match parse(&query.query) {
            Ok(s) => s,
            Err(e) => {
                let answer = session.fail(e);
                send_answer(client, answer).await?;
                Vec::new()
            }
        };
        if statements.is_empty()
            && query
                .query
                .trim_matches(|c: char| c == ';' || c.is_whitespace())
                .is_empty()
        {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(
                    EmptyQueryResponse::new(),
                ))
                .await?;
        }
        let handle = client.session_extensions().get::<Arc<ConnectionHandle>>();
        // Several statements in one message are one transaction (PostgreSQL's implicit block),
        // unless they control transactions themselves.
        let implicit = statements.len() > 1;
        let mut copying = false;
        for stmt in &statements {
            if implicit {
                session.begin_implicit();
            }
            let answer = if session.block_failed() && !ends_transaction(stmt) {
                // A failed block refuses statements before looking at them (PostgreSQL).
                session.fail(failed_block())
            } else {
                match prepare(&self.shared.catalog, stmt, &[]) {
                    Ok(p) => match &handle {
                        Some(handle) => {
                            let cancelled = cancel_request(handle).await;
                            session
                                .execute_until(Arc::new(p), Vec::new(), cancelled)
                                .await
                        }
                        None => session.execute(Arc::new(p), Vec::new()).await,
                    },
                    Err(e) => session.fail(e),
                }
            };
            let stop = matches!(answer, Answer::Error(_));
            copying = matches!(answer, Answer::CopyIn(_));
            send_answer(client, answer).await?;
            if stop || copying {
                break;
            }
        }
        if !copying && let Some(e) = session.end_implicit().await {
            send_answer(client, Answer::Error(e)).await?;
        }
        let status = status_of(&guard);
        client.set_transaction_status(status);
        if !matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            client.set_state(PgWireConnectionState::ReadyForQuery);
            client
                .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                    status,
                )))
                .await?;
        } else {
            client.flush().await?;
        }
        Ok(())
    }

    async fn do_query<C>(&self, _client: &mut C, _query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        unreachable!("on_query is overridden")
    }
}

#[async_trait]
impl CopyHandler for Connection {
    async fn on_copy_data<C>(&self, client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut guard = self.session(client).await.map_err(|e| wire::pg_error(&e))?;
        if let Some(copy) = guard.as_mut().and_then(|s| s.copy.as_mut()) {
            if copy.overflowed || copy.data.len() + copy_data.data.len() > MAX_COPY_BYTES {
                copy.overflowed = true;
                copy.data.clear();
            } else {
                copy.data.extend_from_slice(&copy_data.data);
            }
        }
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut guard = self.session(client).await.map_err(|e| wire::pg_error(&e))?;
        let session = guard.as_mut().expect("created above");
        let mut answer = if session.copy.as_ref().is_some_and(|c| c.overflowed) {
            session.copy = None;
            session.fail(SqlError::new(
                sqlstate::PROGRAM_LIMIT_EXCEEDED,
                format!("COPY data over the limit of {MAX_COPY_BYTES} bytes"),
            ))
        } else {
            session.finish_copy().await
        };
        // A COPY sent with other statements in one message ends their implicit block.
        if let Some(e) = session.end_implicit().await {
            answer = Answer::Error(e);
        }
        client.set_transaction_status(status_of(&guard));
        match answer {
            Answer::Done(tag) => {
                client
                    .send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                        tag,
                    )))
                    .await?;
                Ok(())
            }
            Answer::Error(e) => Err(wire::pg_error(&e)),
            other => Err(wire::pg_error(&SqlError::new(
                sqlstate::INTERNAL_ERROR,
                format!("unexpected {other:?}"),
            ))),
        }
    }
}

#[async_trait]
impl StartupHandler for Connection {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let PgWireFrontendMessage::Startup(ref startup) = message else {
            return Ok(());
        };
        protocol_negotiation(client, startup).await?;
        save_startup_parameters_to_metadata(client, startup);
        let (pid, secret) = self.pids.generate(client);
        client.set_pid_and_secret_key(pid, secret.clone());
        let (handle, guard) = self.manager.register(pid, secret);
        client
            .session_extensions()
            .insert::<Arc<ConnectionHandle>>(handle);
        client.session_extensions().insert(guard);
        // Settings from the startup packet that are wrong refuse the connection, as PostgreSQL
        // does.
        let session = self.new_session(client).map_err(|e| {
            PgWireError::UserError(Box::new(pgwire::error::ErrorInfo::new(
                "FATAL".into(),
                e.code.into(),
                e.message.clone(),
            )))
        })?;
        *self.session.lock().await = Some(session);
        finish_authentication(client, &server_parameters()).await
    }
}

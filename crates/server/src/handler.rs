//! The protocol side of a connection: pgwire's handler traits over a [`Session`]. Simple queries
//! (several statements in one message, answered in order, stopping at the first error), the
//! extended protocol (statements parsed and planned once, bound and executed many times; a plan
//! made before a catalog change is made again), COPY FROM STDIN, startup and cancel.
//!
//! Runs in a session's steps (on its worker's own stack, or on a network thread with
//! `--session-threads`); statements run as tasks (`txn`). A malformed or hostile message ends only its own connection.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::auth::{
    DefaultServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::Format;
use pgwire::api::query::SimpleQueryHandler;
use pgwire::api::results::Response;
use pgwire::api::store::PortalStore;
use pgwire::api::{
    ClientInfo, ClientPortalStore, ConnectionHandle, PgWireConnectionState, PidSecretKeyGenerator,
};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::response::{CommandComplete, EmptyQueryResponse, ReadyForQuery};
use pgwire::messages::simplequery::Query as QueryMessage;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use overtake_sql::bind::statement::{ends_transaction, parse, prepare_in};
use overtake_sql::{SqlError, sqlstate};

use crate::connection::{Connection, RowsToClient, cancel_request, status_of};
use crate::session::{StatementAnswer, failed_block};
use crate::wire;

/// The server parameters reported at startup (a PostgreSQL 15 server, as clients expect).
pub fn server_parameters() -> DefaultServerParameterProvider {
    let mut p = DefaultServerParameterProvider::default();
    p.server_version = "15.0".to_owned();
    p
}

/// Sends a simple query's answer to one statement (fed: ReadyForQuery flushes), after the rows
/// `to` sent while it ran.
async fn send_answer<C>(mut to: RowsToClient<'_, C>, answer: StatementAnswer) -> PgWireResult<()>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    match to.answer(answer).await {
        Ok(fed) => fed,
        Err(e) => {
            to.client
                .feed(PgWireBackendMessage::ErrorResponse(
                    wire::error_info(&e).into(),
                ))
                .await?;
            Ok(())
        }
    }
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
                send_answer(
                    RowsToClient::new(client, Format::UnifiedText, false),
                    answer,
                )
                .await?;
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
            // Rows leave as the statement makes them; the answer follows them.
            let mut to = RowsToClient::new(&mut *client, Format::UnifiedText, false);
            let answer = if session.block_failed() && !ends_transaction(stmt) {
                // A failed block refuses statements before looking at them (PostgreSQL).
                session.fail(failed_block())
            } else {
                match prepare_in(session.tables(), stmt, &[]) {
                    Ok(p) => match &handle {
                        Some(handle) => {
                            let cancelled = cancel_request(handle).await;
                            session
                                .execute_until(Arc::new(p), Vec::new(), cancelled, Some(&mut to))
                                .await
                        }
                        None => {
                            session
                                .execute(Arc::new(p), Vec::new(), Some(&mut to))
                                .await
                        }
                    },
                    Err(e) => session.fail(e),
                }
            };
            let answer = self.deallocate(session, answer);
            self.drop_deallocated(to.client);
            let stop = matches!(answer, StatementAnswer::Error(_));
            copying = matches!(answer, StatementAnswer::CopyIn { .. });
            send_answer(to, answer).await?;
            if stop || copying {
                break;
            }
        }
        if !copying && let Some(e) = session.end_implicit().await {
            let to = RowsToClient::new(&mut *client, Format::UnifiedText, false);
            send_answer(to, StatementAnswer::Error(e)).await?;
        }
        let status = status_of(&guard);
        client.set_transaction_status(status);
        if let Some(session) = guard.as_mut() {
            self.watch_idle(session);
            // Portals end with the transaction that made them.
            if !session.in_block() {
                client.portal_store().clear_portals();
            }
        }
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
        if let Some(session) = guard.as_mut() {
            // Waits (asynchronously) until the statement took the piece before: the client's
            // next message is read no faster than the statement inserts.
            session.copy_data(&copy_data.data).await;
        }
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.end_copy(client, None).await
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match self.end_copy(client, Some(&fail.message)).await {
            Err(e) => e,
            Ok(()) => wire::pg_error(&SqlError::new(
                sqlstate::INTERNAL_ERROR,
                "a failed COPY succeeded",
            )),
        }
    }
}

impl Connection {
    /// Ends a COPY FROM STDIN: its data is done (or `failed`, with the client's message).
    async fn end_copy<C>(&self, client: &mut C, failed: Option<&str>) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut guard = self.session(client).await.map_err(|e| wire::pg_error(&e))?;
        let session = guard.as_mut().expect("created above");
        let mut answer = session.finish_copy(failed).await;
        // A COPY sent with other statements in one message ends their implicit block.
        if let Some(e) = session.end_implicit().await {
            answer = StatementAnswer::Error(e);
        }
        client.set_transaction_status(status_of(&guard));
        match answer {
            StatementAnswer::Done(tag) => {
                client
                    .send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                        tag,
                    )))
                    .await?;
                Ok(())
            }
            StatementAnswer::Error(e) => Err(wire::pg_error(&e)),
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
        let session = (self.new_session(client)).map_err(|e| wire::fatal(e.code, e.message))?;
        *self.session.lock().await = Some(session);
        finish_authentication(client, &server_parameters()).await
    }
}

//! Execute in the extended protocol: a bound portal run now, or deferred until the Sync (so a
//! pipeline's statements leave in one write), read in parts as a cursor when the client asks for
//! a row limit, and cancelled by the client's cancel request. Never runs a statement anywhere but
//! through the session.

use std::fmt::Debug;
use std::sync::Arc;

use futures::{Sink, SinkExt};
use pgwire::api::DEFAULT_NAME;
use pgwire::api::portal::Portal;
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, ConnectionHandle, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::extendedquery::Execute;
use pgwire::messages::response::EmptyQueryResponse;

use overtake_sql::SqlError;

use super::{bound, portal_not_found, shown};
use crate::connection::{Connection, RowsToClient, cancel_request, status_of};
use crate::prepared::StatementRef;
use crate::session::{RowOut, StatementAnswer};
use crate::wire;

impl Connection {
    pub(super) async fn execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = StatementRef>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        let portal_name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal = match client.portal_store().get_portal(portal_name) {
            Some(Entry::Value(portal)) => portal,
            Some(Entry::Empty) => {
                client
                    .feed(PgWireBackendMessage::EmptyQueryResponse(
                        EmptyQueryResponse::new(),
                    ))
                    .await?;
                return Ok(());
            }
            None => return Err(portal_not_found(portal_name)),
        };
        // A row limit (a driver's cursor) fetches the portal a few rows at a time, as does any
        // Execute of a portal fetched so. Otherwise, outside a block, the statements up to Sync
        // are one implicit transaction (PostgreSQL's rule). Most often one statement comes
        // before Sync: a data statement waits for the next message, and runs alone (one trip to
        // a worker) if that is Sync, or in an implicit block with the ones after it otherwise.
        // Its answer is not due before then: answers leave at Sync (or Flush).
        let (fetched, deferrable) = {
            let guard = self.session(client).await.map_err(|e| wire::pg_error(&e))?;
            let session = guard.as_ref();
            let fetched =
                message.max_rows > 0 || session.is_some_and(|s| s.has_cursor(shown(portal_name)));
            // Outside a block only (in one, every statement runs in its task at once).
            let deferrable = !fetched
                && session.is_some_and(|session| {
                    !session.in_block()
                        && portal
                            .statement
                            .statement
                            .plan(session.tables())
                            .is_ok_and(|p| matches!(p.command, overtake_sql::Command::Query(_)))
                });
            (fetched, deferrable)
        };
        if fetched {
            let max_rows = usize::try_from(message.max_rows).unwrap_or(0);
            return self
                .fetch(client, &portal, shown(portal_name), max_rows)
                .await;
        }
        if deferrable {
            *self.deferred.lock().unwrap_or_else(|p| p.into_inner()) = Some(portal);
            return Ok(());
        }
        self.run_execute(client, &portal).await
    }

    /// Runs the statement a deferred Execute left (if any) in the session's implicit block, which
    /// it opens if none is open: another message followed it before Sync.
    pub(crate) async fn run_deferred<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(portal) = self.take_deferred() else {
            return Ok(());
        };
        if let Some(session) = self
            .session(client)
            .await
            .map_err(|e| wire::pg_error(&e))?
            .as_mut()
        {
            session.begin_implicit();
        }
        self.run_execute(client, &portal).await
    }

    /// Runs the statement a deferred Execute left (if any) at Sync: alone, unless an implicit
    /// block is open already.
    pub(super) async fn run_deferred_alone<C>(&self, client: &mut C) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match self.take_deferred() {
            Some(portal) => self.run_execute(client, &portal).await,
            None => Ok(()),
        }
    }

    fn take_deferred(&self) -> Option<Arc<Portal<StatementRef>>> {
        self.deferred
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// Runs a bound portal to its end and feeds its answer (its rows leave as they are made).
    async fn run_execute<C>(
        &self,
        client: &mut C,
        portal: &Portal<StatementRef>,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.ready_session(client).await?;
        client.set_state(PgWireConnectionState::QueryInProgress);
        let cancelled = cancel_of(client).await;
        let mut to = RowsToClient::new(&mut *client, portal.result_column_format.clone(), true);
        let answer = self.run_portal(portal, cancelled, Some(&mut to)).await;
        self.feed_answer(to, answer.unwrap_or_else(StatementAnswer::Error))
            .await
    }

    /// Feeds an Execute's answer to the client `to` writes to, and the session's status after
    /// it for the next ReadyForQuery (an error answer is returned, for the caller to send).
    async fn feed_answer<C>(
        &self,
        mut to: RowsToClient<'_, C>,
        answer: StatementAnswer,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // Before the answer: COPY's answer changes the state again.
        to.client.set_state(PgWireConnectionState::ReadyForQuery);
        let fed = match answer {
            StatementAnswer::Error(e) => Err(e),
            answer => to.answer(answer).await,
        };
        // The status the next ReadyForQuery reports follows the session, whatever the answer.
        to.client
            .set_transaction_status(status_of(&*self.session.lock().await));
        fed.map_err(|e| wire::pg_error(&e))?
    }

    /// Executes `portal` (named `name`) for at most `max_rows` rows (all if 0): its first fetch
    /// starts it, in the open block or an implicit one; it suspends once that many rows were
    /// sent, and completes with the rows of its last fetch counted.
    async fn fetch<C>(
        &self,
        client: &mut C,
        portal: &Portal<StatementRef>,
        name: &str,
        max_rows: usize,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.ready_session(client).await?;
        client.set_state(PgWireConnectionState::QueryInProgress);
        let mut cancelled = cancel_of(client).await;
        let mut to = RowsToClient::new(&mut *client, portal.result_column_format.clone(), true);
        let answer = {
            let mut guard = self.session.lock().await;
            let session = guard.as_mut().expect("made above (`ready_session`)");
            let opened = if session.has_cursor(name) {
                None
            } else {
                match bound(portal, session) {
                    Ok((plan, params)) => {
                        session
                            .open_cursor(name, plan, params, max_rows, &mut cancelled)
                            .await
                    }
                    Err(e) => Some(session.fail(e)),
                }
            };
            let answer = match opened {
                Some(answer) => answer,
                None => session.fetch(name, max_rows, &mut cancelled, &mut to).await,
            };
            self.deallocate(session, answer)
        };
        self.feed_answer(to, answer).await
    }

    /// Stops the fetches of portal `name`, if it is being fetched.
    pub(super) async fn close_cursor<C: ClientInfo>(
        &self,
        client: &C,
        name: &str,
    ) -> PgWireResult<()> {
        if let Some(session) = self
            .session(client)
            .await
            .map_err(|e| wire::pg_error(&e))?
            .as_mut()
        {
            session.close_cursor(shown(name)).await;
        }
        Ok(())
    }

    /// Makes the session if this is the connection's first message that needs it (a client
    /// that authenticated with a password gets it here), and notes the message; fails once the
    /// session was ended.
    pub(super) async fn ready_session<C: ClientInfo>(&self, client: &C) -> PgWireResult<()> {
        let guard = self.session(client).await.map_err(|e| wire::pg_error(&e))?;
        drop(guard);
        Ok(())
    }

    /// Runs a bound portal to its end unless `cancelled` completes first; its rows go to `out`
    /// as they are made (with no `out`, all with the answer).
    pub(super) async fn run_portal(
        &self,
        portal: &Portal<StatementRef>,
        cancelled: impl std::future::Future<Output = ()> + Send,
        out: Option<&mut dyn RowOut>,
    ) -> Result<StatementAnswer, SqlError> {
        let mut guard = self.session.lock().await;
        let session = guard
            .as_mut()
            .expect("made by the caller (`ready_session`)");
        // An error here reaches the client, which fails the block (`Connection::failing`).
        let (plan, params) = bound(portal, session)?;
        let answer = session.execute_until(plan, params, cancelled, out).await;
        match self.deallocate(session, answer) {
            StatementAnswer::Error(e) => Err(e),
            answer => Ok(answer),
        }
    }
}

/// Completes when the client's cancel request for the statement about to run arrives (never
/// for a client without a connection handle).
async fn cancel_of<C: ClientInfo>(
    client: &C,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    match client.session_extensions().get::<Arc<ConnectionHandle>>() {
        Some(handle) => Box::pin(cancel_request(&handle).await),
        None => Box::pin(std::future::pending()),
    }
}

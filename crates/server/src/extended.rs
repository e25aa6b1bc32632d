//! The extended query protocol: statements parsed and planned once (a plan made before a
//! catalog change is made again), bound with parameters in text or binary, described, and
//! executed. Bind, Describe and Execute answers are fed, not flushed: they leave with the one
//! write Sync makes, as PostgreSQL's do.

use std::fmt::Debug;
use std::sync::{Arc, Mutex as StdMutex};

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::DEFAULT_NAME;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::ExtendedQueryHandler;
use pgwire::api::results::{FieldInfo, Response};
use pgwire::api::stmt::QueryParser;
use pgwire::api::stmt::StoredStatement;
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, ConnectionHandle, PgWireConnectionState, Type};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::data::{NoData, ParameterDescription, RowDescription};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Flush, Parse, ParseComplete,
    Sync as PgSync,
};
use pgwire::messages::response::{EmptyQueryResponse, ReadyForQuery};

use overtake_sql::bind::statement::{ends_transaction, parse, prepare_in};
use overtake_sql::catalog::pending::{Pending, Tables};
use overtake_sql::{SqlError, SqlType, sqlstate};

use crate::connection::{Connection, RowsToClient, cancel_request, response, status_of};
use crate::prepared::{Statement, StatementRef};
use crate::session::Shared;
use crate::session::{RowOut, Session, StatementAnswer, failed_block};
use crate::wire;

/// A Parse message's statement, planned over the catalog as `tables` shows it (`None`: empty).
fn statement_of(
    tables: Tables<'_>,
    sql: &str,
    types: &[Option<Type>],
) -> Result<Option<StatementRef>, SqlError> {
    let mut statements = parse(sql)?;
    let ast = match statements.len() {
        0 => return Ok(None),
        1 => statements.remove(0),
        _ => {
            return Err(SqlError::syntax(
                "cannot insert multiple commands into a prepared statement",
            ));
        }
    };
    let declared: Vec<Option<SqlType>> = types
        .iter()
        .map(|t| t.as_ref().and_then(|t| SqlType::from_oid(t.oid())))
        .collect();
    let plan = prepare_in(tables, &ast, &declared)?;
    Ok(Some(Arc::new(Statement {
        ast,
        declared,
        plan: StdMutex::new(Arc::new(plan)),
    })))
}

/// Plans statements for the extended protocol, over the shared catalog under a block's
/// uncommitted changes (`pending`) if any.
pub struct Planner {
    shared: Arc<Shared>,
    pending: Option<Arc<Pending>>,
}

#[async_trait]
impl QueryParser for Planner {
    type Statement = StatementRef;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<StatementRef>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let tables = match &self.pending {
            Some(p) => Tables::with(&self.shared.catalog, p),
            None => Tables::shared(&self.shared.catalog),
        };
        statement_of(tables, sql, types).map_err(|e| wire::pg_error(&e))
    }

    fn get_parameter_types(&self, stmt: &StatementRef) -> PgWireResult<Vec<Type>> {
        let plan = stmt.plan.lock().unwrap_or_else(|p| p.into_inner());
        Ok(plan.params.iter().map(|t| wire::pg_type(*t)).collect())
    }

    fn get_result_schema(
        &self,
        stmt: &StatementRef,
        format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        let plan = stmt.plan.lock().unwrap_or_else(|p| p.into_inner());
        Ok(wire::fields(
            &plan.columns,
            format.unwrap_or(&Format::UnifiedText),
        ))
    }
}

#[async_trait]
impl ExtendedQueryHandler for Connection {
    type Statement = StatementRef;
    type QueryParser = Planner;

    fn query_parser(&self) -> Arc<Planner> {
        Arc::new(Planner {
            shared: Arc::clone(&self.shared),
            pending: None,
        })
    }

    // Bind and Execute answer with `feed`: their messages leave with the ReadyForQuery that Sync
    // flushes, one write per round trip as PostgreSQL does (pgwire's defaults flush after
    // BindComplete and CommandComplete, which cost pgbench's select-only run two extra writes
    // and wake-ups per statement).
    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = StatementRef>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let parsed = async {
            self.run_deferred(client).await?;
            self.drop_deallocated(client);
            // A failed block refuses every statement but COMMIT and ROLLBACK (PostgreSQL checks
            // at Parse too).
            if self.block_failed().await
                && !parse(&message.query).is_ok_and(|s| s.len() == 1 && ends_transaction(&s[0]))
            {
                return Err(wire::pg_error(&failed_block()));
            }
            // Planned over the catalog as the session's block sees it (its own DDL included).
            let pending = self
                .session(client)
                .await
                .map_err(|e| wire::pg_error(&e))?
                .as_ref()
                .and_then(Session::pending);
            let planner = Arc::new(Planner {
                shared: Arc::clone(&self.shared),
                pending,
            });
            let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
            match StoredStatement::parse(client, &message, planner).await? {
                Some(stmt) => client.portal_store().put_statement(Arc::new(stmt)),
                None => client.portal_store().put_empty_statement(name),
            }
            self.name_statement(name, true);
            Ok(())
        }
        .await;
        self.failing(client, parsed).await?;
        client
            .feed(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
            .await?;
        Ok(())
    }

    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = StatementRef>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let bound = async {
            self.run_deferred(client).await?;
            self.drop_deallocated(client);
            self.bind(client, &message).await
        }
        .await;
        self.failing(client, bound).await
    }

    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = StatementRef>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let described = async {
            self.run_deferred(client).await?;
            self.drop_deallocated(client);
            self.describe(client, &message).await
        }
        .await;
        self.failing(client, described).await
    }

    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = StatementRef>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let executed = async {
            self.run_deferred(client).await?;
            self.execute(client, message).await
        }
        .await;
        self.failing(client, executed).await
    }

    async fn on_close<C>(&self, client: &mut C, message: Close) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = StatementRef>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let deferred = self.run_deferred(client).await;
        self.failing(client, deferred).await?;
        self.drop_deallocated(client);
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        match message.target_type {
            b'S' => {
                client.portal_store().rm_statement(name);
                self.name_statement(name, false);
            }
            b'P' => {
                self.close_cursor(client, name).await?;
                client.portal_store().rm_portal(name);
            }
            _ => {}
        }
        client
            .feed(PgWireBackendMessage::CloseComplete(CloseComplete::new()))
            .await?;
        Ok(())
    }

    async fn on_flush<C>(&self, client: &mut C, _message: Flush) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // The client wants the answers so far: a deferred statement runs now.
        let deferred = self.run_deferred(client).await;
        self.failing(client, deferred).await?;
        client.flush().await?;
        Ok(())
    }

    async fn on_sync<C>(&self, client: &mut C, _message: PgSync) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = StatementRef>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // Sync ends the implicit transaction of the statements since the last one: a statement
        // still deferred runs (alone if it is the only one: one trip to a worker), then the
        // implicit block commits, or rolls back if something failed.
        let mut error = self.run_deferred_alone(client).await.err();
        {
            let mut guard = self.session(client).await.map_err(|e| wire::pg_error(&e))?;
            if let Some(session) = guard.as_mut() {
                if error.is_some() {
                    session.mark_failed();
                }
                if let Some(e) = session.end_implicit().await
                    && error.is_none()
                {
                    error = Some(wire::pg_error(&e));
                }
                self.watch_idle(session);
            }
            // Portals end with the transaction that made them, as PostgreSQL's do.
            if !guard.as_ref().is_some_and(Session::in_block) {
                client.portal_store().clear_portals();
            }
            client.set_transaction_status(status_of(&guard));
        }
        if let Some(e) = error {
            let info: pgwire::error::ErrorInfo = e.into();
            client
                .feed(PgWireBackendMessage::ErrorResponse(info.into()))
                .await?;
        }
        client.set_state(PgWireConnectionState::ReadyForQuery);
        client
            .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                client.transaction_status(),
            )))
            .await?;
        Ok(())
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<StatementRef>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = StatementRef>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // pgwire's own Execute calls this; ours (`execute`, `fetch`) does not. Kept whole, as
        // the trait asks: the statement runs to its end and its rows come with the answer.
        self.ready_session(client).await?;
        let answer = self.run_portal(portal, std::future::pending(), None).await;
        client.set_transaction_status(status_of(&*self.session.lock().await));
        answer
            .and_then(|a| response(a, &portal.result_column_format))
            .map_err(|e| wire::pg_error(&e))
    }
}

impl Connection {
    async fn bind<C>(&self, client: &mut C, message: &Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = StatementRef>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statement_name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal_name = message.portal_name.as_deref().unwrap_or(DEFAULT_NAME);
        // A named portal lives until its transaction ends or it is closed; the unnamed one is
        // replaced (a statement still fetched from it stops).
        if portal_name != DEFAULT_NAME && client.portal_store().get_portal(portal_name).is_some() {
            return Err(wire::pg_error(&SqlError::new(
                sqlstate::DUPLICATE_CURSOR,
                format!("cursor \"{portal_name}\" already exists"),
            )));
        }
        let failed = match self
            .session(client)
            .await
            .map_err(|e| wire::pg_error(&e))?
            .as_mut()
        {
            Some(session) => {
                session.close_cursor(shown(portal_name)).await;
                session.block_failed()
            }
            None => false,
        };
        match client.portal_store().get_statement(statement_name) {
            Some(Entry::Value(statement)) => {
                if failed && !ends_transaction(&statement.statement.ast) {
                    return Err(wire::pg_error(&failed_block()));
                }
                let portal = Portal::try_new(message, statement)?;
                client.portal_store().put_portal(Arc::new(portal));
            }
            Some(Entry::Empty) if message.parameters.is_empty() => {
                client.portal_store().put_empty_portal(portal_name);
            }
            Some(Entry::Empty) => {
                return Err(wire::pg_error(&SqlError::new(
                    sqlstate::PROTOCOL_VIOLATION,
                    "bind message supplies parameters to an empty statement",
                )));
            }
            None => return Err(statement_not_found(statement_name)),
        }
        client
            .feed(PgWireBackendMessage::BindComplete(BindComplete::new()))
            .await?;
        Ok(())
    }

    async fn describe<C>(&self, client: &mut C, message: &Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = StatementRef>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // As Bind: fed, to leave with Sync's flush.
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let session = self.session(client).await.map_err(|e| wire::pg_error(&e))?;
        let tables = session
            .as_ref()
            .map_or_else(|| Tables::shared(&self.shared.catalog), Session::tables);
        let (plan, params, format) = match message.target_type {
            b'S' => match client.portal_store().get_statement(name) {
                Some(Entry::Value(stmt)) => (
                    Some(
                        stmt.statement
                            .plan(tables)
                            .map_err(|e| wire::pg_error(&e))?,
                    ),
                    true,
                    Format::UnifiedText,
                ),
                Some(Entry::Empty) => (None, true, Format::UnifiedText),
                None => return Err(statement_not_found(name)),
            },
            b'P' => match client.portal_store().get_portal(name) {
                Some(Entry::Value(portal)) => (
                    Some(
                        portal
                            .statement
                            .statement
                            .plan(tables)
                            .map_err(|e| wire::pg_error(&e))?,
                    ),
                    false,
                    portal.result_column_format.clone(),
                ),
                Some(Entry::Empty) => (None, false, Format::UnifiedText),
                None => return Err(portal_not_found(name)),
            },
            other => return Err(PgWireError::InvalidTargetType(other)),
        };
        if params {
            let types = plan
                .as_ref()
                .map_or_else(Vec::new, |p| p.params.iter().map(|t| t.oid()).collect());
            client
                .feed(PgWireBackendMessage::ParameterDescription(
                    ParameterDescription::new(types),
                ))
                .await?;
        }
        match plan.filter(|p| !p.columns.is_empty()) {
            Some(p) => {
                let fields = wire::fields(&p.columns, &format);
                client
                    .feed(PgWireBackendMessage::RowDescription(RowDescription::new(
                        fields.iter().map(Into::into).collect(),
                    )))
                    .await?;
            }
            None => {
                client
                    .feed(PgWireBackendMessage::NoData(NoData::new()))
                    .await?
            }
        }
        Ok(())
    }

    async fn execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
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
    async fn run_deferred_alone<C>(&self, client: &mut C) -> PgWireResult<()>
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
    async fn close_cursor<C: ClientInfo>(&self, client: &C, name: &str) -> PgWireResult<()> {
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
    async fn ready_session<C: ClientInfo>(&self, client: &C) -> PgWireResult<()> {
        let guard = self.session(client).await.map_err(|e| wire::pg_error(&e))?;
        drop(guard);
        Ok(())
    }

    /// Runs a bound portal to its end unless `cancelled` completes first; its rows go to `out`
    /// as they are made (with no `out`, all with the answer).
    async fn run_portal(
        &self,
        portal: &Portal<StatementRef>,
        cancelled: impl std::future::Future<Output = ()>,
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

/// A bound portal's plan (made again if the catalog changed) and its parameters' values;
/// 25P02 in a failed block unless it ends the block.
fn bound(
    portal: &Portal<StatementRef>,
    session: &Session,
) -> Result<(Arc<overtake_sql::Prepared>, Vec<overtake_sql::Datum>), SqlError> {
    if session.block_failed() && !ends_transaction(&portal.statement.statement.ast) {
        return Err(failed_block());
    }
    let plan = portal.statement.statement.plan(session.tables())?;
    if portal.parameters.len() != plan.params.len() {
        return Err(SqlError::new(
            sqlstate::PROTOCOL_VIOLATION,
            format!(
                "bind message supplies {} parameters, but prepared statement requires {}",
                portal.parameters.len(),
                plan.params.len()
            ),
        ));
    }
    let params = plan
        .params
        .iter()
        .enumerate()
        .map(|(i, ty)| {
            let binary = wire::format_of(&portal.parameter_format, i)
                == pgwire::api::results::FieldFormat::Binary;
            wire::decode_param(portal.parameters[i].as_deref(), *ty, binary)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((plan, params))
}

/// A portal's or statement's name as PostgreSQL shows it (the unnamed one's is empty; pgwire
/// stores it under a name of its own).
fn shown(name: &str) -> &str {
    if name == DEFAULT_NAME { "" } else { name }
}

/// PostgreSQL's error for a portal that does not exist (34000).
fn portal_not_found(name: &str) -> PgWireError {
    wire::pg_error(&SqlError::new(
        sqlstate::INVALID_CURSOR_NAME,
        format!("portal \"{}\" does not exist", shown(name)),
    ))
}

/// PostgreSQL's error for a prepared statement that does not exist (26000).
fn statement_not_found(name: &str) -> PgWireError {
    wire::pg_error(&SqlError::new(
        sqlstate::INVALID_SQL_STATEMENT_NAME,
        format!("prepared statement \"{}\" does not exist", shown(name)),
    ))
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

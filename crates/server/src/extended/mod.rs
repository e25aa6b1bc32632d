//! The extended query protocol: statements parsed and planned once (a plan made before a
//! catalog change is made again), bound with parameters in text or binary, described, and
//! executed. Bind, Describe and Execute answers are fed, not flushed: they leave with the one
//! write Sync makes, as PostgreSQL's do. Parse, Bind, Describe, Close and Sync are here; Execute,
//! its deferral to the Sync and cursors read in parts are in `execute`.
//!
//! A statement planned here must never outlive a catalog change unplanned: the plan is made
//! again when the catalog moved on.

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
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, Type};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::data::{NoData, ParameterDescription, RowDescription};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Flush, Parse, ParseComplete,
    Sync as PgSync,
};
use pgwire::messages::response::ReadyForQuery;

use overtake_sql::bind::statement::{ends_transaction, parse, prepare_in};
use overtake_sql::catalog::pending::{Pending, Tables};
use overtake_sql::{SqlError, SqlType, sqlstate};

use crate::connection::{Connection, response, status_of};
use crate::prepared::{Statement, StatementRef};
use crate::session::Shared;
use crate::session::{Session, failed_block};
use crate::wire;

mod execute;

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
        ast: Arc::new(ast),
        declared,
        plan: StdMutex::new(Arc::new(plan)),
    })))
}

/// Plans statements for the extended protocol, over the shared catalog under a block's
/// uncommitted changes (`pending`) if any.
pub struct Planner {
    shared: Arc<Shared>,
    pending: Option<Arc<Pending>>,
    /// The session's role (the system catalogs show it), once the session is known.
    actor: Option<overtake_sql::exec::access::Actor>,
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
        let tables = match &self.actor {
            Some(a) => tables.acting_for(a),
            None => tables,
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
            actor: None,
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
            let session = self.session(client).await.map_err(|e| wire::pg_error(&e))?;
            let pending = session.as_ref().and_then(Session::pending);
            let actor = session.as_ref().map(|s| s.actor().clone());
            drop(session);
            let planner = Arc::new(Planner {
                shared: Arc::clone(&self.shared),
                pending,
                actor,
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
                // A cursor DECLARE made is a portal too (in text; BINARY is refused).
                None => match session.as_ref().and_then(|s| s.cursor_columns(shown(name))) {
                    Some(columns) => {
                        return describe_rows(client, &columns, &Format::UnifiedText).await;
                    }
                    None => return Err(portal_not_found(name)),
                },
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
        // A FETCH gives its cursor's columns, known from the cursor, not the statement.
        let columns = match plan.as_ref().map(|p| (&p.command, p)) {
            Some((overtake_sql::Command::Fetch(f), _)) if !f.moves => session
                .as_ref()
                .and_then(|s| s.cursor_columns(&f.name))
                .unwrap_or_default(),
            // EXECUTE gives the rows of the statement PREPARE named.
            Some((overtake_sql::Command::Execute { name, .. }, _)) => session
                .as_ref()
                .and_then(|s| s.named_columns(name))
                .unwrap_or_default(),
            // COPY's data is no rows: PostgreSQL describes it as NoData.
            Some((overtake_sql::Command::CopyOut(..), _)) => Vec::new(),
            Some((_, p)) => p.columns.clone(),
            None => Vec::new(),
        };
        describe_rows(client, &columns, &format).await
    }
}

/// Describes rows of `columns` sent in `format` (NoData if there are none).
async fn describe_rows<C>(
    client: &mut C,
    columns: &[overtake_sql::plan::OutputColumn],
    format: &Format,
) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if columns.is_empty() {
        client
            .feed(PgWireBackendMessage::NoData(NoData::new()))
            .await?;
        return Ok(());
    }
    let fields = wire::fields(columns, format);
    client
        .feed(PgWireBackendMessage::RowDescription(RowDescription::new(
            fields.iter().map(Into::into).collect(),
        )))
        .await?;
    Ok(())
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

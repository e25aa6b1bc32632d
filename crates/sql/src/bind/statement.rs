//! From SQL text to plans: each kind of statement bound (the parsing is `parse`'s, re-exported
//! here; DDL and privileges are `ddl`'s).

use sqlparser::ast::{
    self, AlterTableOperation, CopyTarget, ResetStatement, SetConfigValue, Statement,
    TableConstraint, TransactionIsolationLevel, TransactionMode,
};

pub use super::parse::{Ast, MAX_STATEMENT_LEN, parse};

use super::ddl::{
    added_column, column_default, create_table, grant_on, grantees, index_columns,
    sequence_options as sequence_options_of, table_grantees, table_privileges,
};
use crate::bind::analyze::analyzed;
use crate::bind::constraint::{plain_key, plain_unique};
use crate::bind::role_statement as roles;
use crate::bind::{Binder, ident, object_name};
use crate::catalog::pending::Tables;
use crate::catalog::{Catalog, RelKind};
use crate::error::{Result, SqlError};
use crate::plan::{
    ColumnChange, Command, Ddl, IndexKind, IsolationLevel, OutputColumn, Prepared, Query,
    RoleCommand, TxnModes,
};
use crate::sequence::Sequence;
use crate::values::types::SqlType;

/// Whether `stmt` ends a transaction block (COMMIT, ROLLBACK): the only statements a failed
/// block accepts.
pub fn ends_transaction(stmt: &Statement) -> bool {
    matches!(stmt, Statement::Commit { .. } | Statement::Rollback { .. })
}

/// Plans `stmt` against the shared catalog; `declared` gives the types a client declared for its
/// parameters (`None`: infer).
pub fn prepare(
    catalog: &Catalog,
    stmt: &Statement,
    declared: &[Option<SqlType>],
) -> Result<Prepared> {
    prepare_in(Tables::shared(catalog), stmt, declared)
}

/// Plans `stmt` against the catalog as `tables` shows it (a block's uncommitted changes over
/// the shared catalog).
pub fn prepare_in(
    tables: Tables<'_>,
    stmt: &Statement,
    declared: &[Option<SqlType>],
) -> Result<Prepared> {
    let catalog = tables.catalog;
    let version = catalog.version();
    let mut b = Binder::new(tables, declared);
    let mut columns = Vec::new();
    let command = match stmt {
        Statement::Query(q) => {
            let (plan, cols) = b.select(q)?;
            columns = cols;
            Command::Query(Box::new(Query::Select(plan)))
        }
        Statement::Insert(insert) => {
            let (plan, cols) = b.insert(insert)?;
            columns = cols;
            Command::Query(Box::new(Query::Insert(plan)))
        }
        Statement::Update(update) => {
            let (plan, cols) = b.update(update)?;
            columns = cols;
            Command::Query(Box::new(Query::Update(plan)))
        }
        Statement::Delete(delete) => {
            let (plan, cols) = b.delete(delete)?;
            columns = cols;
            Command::Query(Box::new(Query::Delete(plan)))
        }
        Statement::CreateTable(ct) => Command::Ddl(create_table(tables, ct)?),
        Statement::CreateSequence {
            temporary: false,
            if_not_exists,
            name,
            sequence_options,
        } => {
            let options = sequence_options_of(SqlType::Int8, sequence_options)?;
            let sequence = Sequence::new(object_name(name)?, options);
            Command::Ddl(Ddl::CreateSequence {
                sequence: std::sync::Arc::new(sequence),
                if_not_exists: *if_not_exists,
            })
        }
        Statement::CreateRole(role) => Command::Role(roles::create(role)?),
        Statement::AlterRole {
            name,
            operation: ast::AlterRoleOperation::WithOptions { options },
        } => Command::Role(roles::alter(ident(name), options)?),
        Statement::Drop {
            object_type: ast::ObjectType::Role | ast::ObjectType::User,
            if_exists,
            names,
            ..
        } => Command::Role(RoleCommand::Drop {
            names: names.iter().map(object_name).collect::<Result<_>>()?,
            if_exists: *if_exists,
        }),
        Statement::Drop {
            object_type:
                object_type @ (ast::ObjectType::Table
                | ast::ObjectType::Sequence
                | ast::ObjectType::View),
            if_exists,
            names,
            cascade,
            ..
        } => Command::Ddl(Ddl::DropTable {
            names: names.iter().map(object_name).collect::<Result<_>>()?,
            if_exists: *if_exists,
            kind: match object_type {
                ast::ObjectType::Sequence => RelKind::Sequence,
                ast::ObjectType::View => RelKind::View,
                _ => RelKind::Table,
            },
            cascade: *cascade,
        }),
        Statement::CreateView(cv) => Command::Ddl(super::view::create(tables, cv)?),
        Statement::Drop {
            object_type: ast::ObjectType::Index,
            if_exists,
            names,
            cascade: false,
            ..
        } => Command::Ddl(Ddl::DropIndex {
            names: names.iter().map(object_name).collect::<Result<_>>()?,
            if_exists: *if_exists,
        }),
        Statement::Truncate(t) => Command::Ddl(Ddl::Truncate {
            names: t
                .table_names
                .iter()
                .map(|t| object_name(&t.name))
                .collect::<Result<_>>()?,
            cascade: t.cascade == Some(ast::CascadeOption::Cascade),
        }),
        // Several actions: each bound alone, run in order as one statement.
        Statement::AlterTable(at) if at.operations.len() > 1 => {
            let mut steps = Vec::with_capacity(at.operations.len());
            for op in &at.operations {
                // PostgreSQL's grammar takes a RENAME only as the one action.
                if matches!(
                    op,
                    AlterTableOperation::RenameColumn { .. }
                        | AlterTableOperation::RenameTable { .. }
                        | AlterTableOperation::RenameConstraint { .. }
                ) {
                    return Err(SqlError::syntax("syntax error at or near \"rename\""));
                }
                let one = Statement::AlterTable(ast::AlterTable {
                    operations: vec![op.clone()],
                    ..at.clone()
                });
                match prepare_in(tables, &one, declared)?.command {
                    Command::Ddl(d) => steps.push(d),
                    _ => return Err(SqlError::unsupported(format!("{stmt}"))),
                }
            }
            Command::Ddl(Ddl::Steps(steps))
        }
        Statement::AlterTable(at) => {
            let table = object_name(&at.name)?;
            match at.operations.as_slice() {
                [
                    AlterTableOperation::AddConstraint {
                        constraint: TableConstraint::PrimaryKey(pk),
                        ..
                    },
                ] => {
                    plain_key(pk.characteristics.as_ref(), &pk.include)?;
                    Command::Ddl(Ddl::AddPrimaryKey {
                        table,
                        columns: index_columns(&pk.columns)?,
                    })
                }
                [
                    AlterTableOperation::AddConstraint {
                        constraint: TableConstraint::Unique(u),
                        ..
                    },
                ] => {
                    plain_unique(u)?;
                    Command::Ddl(Ddl::CreateIndex {
                        name: u.name.as_ref().map(ident),
                        table,
                        columns: index_columns(&u.columns)?,
                        if_not_exists: false,
                        kind: IndexKind::UniqueConstraint,
                    })
                }
                [
                    AlterTableOperation::AddConstraint {
                        constraint: TableConstraint::ForeignKey(fk),
                        ..
                    },
                ] => Command::Ddl(Ddl::AddForeignKey {
                    table,
                    foreign_key: crate::bind::constraint::foreign_key(
                        fk,
                        None,
                        fk.columns.iter().map(ident).collect(),
                    )?,
                }),
                [
                    AlterTableOperation::DropConstraint {
                        if_exists,
                        name,
                        drop_behavior: None | Some(ast::DropBehavior::Restrict),
                    },
                ] => Command::Ddl(Ddl::DropConstraint {
                    table,
                    name: ident(name),
                    if_exists: *if_exists,
                }),
                [
                    AlterTableOperation::AddColumn {
                        if_not_exists,
                        column_def,
                        column_position: None,
                        ..
                    },
                ] => Command::Ddl(Ddl::AlterColumn {
                    table,
                    change: ColumnChange::Add {
                        column: added_column(tables, column_def)?,
                        if_not_exists: *if_not_exists,
                    },
                }),
                [
                    AlterTableOperation::DropColumn {
                        column_names,
                        if_exists,
                        drop_behavior: None | Some(ast::DropBehavior::Restrict),
                        ..
                    },
                ] if column_names.len() == 1 => Command::Ddl(Ddl::AlterColumn {
                    table,
                    change: ColumnChange::Drop {
                        name: ident(&column_names[0]),
                        if_exists: *if_exists,
                    },
                }),
                [
                    AlterTableOperation::RenameColumn {
                        old_column_name,
                        new_column_name,
                    },
                ] => Command::Ddl(Ddl::AlterColumn {
                    table,
                    change: ColumnChange::Rename {
                        from: ident(old_column_name),
                        to: ident(new_column_name),
                    },
                }),
                [AlterTableOperation::AlterColumn { column_name, op }] => {
                    let name = ident(column_name);
                    let change = match op {
                        ast::AlterColumnOperation::SetNotNull => ColumnChange::Nullable {
                            name,
                            nullable: false,
                        },
                        ast::AlterColumnOperation::DropNotNull => ColumnChange::Nullable {
                            name,
                            nullable: true,
                        },
                        ast::AlterColumnOperation::SetDefault { value } => ColumnChange::Default {
                            name,
                            default: Some(column_default(tables, value)?),
                        },
                        ast::AlterColumnOperation::DropDefault => ColumnChange::Default {
                            name,
                            default: None,
                        },
                        ast::AlterColumnOperation::SetDataType {
                            data_type, using, ..
                        } => ColumnChange::Type {
                            name,
                            ty: crate::bind::ddl::altered_type(data_type)?,
                            using: using.clone().map(Box::new),
                        },
                        other => {
                            return Err(SqlError::unsupported(format!("ALTER COLUMN ... {other}")));
                        }
                    };
                    Command::Ddl(Ddl::AlterColumn { table, change })
                }
                [AlterTableOperation::OwnerTo { new_owner }] => Command::Ddl(Ddl::SetOwner {
                    table,
                    owner: match new_owner {
                        ast::Owner::Ident(name) => ident(name),
                        _ => return Err(SqlError::unsupported(format!("OWNER TO {new_owner}"))),
                    },
                }),
                _ => return Err(SqlError::unsupported(format!("{stmt}"))),
            }
        }
        Statement::CreateIndex(ci) => {
            if ci.predicate.is_some() {
                return Err(SqlError::unsupported("a partial index"));
            }
            if ci.nulls_distinct == Some(false) {
                return Err(SqlError::unsupported("UNIQUE NULLS NOT DISTINCT"));
            }
            plain_key(None, &ci.include)?;
            Command::Ddl(Ddl::CreateIndex {
                name: ci.name.as_ref().map(object_name).transpose()?,
                table: object_name(&ci.table_name)?,
                columns: index_columns(&ci.columns)?,
                if_not_exists: ci.if_not_exists,
                kind: if ci.unique {
                    IndexKind::Unique
                } else {
                    IndexKind::Plain
                },
            })
        }
        Statement::Copy {
            source,
            to: false,
            target: CopyTarget::Stdin,
            options,
            legacy_options,
            ..
        } => Command::CopyIn(b.copy_in(source, options, legacy_options)?),
        Statement::Copy {
            source,
            to: true,
            target: CopyTarget::Stdout,
            options,
            legacy_options,
            ..
        } => {
            let options = crate::bind::dml::copy_options(options, legacy_options)?;
            // The rows of a table are those of a query that selects them.
            let query = match source {
                ast::CopySource::Query(q) => Statement::Query(q.clone()),
                ast::CopySource::Table {
                    table_name,
                    columns,
                } => {
                    let list = match columns.as_slice() {
                        [] => "*".to_owned(),
                        some => some
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", "),
                    };
                    let mut parsed =
                        crate::bind::parse::parse(&format!("SELECT {list} FROM {table_name}"))?;
                    parsed.remove(0).into_statement()
                }
            };
            let inner = prepare_in(tables, &query, declared)?;
            let Command::Query(q) = inner.command else {
                return Err(SqlError::syntax("COPY query must be a SELECT"));
            };
            return Ok(Prepared {
                command: Command::CopyOut(q, options),
                columns: inner.columns,
                point_read: false,
                ..inner
            });
        }
        Statement::Copy { .. } => {
            return Err(SqlError::unsupported(
                "COPY to or from a file or program (use STDIN or STDOUT)",
            ));
        }
        Statement::StartTransaction { modes: m, .. } => Command::Begin(modes(m)),
        Statement::Commit { chain: false, .. } => Command::Commit,
        Statement::Rollback {
            chain: false,
            savepoint: None,
        } => Command::Rollback,
        Statement::Rollback {
            chain: false,
            savepoint: Some(name),
        } => Command::RollbackTo(ident(name)),
        Statement::Savepoint { name } => Command::Savepoint(ident(name)),
        Statement::ReleaseSavepoint { name } => Command::Release(ident(name)),
        Statement::Set(set) => set_command(set)?,
        Statement::ShowVariable { variable } => {
            let name = variable.iter().map(ident).collect::<Vec<_>>().join(" ");
            // The SQL standard's spellings of some settings (PostgreSQL shows them so).
            let name = match name.as_str() {
                "transaction isolation level" => "transaction_isolation".to_owned(),
                "time zone" => "timezone".to_owned(),
                "session authorization" => "session_authorization".to_owned(),
                _ => name,
            };
            let text = |name: &str| OutputColumn {
                name: name.to_owned(),
                ty: SqlType::Text,
            };
            columns = if name == "all" {
                vec![text("name"), text("setting")]
            } else {
                vec![text(&name)]
            };
            Command::Show(name)
        }
        Statement::Reset(ResetStatement { reset }) => Command::Reset(match reset {
            ast::Reset::ALL => "all".into(),
            ast::Reset::ConfigurationParameter(name) => object_name(name)?,
            ast::Reset::SessionAuthorization => {
                return Err(SqlError::unsupported("RESET SESSION AUTHORIZATION"));
            }
        }),
        Statement::AlterRole {
            name,
            operation:
                ast::AlterRoleOperation::Set {
                    config_name,
                    config_value,
                    in_database: None,
                },
        } => Command::AlterRoleSet {
            role: ident(name),
            name: object_name(config_name)?,
            value: match config_value {
                SetConfigValue::Value(e) => Some(setting_value(e)?),
                _ => None,
            },
        },
        Statement::AlterRole {
            name,
            operation:
                ast::AlterRoleOperation::Reset {
                    config_name,
                    in_database: None,
                },
        } => Command::AlterRoleSet {
            role: ident(name),
            name: match config_name {
                ast::ResetConfig::ConfigName(n) => object_name(n)?,
                ast::ResetConfig::ALL => "all".into(),
            },
            value: None,
        },
        Statement::Grant(g) if !g.with_grant_option && g.granted_by.is_none() => {
            Command::Ddl(Ddl::Grant {
                privileges: table_privileges(&g.privileges)?,
                on: grant_on(g.objects.as_ref())?,
                grantees: table_grantees(&g.grantees)?,
                revoke: false,
            })
        }
        Statement::Revoke(r) if !r.grant_option_for && r.granted_by.is_none() => {
            Command::Ddl(Ddl::Grant {
                privileges: table_privileges(&r.privileges)?,
                on: grant_on(r.objects.as_ref())?,
                grantees: table_grantees(&r.grantees)?,
                revoke: true,
            })
        }
        Statement::GrantRole(g) => Command::GrantRole {
            roles: g.roles.iter().map(ident).collect(),
            grantees: grantees(&g.grantees)?,
            revoke: false,
        },
        Statement::RevokeRole(r) => Command::GrantRole {
            roles: r.roles.iter().map(ident).collect(),
            grantees: grantees(&r.grantees)?,
            revoke: true,
        },
        // No session listens (LISTEN is not offered): unlistening has nothing to do.
        Statement::Close { cursor } => Command::CloseCursor(match cursor {
            ast::CloseCursor::All => None,
            ast::CloseCursor::Specific { name } => Some(ident(name)),
        }),
        Statement::Fetch {
            name,
            direction,
            position,
            into: None,
        } => Command::Fetch(crate::plan::CursorFetch {
            name: ident(name),
            direction: fetch_direction(direction)?,
            // See `parse::cursor_statements`: IN marks a MOVE.
            moves: matches!(position, ast::FetchPosition::In),
        }),
        Statement::Declare { stmts, .. } if stmts.len() == 1 => {
            let d = &stmts[0];
            let (Some(query), [name]) = (&d.for_query, d.names.as_slice()) else {
                return Err(SqlError::unsupported("DECLARE of a variable"));
            };
            // A cursor reads: PostgreSQL's grammar takes no INSERT, UPDATE or DELETE here.
            if let ast::SetExpr::Insert(w) | ast::SetExpr::Update(w) | ast::SetExpr::Delete(w) =
                &*query.body
            {
                let word = w.to_string();
                let word = word.split_whitespace().next().unwrap_or_default();
                return Err(SqlError::syntax(format!(
                    "syntax error at or near \"{}\"",
                    word.to_lowercase()
                )));
            }
            let refused = [
                (d.scroll == Some(true), "SCROLL"),
                (d.binary == Some(true), "BINARY"),
            ];
            if let Some((_, what)) = refused.iter().find(|(r, _)| *r) {
                return Err(SqlError::unsupported(format!("DECLARE ... {what}")));
            }
            // Copied with care: the parser may have built it deeper than copying may recurse.
            let query = Ast::copy_of_query(query)?;
            let inner = prepare_in(tables, &query, declared)?;
            let params = inner.params.clone();
            let command = Command::Declare {
                name: ident(name),
                query: std::sync::Arc::new(inner),
                hold: d.hold == Some(true),
            };
            return Ok(around(command, params, tables, version));
        }
        Statement::UNLISTEN { .. } => Command::Noop("UNLISTEN"),
        Statement::Vacuum(_) => Command::Noop("VACUUM"),
        Statement::Analyze(a) => Command::Query(Box::new(Query::Analyze(analyzed(tables, a)?))),
        Statement::Discard { object_type } => match object_type {
            ast::DiscardObject::ALL => Command::DiscardAll,
            // No cached plans to forget (a plan is made again when the catalog changes), no
            // temporary tables or sequences.
            ast::DiscardObject::PLANS => Command::Noop("DISCARD PLANS"),
            ast::DiscardObject::SEQUENCES => Command::Noop("DISCARD SEQUENCES"),
            ast::DiscardObject::TEMP => Command::Noop("DISCARD TEMP"),
        },
        Statement::Prepare { .. } => {
            let (name, statement, declared) = super::prepare::prepared(stmt)?;
            // Planned once: its errors are PREPARE's, as in PostgreSQL.
            prepare_in(tables, statement, &declared)?;
            Command::Prepare {
                name,
                statement: std::sync::Arc::new(Ast::copy_of(statement)?),
                declared,
            }
        }
        Statement::Execute { .. } => {
            let (name, arguments, untyped) = super::prepare::executed(stmt)?;
            let arguments = match arguments {
                Some(select) => Some(prepare_in(tables, &select, declared)?),
                None => None,
            };
            let params = arguments
                .as_ref()
                .map_or_else(Vec::new, |a| a.params.clone());
            let command = Command::Execute {
                name,
                arguments: arguments.map(std::sync::Arc::new),
                untyped,
            };
            return Ok(around(command, params, tables, version));
        }
        // `ALL` is a keyword; `"ALL"` names a statement.
        Statement::Deallocate { name, .. } => Command::Deallocate(
            (name.quote_style.is_some() || !name.value.eq_ignore_ascii_case("all"))
                .then(|| ident(name)),
        ),
        Statement::Explain {
            statement,
            analyze: false,
            options,
            ..
        } => {
            let mut explained = crate::plan::explain::ExplainOptions::default();
            for o in options.iter().flatten() {
                if o.name.value.eq_ignore_ascii_case("costs") {
                    explained.costs = explain_flag(o.arg.as_ref())?;
                }
            }
            let inner = prepare_in(tables, statement, declared)?;
            columns = vec![OutputColumn {
                name: "QUERY PLAN".into(),
                ty: SqlType::Text,
            }];
            return Ok(Prepared {
                command: Command::Explain(
                    crate::plan::explain::explain(&inner.command, explained),
                    Box::new(inner.command),
                ),
                params: inner.params,
                columns,
                version,
                pending: tables.is_pending(),
                point_read: false,
                reads_settings: inner.reads_settings,
                uses_sequences: inner.uses_sequences,
            });
        }
        other => {
            return Err(SqlError::unsupported(format!(
                "statement {}",
                first_words(other)
            )));
        }
    };
    // An error computing a constant part, reported after every error of analysis.
    if let Some(e) = b.fold_error.take() {
        return Err(e);
    }
    let mut command = command;
    if !b.init.is_empty() {
        match &mut command {
            Command::Query(q) => q.set_init(std::mem::take(&mut b.init)),
            _ => return Err(SqlError::unsupported("a subquery in this statement")),
        }
    }
    if let Command::Query(q) = &mut command
        && let Query::Select(plan) = &mut **q
    {
        crate::plan::columns::prune(plan);
    }
    let point_read = matches!(&command, Command::Query(q) if q.is_point_read());
    Ok(Prepared {
        command,
        params: b.param_types(),
        columns,
        version,
        pending: tables.is_pending() || b.volatile,
        point_read,
        reads_settings: b.reads_settings,
        uses_sequences: b.uses_sequences,
    })
}

/// A statement around a query planned on its own (DECLARE's, EXECUTE's arguments): it takes
/// that query's parameters and gives no rows of its own (the session runs the query).
fn around(command: Command, params: Vec<SqlType>, tables: Tables<'_>, version: u64) -> Prepared {
    Prepared {
        command,
        params,
        columns: Vec::new(),
        version,
        pending: tables.is_pending(),
        point_read: false,
        reads_settings: false,
        uses_sequences: false,
    }
}

fn first_words(stmt: &Statement) -> String {
    stmt.to_string()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn modes(modes: &[TransactionMode]) -> TxnModes {
    let mut named = TxnModes::default();
    for m in modes {
        match m {
            TransactionMode::IsolationLevel(l) => {
                named.level = Some(match l {
                    TransactionIsolationLevel::ReadUncommitted
                    | TransactionIsolationLevel::ReadCommitted => IsolationLevel::ReadCommitted,
                    TransactionIsolationLevel::RepeatableRead
                    | TransactionIsolationLevel::Snapshot => IsolationLevel::RepeatableRead,
                    TransactionIsolationLevel::Serializable => IsolationLevel::Serializable,
                });
            }
            TransactionMode::AccessMode(a) => {
                named.read_only = Some(*a == ast::TransactionAccessMode::ReadOnly);
            }
        }
    }
    named
}

/// A setting's value as text: `high`, `'high'`, `5`, `DEFAULT` is `None` elsewhere.
fn setting_value(e: &ast::Expr) -> Result<String> {
    Ok(match e {
        ast::Expr::Identifier(id) => id.value.clone(),
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s.clone(),
            ast::Value::Number(n, _) => n.clone(),
            ast::Value::Boolean(b) => b.to_string(),
            other => other.to_string(),
        },
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => format!("-{}", setting_value(expr)?),
        other => other.to_string(),
    })
}

fn set_command(set: &ast::Set) -> Result<Command> {
    Ok(match set {
        ast::Set::SingleAssignment {
            scope,
            variable,
            values,
            ..
        } => {
            let name = object_name(variable)?;
            let value = match values.as_slice() {
                [ast::Expr::Identifier(id)] if id.value.eq_ignore_ascii_case("default") => None,
                [v] => Some(setting_value(v)?),
                vs => Some(
                    vs.iter()
                        .map(setting_value)
                        .collect::<Result<Vec<_>>>()?
                        .join(", "),
                ),
            };
            Command::Set {
                name,
                value,
                local: matches!(scope, Some(ast::ContextModifier::Local)),
            }
        }
        ast::Set::SetTransaction {
            modes: m, session, ..
        } => Command::SetTransaction {
            modes: modes(m),
            session: *session,
        },
        ast::Set::SetTimeZone { .. } | ast::Set::SetNames { .. } => Command::Noop("SET"),
        other => return Err(SqlError::unsupported(format!("{other}"))),
    })
}

/// A FETCH's direction as `parse::cursor_statements` spells it.
fn fetch_direction(d: &ast::FetchDirection) -> Result<crate::plan::FetchDirection> {
    use crate::plan::FetchDirection as F;
    use ast::FetchDirection as D;
    let count = |v: &ast::ValueWithSpan| match &v.value {
        ast::Value::Number(n, _) => n
            .parse::<i64>()
            .map_err(|_| SqlError::syntax(format!("syntax error at or near \"{n}\""))),
        other => Err(SqlError::syntax(format!(
            "syntax error at or near \"{other}\""
        ))),
    };
    // A count forward, or back when negative.
    let forward = |n: i64| match u64::try_from(n) {
        Ok(0) => F::Relative(0),
        Ok(n) => F::Forward(Some(n)),
        Err(_) => F::Backward,
    };
    Ok(match d {
        D::Next => F::Forward(Some(1)),
        D::Count { limit } | D::Forward { limit: Some(limit) } => forward(count(limit)?),
        D::Forward { limit: None } => F::Forward(Some(1)),
        D::All | D::ForwardAll => F::Forward(None),
        D::Prior | D::Backward { .. } | D::BackwardAll => F::Backward,
        D::First => F::Absolute(1),
        D::Last => F::Last,
        D::Absolute { limit } => match count(limit)? {
            -1 => F::Last,
            n => u64::try_from(n).map_or(F::Backward, F::Absolute),
        },
        D::Relative { limit } => u64::try_from(count(limit)?).map_or(F::Backward, F::Relative),
    })
}

/// A Boolean EXPLAIN option's value, as PostgreSQL reads it: none (true), `true`/`false`,
/// `on`/`off`, `1`/`0`.
fn explain_flag(arg: Option<&ast::Expr>) -> Result<bool> {
    let Some(arg) = arg else {
        return Ok(true);
    };
    let word = match arg {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Boolean(b) => return Ok(*b),
            ast::Value::Number(n, _) => n.clone(),
            ast::Value::SingleQuotedString(s) => s.clone(),
            _ => String::new(),
        },
        ast::Expr::Identifier(id) => id.value.clone(),
        _ => String::new(),
    };
    match word.to_ascii_lowercase().as_str() {
        "true" | "on" | "1" => Ok(true),
        "false" | "off" | "0" => Ok(false),
        _ => Err(SqlError::new(
            crate::sqlstate::SYNTAX_ERROR,
            "costs requires a Boolean value",
        )),
    }
}

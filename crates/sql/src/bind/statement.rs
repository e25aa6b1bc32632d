//! From SQL text to plans: parsing (PostgreSQL dialect) and binding each kind of statement.

use std::ops::ControlFlow;

use sqlparser::ast::{
    self, AlterTableOperation, ColumnOption, CopyTarget, ResetStatement, SetConfigValue, Statement,
    TableConstraint, TransactionIsolationLevel, TransactionMode, VisitMut, VisitorMut,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use crate::bind::role_statement as roles;
use crate::bind::{Binder, ident, object_name};
use crate::catalog::acl::{Grantee, Privileges};
use crate::catalog::pending::Tables;
use crate::catalog::{Catalog, ColumnDefault, SqlColumn};
use crate::error::{Result, SqlError, sqlstate};
use crate::plan::{
    Command, Ddl, GrantOn, IsolationLevel, OutputColumn, Prepared, Query, RoleCommand, TxnModes,
};
use crate::values::types::SqlType;

/// A parsed statement (sqlparser's syntax tree), kept to plan again after a catalog change.
///
/// The parser builds a chain of operators written one after another (`1::int::int...`,
/// `a + b + ...`, `x IS NULL IS NULL ...`) as a tree as deep as the chain is long, without
/// recursing itself; dropping such a tree recursively could overflow the stack. An `Ast` is
/// taken apart iteratively when dropped, so that dropping any statement the parser accepted is
/// safe; binding it refuses what is too deep (see `depth`).
#[derive(Debug)]
pub struct Ast(Statement);

impl std::ops::Deref for Ast {
    type Target = Statement;

    fn deref(&self) -> &Statement {
        &self.0
    }
}

impl Drop for Ast {
    fn drop(&mut self) {
        let mut detached = Detach(Vec::new());
        let _ = self.0.visit(&mut detached);
        while let Some(mut e) = detached.0.pop() {
            // Its chain links go to the list before the visitor descends: each drop is shallow.
            let _ = e.visit(&mut detached);
        }
    }
}

/// Takes the operands of chain-building operators out of every expression it visits (before
/// descending into it), leaving NULLs in their place.
struct Detach(Vec<ast::Expr>);

impl VisitorMut for Detach {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
        use ast::Expr as E;
        let mut take = |b: &mut Box<ast::Expr>| {
            let null = E::Value(ast::Value::Null.into());
            self.0.push(std::mem::replace(&mut **b, null));
        };
        match e {
            E::BinaryOp { left, right, .. }
            | E::IsDistinctFrom(left, right)
            | E::IsNotDistinctFrom(left, right)
            | E::AnyOp { left, right, .. }
            | E::AllOp { left, right, .. } => {
                take(left);
                take(right);
            }
            E::Like { expr, pattern, .. }
            | E::ILike { expr, pattern, .. }
            | E::SimilarTo { expr, pattern, .. }
            | E::RLike { expr, pattern, .. } => {
                take(expr);
                take(pattern);
            }
            E::Between {
                expr, low, high, ..
            } => {
                take(expr);
                take(low);
                take(high);
            }
            E::IsFalse(x)
            | E::IsNotFalse(x)
            | E::IsTrue(x)
            | E::IsNotTrue(x)
            | E::IsNull(x)
            | E::IsNotNull(x)
            | E::IsUnknown(x)
            | E::IsNotUnknown(x)
            | E::Nested(x)
            | E::UnaryOp { expr: x, .. }
            | E::Cast { expr: x, .. }
            | E::Collate { expr: x, .. }
            | E::In { expr: x, .. }
            | E::AtTimeZone { timestamp: x, .. }
            | E::CompoundFieldAccess { root: x, .. }
            | E::JsonAccess { value: x, .. } => take(x),
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

/// Longest statement text accepted (bytes): a bound on what one message can make the server
/// parse and hold.
pub const MAX_STATEMENT_LEN: usize = 1 << 20;

/// Parses SQL text into statements.
pub fn parse(sql: &str) -> Result<Vec<Ast>> {
    if sql.len() > MAX_STATEMENT_LEN {
        return Err(SqlError::new(
            sqlstate::PROGRAM_LIMIT_EXCEEDED,
            format!(
                "statement of {} bytes is longer than the limit of {MAX_STATEMENT_LEN}",
                sql.len()
            ),
        ));
    }
    if let Some(copy) = parse_copy(sql) {
        return copy.map(|s| vec![s]);
    }
    // sqlparser reads `CREATE USER` as Snowflake's (options as `key = value`); PostgreSQL's is
    // CREATE ROLE with LOGIN by default, and is read as that.
    if let Some((rewritten, users)) = create_users_as_roles(sql) {
        let mut statements = parse_sql(&rewritten)?;
        for i in users {
            if let Some(Ast(Statement::CreateRole(role))) = statements.get_mut(i) {
                role.login.get_or_insert(true);
            }
        }
        return Ok(statements);
    }
    // VACUUM's many forms do nothing here (versions are reclaimed as they age), and the parser
    // knows few of them: any VACUUM is a plain one.
    let words: Vec<String> = sql
        .split_whitespace()
        .take(1)
        .map(str::to_ascii_lowercase)
        .collect();
    if words
        .first()
        .is_some_and(|w| w.trim_end_matches(';') == "vacuum")
        && !sql.trim_end().trim_end_matches(';').contains(';')
    {
        return parse_sql("VACUUM");
    }
    parse_sql(sql)
}

/// `sql` with each statement's leading `CREATE USER` spelt `CREATE ROLE`, and which statements
/// (by position) were one; `None` if there is none.
fn create_users_as_roles(sql: &str) -> Option<(String, Vec<usize>)> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    // Most statements name no user: they skip the second tokenization (without copying the
    // text to look).
    if !sql
        .as_bytes()
        .windows(4)
        .any(|w| w.eq_ignore_ascii_case(b"user"))
    {
        return None;
    }
    let mut tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    // Positions of the tokens that are not whitespace, and each statement's first of them
    // (statements are counted as the parser counts them: empty ones between semicolons are
    // none).
    let solid: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i], Token::Whitespace(_)))
        .collect();
    let mut users = Vec::new();
    let mut statement = 0;
    let mut at_start = true;
    for (n, &i) in solid.iter().enumerate() {
        if tokens[i] == Token::SemiColon {
            if !at_start {
                statement += 1;
            }
            at_start = true;
            continue;
        }
        if at_start
            && word(&tokens[i], "create")
            && solid.get(n + 1).is_some_and(|&u| word(&tokens[u], "user"))
            && !solid
                .get(n + 2)
                .is_some_and(|&m| word(&tokens[m], "mapping"))
        {
            let u = solid[n + 1];
            tokens[u] = Token::make_keyword("ROLE");
            users.push(statement);
        }
        at_start = false;
    }
    if users.is_empty() {
        return None;
    }
    Some((tokens.iter().map(ToString::to_string).collect(), users))
}

/// How deeply the parser may recurse: nested parentheses, subqueries, function calls. Its
/// recursion grows its own stack as it goes (sqlparser's `recursive-protection`), so this only
/// matches what PostgreSQL's parser takes (5,000 nested parentheses, not 10,000).
const PARSER_DEPTH: usize = 10_000;

fn parse_sql(sql: &str) -> Result<Vec<Ast>> {
    Parser::new(&PostgreSqlDialect {})
        .with_recursion_limit(PARSER_DEPTH)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_statements())
        .map(|v| v.into_iter().map(Ast).collect())
        .map_err(|e| {
            if matches!(e, sqlparser::parser::ParserError::RecursionLimitExceeded) {
                return crate::depth::too_deep();
            }
            SqlError::syntax(
                e.to_string()
                    .trim_start_matches("sql parser error: ")
                    .to_owned(),
            )
        })
}

/// `COPY table [(columns)] FROM STDIN [[WITH] (option [value], ...)]`, read here because
/// PostgreSQL's options take values (`freeze on`) the parser does not accept. `None` if `sql`
/// is not such a statement.
fn parse_copy(sql: &str) -> Option<Result<Ast>> {
    let text = sql.trim().trim_end_matches(';').trim();
    let lower = text.to_ascii_lowercase();
    if !lower.starts_with("copy") {
        return None;
    }
    let at = lower.find(" from stdin")?;
    let head = &text[..at + " from stdin".len()];
    let rest = lower[at + " from stdin".len()..].trim();
    let rest = rest.strip_prefix("with").unwrap_or(rest).trim();
    let options = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(rest);
    for option in options.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        let mut words = option.split_whitespace();
        let name = words.next().unwrap_or_default();
        let value = words.next().unwrap_or("true").trim_matches('\'');
        let ok = match name {
            "freeze" => ["true", "on", "1", "false", "off", "0"].contains(&value),
            "format" => value == "text",
            _ => false,
        };
        if !ok || words.next().is_some() {
            return Some(Err(SqlError::unsupported(format!("COPY option {option}"))));
        }
    }
    Some(parse_sql(head).and_then(|mut v| match v.len() {
        1 => Ok(v.remove(0)),
        _ => Err(SqlError::syntax("one COPY statement expected")),
    }))
}

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
        Statement::Insert(insert) => Command::Query(Box::new(Query::Insert(b.insert(insert)?))),
        Statement::Update(update) => Command::Query(Box::new(Query::Update(b.update(update)?))),
        Statement::Delete(delete) => Command::Query(Box::new(Query::Delete(b.delete(delete)?))),
        Statement::CreateTable(ct) => Command::Ddl(create_table(catalog, ct)?),
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
            object_type: ast::ObjectType::Table,
            if_exists,
            names,
            ..
        } => Command::Ddl(Ddl::DropTable {
            names: names.iter().map(object_name).collect::<Result<_>>()?,
            if_exists: *if_exists,
        }),
        Statement::Truncate(t) => Command::Ddl(Ddl::Truncate(
            t.table_names
                .iter()
                .map(|t| object_name(&t.name))
                .collect::<Result<_>>()?,
        )),
        Statement::AlterTable(at) => {
            let table = object_name(&at.name)?;
            match at.operations.as_slice() {
                [
                    AlterTableOperation::AddConstraint {
                        constraint: TableConstraint::PrimaryKey(pk),
                        ..
                    },
                ] => Command::Ddl(Ddl::AddPrimaryKey {
                    table,
                    columns: index_columns(&pk.columns)?,
                }),
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
            if ci.unique || ci.predicate.is_some() {
                return Err(SqlError::unsupported("a unique or partial index"));
            }
            let table = object_name(&ci.table_name)?;
            let name = match &ci.name {
                Some(n) => object_name(n)?,
                None => format!("{table}_idx"),
            };
            Command::Ddl(Ddl::CreateIndex {
                name,
                table,
                columns: index_columns(&ci.columns)?,
                if_not_exists: ci.if_not_exists,
            })
        }
        Statement::Copy {
            source,
            to: false,
            target: CopyTarget::Stdin,
            options,
            legacy_options,
            ..
        } if legacy_options.is_empty() => Command::CopyIn(b.copy_in(source, options)?),
        Statement::Copy { .. } => return Err(SqlError::unsupported("COPY other than FROM STDIN")),
        Statement::StartTransaction { modes: m, .. } => Command::Begin(modes(m)),
        Statement::Commit { chain: false, .. } => Command::Commit,
        Statement::Rollback {
            chain: false,
            savepoint: None,
        } => Command::Rollback,
        Statement::Set(set) => set_command(set)?,
        Statement::ShowVariable { variable } => {
            let name = variable.iter().map(ident).collect::<Vec<_>>().join(" ");
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
        Statement::Vacuum(_) => Command::Noop("VACUUM"),
        Statement::Analyze(_) => Command::Noop("ANALYZE"),
        Statement::Discard { .. } => Command::Noop("DISCARD ALL"),
        // `ALL` is a keyword; `"ALL"` names a statement.
        Statement::Deallocate { name, .. } => Command::Deallocate(
            (name.quote_style.is_some() || !name.value.eq_ignore_ascii_case("all"))
                .then(|| ident(name)),
        ),
        Statement::Explain {
            statement,
            analyze: false,
            ..
        } => {
            let inner = prepare_in(tables, statement, declared)?;
            columns = vec![OutputColumn {
                name: "QUERY PLAN".into(),
                ty: SqlType::Text,
            }];
            return Ok(Prepared {
                command: Command::Explain(
                    crate::plan::explain::explain(&inner.command),
                    Box::new(inner.command),
                ),
                params: inner.params,
                columns,
                version,
                pending: tables.is_pending(),
                point_read: false,
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
    let point_read = matches!(&command, Command::Query(q) if q.is_point_read());
    Ok(Prepared {
        command,
        params: b.param_types(),
        columns,
        version,
        pending: tables.is_pending(),
        point_read,
    })
}

fn first_words(stmt: &Statement) -> String {
    stmt.to_string()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn index_columns(cols: &[ast::IndexColumn]) -> Result<Vec<String>> {
    cols.iter()
        .map(|c| match &c.column.expr {
            ast::Expr::Identifier(id) => Ok(ident(id)),
            other => Err(SqlError::unsupported(format!("an index on {other}"))),
        })
        .collect()
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

fn create_table(catalog: &Catalog, ct: &ast::CreateTable) -> Result<Ddl> {
    if ct.query.is_some() {
        return Err(SqlError::unsupported("CREATE TABLE AS"));
    }
    let mut columns = Vec::new();
    let mut primary_key = Vec::new();
    for (i, c) in ct.columns.iter().enumerate() {
        let mut column = SqlColumn {
            name: ident(&c.name),
            ty: SqlType::from_ast(&c.data_type)?,
            nullable: true,
            default: None,
        };
        for o in &c.options {
            match &o.option {
                ColumnOption::NotNull => column.nullable = false,
                ColumnOption::Null => {}
                ColumnOption::PrimaryKey(_) => {
                    column.nullable = false;
                    primary_key.push(i);
                }
                ColumnOption::Default(e) => {
                    let (default, _) =
                        Binder::new(Tables::shared(catalog), &[]).expr(e, &[], &mut None)?;
                    if default.max_column().is_some() {
                        return Err(SqlError::syntax("a default cannot refer to columns"));
                    }
                    column.default = Some(ColumnDefault {
                        expr: default,
                        sql: e.to_string(),
                    });
                }
                other => return Err(SqlError::unsupported(format!("column option {other}"))),
            }
        }
        if columns.iter().any(|c: &SqlColumn| c.name == column.name) {
            return Err(SqlError::new(
                sqlstate::DUPLICATE_COLUMN,
                format!("column \"{}\" specified more than once", column.name),
            ));
        }
        columns.push(column);
    }
    for c in &ct.constraints {
        match c {
            TableConstraint::PrimaryKey(pk) => {
                for name in index_columns(&pk.columns)? {
                    let i = columns.iter().position(|c| c.name == name).ok_or_else(|| {
                        SqlError::new(
                            sqlstate::UNDEFINED_COLUMN,
                            format!("column \"{name}\" named in key does not exist"),
                        )
                    })?;
                    columns[i].nullable = false;
                    primary_key.push(i);
                }
            }
            other => return Err(SqlError::unsupported(format!("constraint {other}"))),
        }
    }
    Ok(Ddl::CreateTable {
        name: object_name(&ct.name)?,
        columns,
        primary_key,
        if_not_exists: ct.if_not_exists,
    })
}

/// The roles a GRANT or REVOKE names.
/// The table privileges a GRANT or REVOKE names (`ALL`: every one).
fn table_privileges(privileges: &ast::Privileges) -> Result<Privileges> {
    match privileges {
        ast::Privileges::All { .. } => Ok(Privileges::ALL),
        ast::Privileges::Actions(actions) => actions.iter().try_fold(Privileges::NONE, |all, a| {
            let keyword = a.to_string();
            if keyword.contains('(') {
                return Err(SqlError::unsupported("a privilege on columns"));
            }
            Ok(all.union(Privileges::from_keyword(&keyword)?))
        }),
    }
}

/// The tables a GRANT or REVOKE is on.
fn grant_on(objects: Option<&ast::GrantObjects>) -> Result<GrantOn> {
    match objects {
        Some(ast::GrantObjects::Tables(names)) => Ok(GrantOn::Tables(
            names.iter().map(object_name).collect::<Result<_>>()?,
        )),
        Some(ast::GrantObjects::AllTablesInSchema { schemas })
            if schemas
                .iter()
                .all(|s| object_name(s).is_ok_and(|n| n == "public")) =>
        {
            Ok(GrantOn::AllTables)
        }
        Some(other) => Err(SqlError::unsupported(format!("GRANT ON {other}"))),
        None => Err(SqlError::syntax("GRANT or REVOKE names no object")),
    }
}

/// The roles (or PUBLIC) a table privilege is granted to.
fn table_grantees(grantees: &[ast::Grantee]) -> Result<Vec<Grantee>> {
    grantees
        .iter()
        .map(|g| match (&g.grantee_type, &g.name) {
            (ast::GranteesType::Public, _) => Ok(Grantee::Public),
            (_, Some(ast::GranteeName::ObjectName(n))) => Ok(Grantee::Role(object_name(n)?)),
            _ => Err(SqlError::unsupported(format!("grantee {g}"))),
        })
        .collect()
}

fn grantees(grantees: &[ast::Grantee]) -> Result<Vec<String>> {
    grantees
        .iter()
        .map(|g| match &g.name {
            Some(ast::GranteeName::ObjectName(n)) => object_name(n),
            _ => Err(SqlError::unsupported("this kind of grantee")),
        })
        .collect()
}

//! Parsing: SQL text to syntax trees (`sqlparser`, PostgreSQL dialect), with what sqlparser does
//! not take as PostgreSQL does (COPY's data-less forms, `CREATE USER` as a role) handled before
//! it, and trees that are safe to drop however deep the parser built them. Parsing never looks
//! at the catalog.

use std::ops::ControlFlow;

use sqlparser::ast::{self, Statement, VisitMut, VisitorMut};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use crate::error::{Result, SqlError, sqlstate};

/// Longest statement text accepted (bytes): a bound on what one message can make the server
/// parse and hold.
pub const MAX_STATEMENT_LEN: usize = 1 << 20;

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

pub(super) fn parse_sql(sql: &str) -> Result<Vec<Ast>> {
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

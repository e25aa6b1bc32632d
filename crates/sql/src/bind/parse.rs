//! Parsing: SQL text to syntax trees (`sqlparser`, PostgreSQL dialect), with what sqlparser does
//! not take as PostgreSQL does (COPY's data-less forms, `CREATE USER` as a role) handled before
//! it, and trees that are safe to drop however deep the parser built them. Parsing never looks
//! at the catalog.

use sqlparser::ast::{self, Statement};

pub use crate::syntax::Ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use crate::error::{Result, SqlError, sqlstate};

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
        return copy;
    }
    if let Some(rewritten) = cursor_statements(sql) {
        let (text, fetches) = rewritten?;
        let mut statements = parse_statements(&text)?;
        for (i, fetch) in fetches {
            if let Some(s) = statements.get_mut(i) {
                s.0 = fetch;
            }
        }
        return Ok(statements);
    }
    parse_statements(sql)
}

/// [`parse`] after its special statements (COPY, FETCH and MOVE) are taken care of.
fn parse_statements(sql: &str) -> Result<Vec<Ast>> {
    if let Some(selects) = tables_as_selects(sql) {
        return parse_statements_read(&selects);
    }
    parse_statements_read(sql)
}

/// [`parse_statements`] once `TABLE name` is spelt as the query it stands for.
fn parse_statements_read(sql: &str) -> Result<Vec<Ast>> {
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
    // Most statements name no user: they skip the second tokenization.
    if !mentions(sql, b"user") {
        return None;
    }
    let mut tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let word = is_word;
    let solid = statement_tokens(&tokens);
    let mut users = Vec::new();
    for (n, &(i, statement)) in solid.iter().enumerate() {
        let at_start = n == 0 || solid[n - 1].1 != statement;
        let next = |k: usize, w: &str| {
            solid
                .get(n + k)
                .is_some_and(|&(u, s)| s == statement && word(&tokens[u], w))
        };
        if at_start && word(&tokens[i], "create") && next(1, "user") && !next(2, "mapping") {
            let u = solid[n + 1].0;
            tokens[u] = Token::make_keyword("ROLE");
            users.push(statement);
        }
    }
    if users.is_empty() {
        return None;
    }
    Some((tokens.iter().map(ToString::to_string).collect(), users))
}

/// `sql` with each `TABLE name` query (PostgreSQL's `SELECT * FROM name`, which sqlparser
/// does not read) spelt as that: where a query starts (a statement, a parenthesis, after a
/// set operation); `None` if there is none.
fn tables_as_selects(sql: &str) -> Option<String> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    if !mentions(sql, b"table") {
        return None;
    }
    let mut tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let solid = statement_tokens(&tokens);
    let mut found = false;
    for (n, &(i, statement)) in solid.iter().enumerate() {
        if !is_word(&tokens[i], "table") {
            continue;
        }
        let before = n.checked_sub(1).map(|p| solid[p]);
        let starts_query = match before {
            None => true,
            Some((_, s)) if s != statement => true,
            Some((p, _)) => {
                matches!(tokens[p], Token::LParen)
                    || ["union", "intersect", "except", "all", "distinct"]
                        .iter()
                        .any(|w| is_word(&tokens[p], w))
            }
        };
        if starts_query {
            tokens[i] = Token::make_word("SELECT * FROM", None);
            found = true;
        }
    }
    found.then(|| tokens.iter().map(ToString::to_string).collect())
}

/// Whether `sql` has `word` in it anywhere, in any case: a cheap test before tokenizing.
fn mentions(sql: &str, word: &[u8]) -> bool {
    sql.as_bytes()
        .windows(word.len())
        .any(|w| w.eq_ignore_ascii_case(word))
}

/// Whether `t` is the unquoted word `w`.
fn is_word(t: &sqlparser::tokenizer::Token, w: &str) -> bool {
    matches!(t, sqlparser::tokenizer::Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w))
}

/// Positions of the tokens of `sql` that are not whitespace, each with the number of the
/// statement it belongs to (counted as the parser counts them: empty ones between semicolons
/// are none); semicolons are left out.
fn statement_tokens(tokens: &[sqlparser::tokenizer::Token]) -> Vec<(usize, usize)> {
    use sqlparser::tokenizer::Token;
    let mut out = Vec::new();
    let mut statement = 0;
    let mut at_start = true;
    for (i, t) in tokens.iter().enumerate() {
        match t {
            Token::Whitespace(_) => {}
            Token::SemiColon => {
                if !at_start {
                    statement += 1;
                }
                at_start = true;
            }
            _ => {
                out.push((i, statement));
                at_start = false;
            }
        }
    }
    out
}

/// `FETCH` and `MOVE` as PostgreSQL reads them (every direction optional, `FROM`/`IN`
/// optional, signed counts), which sqlparser does not: each such statement of `sql` is read
/// here into a `Statement::Fetch`, and spelt in the text given to the parser as a plain FETCH
/// whose tree is then replaced. The statement's preposition means nothing to PostgreSQL; here
/// `FROM` marks a FETCH and `IN` a MOVE. `None` if `sql` has no such statement.
#[allow(clippy::type_complexity)]
fn cursor_statements(sql: &str) -> Option<Result<(String, Vec<(usize, Statement)>)>> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    if !mentions(sql, b"fetch") && !mentions(sql, b"move") {
        return None;
    }
    let mut tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let solid = statement_tokens(&tokens);
    let mut fetches = Vec::new();
    let mut n = 0;
    while n < solid.len() {
        let statement = solid[n].1;
        let end = solid[n..]
            .iter()
            .position(|&(_, s)| s != statement)
            .map_or(solid.len(), |k| n + k);
        let first = &tokens[solid[n].0];
        let moves = is_word(first, "move");
        if moves || is_word(first, "fetch") {
            let words: Vec<&Token> = solid[n + 1..end].iter().map(|&(i, _)| &tokens[i]).collect();
            let fetch = match read_fetch(&words, moves) {
                Ok(f) => f,
                Err(e) => return Some(Err(e)),
            };
            // The statement's text becomes a FETCH the parser reads, its tree replaced after.
            tokens[solid[n].0] = Token::make_keyword("FETCH NEXT FROM c");
            for &(i, _) in &solid[n + 1..end] {
                tokens[i] = Token::Whitespace(sqlparser::tokenizer::Whitespace::Space);
            }
            fetches.push((statement, fetch));
        }
        n = end;
    }
    if fetches.is_empty() {
        return None;
    }
    Some(Ok((
        tokens.iter().map(ToString::to_string).collect(),
        fetches,
    )))
}

/// The words of `FETCH`/`MOVE` after the first: `[direction] [FROM | IN] cursor`.
fn read_fetch(words: &[&sqlparser::tokenizer::Token], moves: bool) -> Result<Statement> {
    use ast::FetchDirection as D;
    use sqlparser::tokenizer::Token;
    let syntax = |at: Option<&&Token>| {
        SqlError::syntax(match at {
            Some(t) => format!("syntax error at or near \"{t}\""),
            None => "syntax error at end of input".to_owned(),
        })
    };
    let word = |i: usize, w: &str| words.get(i).is_some_and(|t| is_word(t, w));
    // A signed count at `i`: its value and how many tokens it took.
    let count = |i: usize| -> Option<(i64, usize)> {
        let (sign, at) = match words.get(i) {
            Some(Token::Minus) => (-1, i + 1),
            Some(Token::Plus) => (1, i + 1),
            _ => (1, i),
        };
        match words.get(at) {
            Some(Token::Number(n, false)) => n.parse::<i64>().ok().map(|v| (sign * v, at + 1 - i)),
            _ => None,
        }
    };
    let number = |n: i64| ast::Value::Number(n.to_string(), false).with_empty_span();
    // A count of rows forward (negative: backward).
    let by = |n: i64| match n {
        0 => D::Relative { limit: number(0) },
        n if n > 0 => D::Forward {
            limit: Some(number(n)),
        },
        _ => D::Prior,
    };
    let keyword = ["next", "prior", "first", "last", "all"];
    let (direction, used) = if let Some(k) = keyword.iter().position(|k| word(0, k)) {
        let d = [
            D::Forward {
                limit: Some(number(1)),
            },
            D::Prior,
            D::Absolute { limit: number(1) },
            D::Last,
            D::ForwardAll,
        ];
        (d[k].clone(), 1)
    } else if word(0, "absolute") || word(0, "relative") {
        let (n, took) = count(1).ok_or_else(|| syntax(words.get(1)))?;
        let d = match (word(0, "absolute"), n) {
            (true, -1) => D::Last,
            (_, n) if n < 0 => D::Prior,
            (true, n) => D::Absolute { limit: number(n) },
            (false, n) => D::Relative { limit: number(n) },
        };
        (d, 1 + took)
    } else if word(0, "forward") || word(0, "backward") {
        let back = word(0, "backward");
        if word(1, "all") {
            (if back { D::Prior } else { D::ForwardAll }, 2)
        } else if let Some((n, took)) = count(1) {
            (by(if back { -n } else { n }), 1 + took)
        } else {
            (by(if back { -1 } else { 1 }), 1)
        }
    } else if let Some((n, took)) = count(0) {
        (by(n), took)
    } else {
        (by(1), 0)
    };
    let mut at = used;
    if word(at, "from") || word(at, "in") {
        at += 1;
    }
    let name = match words.get(at) {
        Some(Token::Word(w)) => ast::Ident {
            value: w.value.clone(),
            quote_style: w.quote_style,
            span: sqlparser::tokenizer::Span::empty(),
        },
        other => return Err(syntax(other)),
    };
    if at + 1 < words.len() {
        return Err(syntax(words.get(at + 1)));
    }
    Ok(Statement::Fetch {
        name,
        direction,
        position: if moves {
            ast::FetchPosition::In
        } else {
            ast::FetchPosition::From
        },
        into: None,
    })
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

/// A COPY statement with its boolean options' values spelt as sqlparser reads them
/// (`freeze on`, `header 1`: PostgreSQL takes on/off/1/0 too); `None` if `sql` is not a COPY
/// that needs it.
fn parse_copy(sql: &str) -> Option<Result<Vec<Ast>>> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    if !sql.trim_start().get(..4)?.eq_ignore_ascii_case("copy") {
        return None;
    }
    let mut tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let solid = statement_tokens(&tokens);
    let mut changed = false;
    for pair in solid.windows(2) {
        let ((option, _), (value, _)) = (pair[0], pair[1]);
        if !is_word(&tokens[option], "freeze") && !is_word(&tokens[option], "header") {
            continue;
        }
        let truth = match &tokens[value] {
            t if is_word(t, "on") => "TRUE",
            t if is_word(t, "off") => "FALSE",
            Token::Number(n, false) if n == "1" => "TRUE",
            Token::Number(n, false) if n == "0" => "FALSE",
            _ => continue,
        };
        tokens[value] = Token::make_keyword(truth);
        changed = true;
    }
    if !changed {
        return None;
    }
    let text: String = tokens.iter().map(ToString::to_string).collect();
    Some(parse_statements(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The FETCH or MOVE a statement was read as: its direction, cursor and whether it moves.
    fn fetch(sql: &str) -> (String, String, bool) {
        let statements = parse(sql).expect("parses");
        let fetches: Vec<_> = statements
            .iter()
            .filter_map(|s| match &**s {
                Statement::Fetch {
                    name,
                    direction,
                    position,
                    ..
                } => Some((
                    direction.to_string(),
                    name.to_string(),
                    matches!(position, ast::FetchPosition::In),
                )),
                _ => None,
            })
            .collect();
        assert_eq!(fetches.len(), 1, "{sql}");
        fetches.into_iter().next().expect("one")
    }

    #[test]
    fn fetch_and_move_are_read_in_all_of_postgresqls_spellings() {
        let f = |d: &str, n: &str, m: bool| (d.to_owned(), n.to_owned(), m);
        assert_eq!(fetch("FETCH c"), f("FORWARD 1", "c", false));
        assert_eq!(fetch("fetch 5 in c;"), f("FORWARD 5", "c", false));
        assert_eq!(fetch("FETCH -2 FROM c"), f("PRIOR", "c", false));
        assert_eq!(fetch("FETCH 0 c"), f("RELATIVE 0", "c", false));
        assert_eq!(fetch("MOVE FORWARD ALL IN c"), f("FORWARD ALL", "c", true));
        assert_eq!(fetch("move backward 0 c"), f("RELATIVE 0", "c", true));
        assert_eq!(fetch("FETCH ABSOLUTE -1 FROM c"), f("LAST", "c", false));
        assert_eq!(
            fetch("FETCH FIRST \"My C\""),
            f("ABSOLUTE 1", "\"My C\"", false)
        );
        assert_eq!(
            fetch("BEGIN; FETCH RELATIVE +3 FROM c; COMMIT"),
            f("RELATIVE 3", "c", false)
        );
    }

    #[test]
    fn a_malformed_fetch_is_a_syntax_error() {
        for sql in [
            "FETCH 1 FROM c extra",
            "FETCH ABSOLUTE FROM c",
            "MOVE",
            "FETCH 1 FROM 2",
        ] {
            let e = parse(sql).expect_err(sql);
            assert_eq!(e.code, sqlstate::SYNTAX_ERROR, "{sql}");
        }
    }
}

//! The scalar functions a statement may call, bound by name: their arity and result types.

use sqlparser::ast::{self, FunctionArg, FunctionArgExpr, FunctionArguments};

use crate::bind::{Binder, Grouping, ScopeColumn, aggregate_func, is_unknown, object_name};
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::{Expr, Func};
use crate::values::datum::Datum;
use crate::values::types::SqlType;

impl Binder<'_> {
    pub(crate) fn function(
        &mut self,
        f: &ast::Function,
        scope: &[ScopeColumn],
        g: &mut Option<&mut Grouping>,
    ) -> Result<(Expr, SqlType)> {
        let name = object_name(&f.name)?;
        if aggregate_func(&name).is_some() {
            return Err(SqlError::new(
                sqlstate::GROUPING_ERROR,
                format!("aggregate function {name} is not allowed here"),
            ));
        }
        // What only aggregates and window functions take is not ignored on a scalar function.
        let misused = if f.over.is_some() {
            Some(format!(
                "OVER specified, but {name} is not a window function nor an aggregate function"
            ))
        } else if f.filter.is_some() {
            Some(format!(
                "FILTER specified, but {name} is not an aggregate function"
            ))
        } else if !f.within_group.is_empty() {
            Some(format!(
                "WITHIN GROUP specified, but {name} is not an aggregate function"
            ))
        } else if let FunctionArguments::List(list) = &f.args
            && list.duplicate_treatment.is_some()
        {
            Some(format!(
                "DISTINCT specified, but {name} is not an aggregate function"
            ))
        } else if let FunctionArguments::List(list) = &f.args
            && !list.clauses.is_empty()
        {
            Some(format!(
                "ORDER BY specified, but {name} is not an aggregate function"
            ))
        } else {
            None
        };
        if let Some(message) = misused {
            return Err(SqlError::new(sqlstate::WRONG_OBJECT_TYPE, message));
        }
        // mod(a, b) is a % b, with the operator's types and errors.
        if name == "mod"
            && let FunctionArguments::List(list) = &f.args
            && let [
                FunctionArg::Unnamed(FunctionArgExpr::Expr(a)),
                FunctionArg::Unnamed(FunctionArgExpr::Expr(b)),
            ] = &list.args[..]
        {
            let modulo = ast::Expr::BinaryOp {
                left: Box::new(a.clone()),
                op: ast::BinaryOperator::Modulo,
                right: Box::new(b.clone()),
            };
            return self.expr(&modulo, scope, g);
        }
        if let ("array", FunctionArguments::Subquery(q)) = (name.as_str(), &f.args) {
            return self.array_subquery(q, scope);
        }
        if matches!(name.as_str(), "nextval" | "setval" | "currval" | "lastval") {
            return self.sequence_function(&name, &f.args, scope, g);
        }
        let mut args = Vec::new();
        let mut types = Vec::new();
        if let FunctionArguments::List(list) = &f.args {
            for a in &list.args {
                match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => {
                        let (x, t) = self.expr(e, scope, g)?;
                        args.push(x);
                        types.push(t);
                    }
                    other => return Err(SqlError::unsupported(format!("argument {other}"))),
                }
            }
        }
        self.call(&name, args, types)
    }

    /// Function `name` over arguments already bound (`ceil(x)` and `floor(x)`, which the
    /// parser reads as expressions of their own, come here too).
    pub(crate) fn call(
        &mut self,
        name: &str,
        mut args: Vec<Expr>,
        types: Vec<SqlType>,
    ) -> Result<(Expr, SqlType)> {
        if let Some(bound) = self.catalog_function(name, &args)? {
            return Ok(bound);
        }
        if let Some(bound) = self.bytea_call(name, &mut args, &types)? {
            return Ok(bound);
        }
        if let Some(bound) = self.json_call(name, &mut args, &types)? {
            return Ok(bound);
        }
        if crate::bind::arrays::is_array_function(name) {
            return self.array_function(name, args, &types);
        }
        if crate::plan::SetFunc::named(name).is_some() {
            return Err(SqlError::unsupported(format!(
                "{name}() inside an expression (it may stand alone in the select list or in FROM)"
            )));
        }
        let (func, arity, ty) = match name {
            "version" => (Func::Version, 0..=0, SqlType::Text),
            "quote_ident" => (Func::QuoteIdent, 1..=1, SqlType::Text),
            "date_part" => (Func::DatePart, 2..=2, SqlType::Float8),
            "date_trunc" => {
                let ty = match types.get(1) {
                    Some(SqlType::Date) | Some(SqlType::Text) => SqlType::TimestampTz,
                    Some(t) => *t,
                    None => SqlType::TimestampTz,
                };
                // An untyped value is a timestamp with time zone, as PostgreSQL picks it.
                if let (Some(a), Some(SqlType::Text)) = (args.get_mut(1), types.get(1)) {
                    *a = Expr::Cast(Box::new(a.clone()), SqlType::TimestampTz);
                }
                (Func::DateTrunc, 2..=2, ty)
            }
            "format_type" => {
                for a in &mut args {
                    *a = Expr::Cast(Box::new(a.clone()), SqlType::Int8);
                }
                (Func::FormatType, 2..=2, SqlType::Text)
            }
            "current_setting" => {
                for (a, ty) in args.iter_mut().zip([SqlType::Text, SqlType::Bool]) {
                    *a = Expr::Cast(Box::new(a.clone()), ty);
                }
                self.reads_settings = true;
                (Func::CurrentSetting, 1..=2, SqlType::Text)
            }
            "set_config" => {
                let types = [SqlType::Text, SqlType::Text, SqlType::Bool];
                for (a, ty) in args.iter_mut().zip(types) {
                    *a = Expr::Cast(Box::new(a.clone()), ty);
                }
                self.reads_settings = true;
                (Func::SetConfig, 3..=3, SqlType::Text)
            }
            "now" | "current_timestamp" | "transaction_timestamp" => {
                (Func::Now, 0..=0, SqlType::TimestampTz)
            }
            // The transaction's start, as the session's zone (UTC) shows it.
            "localtimestamp" | "current_date" | "localtime" if args.is_empty() => {
                let ty = match name {
                    "current_date" => SqlType::Date,
                    "localtime" => SqlType::Time,
                    _ => SqlType::Timestamp,
                };
                return Ok((
                    Expr::Cast(Box::new(Expr::Func(Func::Now, Vec::new())), ty),
                    ty,
                ));
            }
            // No session holds an advisory lock (pg_advisory_lock is not offered): releasing
            // them all has nothing to do. (PostgreSQL's result is of type void, whose text is
            // empty.)
            "pg_advisory_unlock_all" if args.is_empty() => {
                return Ok((Expr::Literal(Datum::Text(String::new())), SqlType::Text));
            }
            // The one schema there is (`search_path` names no other).
            "current_schema" if args.is_empty() => {
                return Ok((Expr::Literal(Datum::Text("public".into())), SqlType::Text));
            }
            "statement_timestamp" => (Func::StatementTimestamp, 0..=0, SqlType::TimestampTz),
            "clock_timestamp" => (Func::ClockTimestamp, 0..=0, SqlType::TimestampTz),
            // The argument's type, known when the statement is planned.
            "pg_typeof" if types.len() == 1 => {
                let oid = Datum::Int(i64::from(types[0].oid()));
                return Ok((Expr::Literal(oid), SqlType::RegType));
            }
            "random" => (Func::Random, 0..=0, SqlType::Float8),
            "gen_random_uuid" => (Func::GenRandomUuid, 0..=0, SqlType::Uuid),
            // An untyped argument is taken as a double, as PostgreSQL resolves abs(unknown).
            "abs" if args.first().is_some_and(is_unknown) => {
                args[0] = Expr::Cast(Box::new(args[0].clone()), SqlType::Float8);
                (Func::Abs, 1..=1, SqlType::Float8)
            }
            "abs" => (
                Func::Abs,
                1..=1,
                types.first().copied().unwrap_or(SqlType::Int8),
            ),
            // A double (or an integer, which PostgreSQL takes as one) gives a double; a
            // numeric, or any number with places, a numeric.
            "round" | "trunc" | "ceil" | "ceiling" | "floor" => {
                let (func, arity) = match name {
                    "round" => (Func::Round, 1..=2),
                    "trunc" => (Func::Trunc, 1..=2),
                    "ceil" | "ceiling" => (Func::Ceil, 1..=1),
                    _ => (Func::Floor, 1..=1),
                };
                // PostgreSQL takes one untyped argument as a double, except for trunc, which
                // has candidates of other kinds too (42725).
                let untyped = args.len() == 1 && is_unknown(&args[0]);
                if untyped && func == Func::Trunc {
                    return Err(SqlError::new(
                        sqlstate::AMBIGUOUS_FUNCTION,
                        "function trunc(unknown) is not unique",
                    ));
                }
                let ty = match types.first() {
                    _ if untyped => SqlType::Float8,
                    Some(SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Float8)
                        if args.len() == 1 =>
                    {
                        SqlType::Float8
                    }
                    // With places only numerics round (PostgreSQL has no round(double, int)).
                    Some(t) if *t != SqlType::Float8 && (t.is_numeric() || *t == SqlType::Text) => {
                        SqlType::Numeric(None)
                    }
                    Some(t) => {
                        return Err(SqlError::new(
                            sqlstate::UNDEFINED_FUNCTION,
                            format!("function {name}({}) does not exist", t.name()),
                        ));
                    }
                    None => SqlType::Numeric(None),
                };
                // An integer, text or untyped argument is converted; a numeric of any typmod
                // is one already.
                if let Some(first) = args.first_mut()
                    && !matches!((types[0], ty), (SqlType::Numeric(_), SqlType::Numeric(_)))
                    && types[0] != ty
                {
                    *first = Expr::Cast(Box::new(first.clone()), ty);
                }
                if types.get(1) == Some(&SqlType::Text) {
                    args[1] = Expr::Cast(Box::new(args[1].clone()), SqlType::Int4);
                } else if let Some(t) = types.get(1)
                    && !matches!(t, SqlType::Int2 | SqlType::Int4 | SqlType::Int8)
                {
                    return Err(SqlError::new(
                        sqlstate::UNDEFINED_FUNCTION,
                        format!(
                            "function {name}({}, {}) does not exist",
                            types[0].name(),
                            t.name()
                        ),
                    ));
                }
                (func, arity, ty)
            }
            "lower" => (Func::Lower, 1..=1, SqlType::Text),
            "upper" => (Func::Upper, 1..=1, SqlType::Text),
            "length" | "char_length" | "character_length" => (Func::Length, 1..=1, SqlType::Int4),
            "coalesce" => {
                let (unified, ty) =
                    crate::bind::unified(args.drain(..).zip(types.iter().copied()).collect());
                args = unified;
                (Func::Coalesce, 1..=100, ty)
            }
            // Of the first argument's type, the second compared with it as `=` would.
            "nullif" if args.len() == 2 => {
                self.infer(&args[1], types[0]);
                self.infer(&args[0], types[1]);
                let second = crate::bind::typing::literal_as(args[1].clone(), types[0])?;
                let first = crate::bind::typing::literal_as(args[0].clone(), types[1])?;
                let ty = if is_unknown(&args[0]) {
                    types[1]
                } else {
                    types[0]
                };
                args = vec![first, second];
                (Func::NullIf, 2..=2, ty)
            }
            "concat" | "concat_ws" => {
                // Their values are "any" (a char(n) padded); concat_ws's separator is text.
                let first = usize::from(name == "concat_ws");
                args = args
                    .into_iter()
                    .zip(&types)
                    .enumerate()
                    .map(|(i, (a, t))| {
                        if i < first {
                            a
                        } else {
                            crate::bind::typing::with_char_padding(a, *t)
                        }
                    })
                    .collect();
                let func = if name == "concat" {
                    Func::Concat
                } else {
                    Func::ConcatWs
                };
                (func, 1..=100, SqlType::Text)
            }
            "ltrim" => (Func::LTrim, 1..=2, SqlType::Text),
            "rtrim" => (Func::RTrim, 1..=2, SqlType::Text),
            "btrim" => (Func::BTrim, 1..=2, SqlType::Text),
            "replace" => (Func::Replace, 3..=3, SqlType::Text),
            "strpos" => (Func::StrPos, 2..=2, SqlType::Int4),
            "initcap" => (Func::InitCap, 1..=1, SqlType::Text),
            "reverse" => (Func::Reverse, 1..=1, SqlType::Text),
            "ascii" => (Func::Ascii, 1..=1, SqlType::Int4),
            // A position or a length: an integer argument.
            "split_part" | "left" | "right" | "lpad" | "rpad" | "repeat" | "chr" => {
                let (func, arity, at) = match name {
                    "split_part" => (Func::SplitPart, 3..=3, 2),
                    "left" => (Func::Left, 2..=2, 1),
                    "right" => (Func::Right, 2..=2, 1),
                    "lpad" => (Func::LPad, 2..=3, 1),
                    "rpad" => (Func::RPad, 2..=3, 1),
                    "repeat" => (Func::Repeat, 2..=2, 1),
                    _ => (Func::Chr, 1..=1, 0),
                };
                integer_argument(&mut args, &types, at, name)?;
                (func, arity, SqlType::Text)
            }
            // On doubles (PostgreSQL also has numeric versions, not here yet).
            "power" | "pow" | "sqrt" => {
                if let Some(t) = types.iter().find(|t| matches!(t, SqlType::Numeric(_))) {
                    return Err(SqlError::unsupported(format!(
                        "{name}() of a {} (only of double precision and integers)",
                        t.name()
                    )));
                }
                for (a, t) in args.iter_mut().zip(&types) {
                    if *t != SqlType::Float8 {
                        *a = Expr::Cast(Box::new(a.clone()), SqlType::Float8);
                    }
                }
                if name == "sqrt" {
                    (Func::Sqrt, 1..=1, SqlType::Float8)
                } else {
                    (Func::Power, 2..=2, SqlType::Float8)
                }
            }
            "greatest" | "least" => {
                let (unified, ty) =
                    crate::bind::unified(args.drain(..).zip(types.iter().copied()).collect());
                args = unified;
                let func = if name == "greatest" {
                    Func::Greatest
                } else {
                    Func::Least
                };
                (func, 1..=100, ty)
            }
            "current_database" | "current_catalog" => (Func::CurrentDatabase, 0..=0, SqlType::Text),
            "current_user" | "session_user" | "user" => (Func::CurrentUser, 0..=0, SqlType::Text),
            "pg_backend_pid" => (Func::BackendPid, 0..=0, SqlType::Int4),
            "pg_cancel_backend" | "pg_terminate_backend" => {
                // Their argument is an integer (a pid).
                if let Some(a) = args.first_mut() {
                    *a = Expr::Cast(Box::new(a.clone()), SqlType::Int4);
                }
                let f = if name == "pg_cancel_backend" {
                    Func::CancelBackend
                } else {
                    Func::TerminateBackend
                };
                (f, 1..=1, SqlType::Bool)
            }
            _ => {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    format!("function {name}() does not exist"),
                ));
            }
        };
        if !arity.contains(&args.len()) {
            return Err(SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!("function {name} does not take {} arguments", args.len()),
            ));
        }
        let call = Expr::Func(func, args);
        if func == Func::Abs {
            // abs(-2147483648) is out of an integer's range, as in PostgreSQL.
            return Ok((crate::bind::narrowed(call, ty), ty));
        }
        Ok((call, ty))
    }
}

impl Binder<'_> {
    /// `nextval('name')`, `currval('name')`, `setval('name', value [, is_called])` and
    /// `lastval()`, the sequence named by a constant (a string, or a string cast to `regclass`, as a serial column's default writes
    /// it), found when the statement is planned.
    fn sequence_function(
        &mut self,
        name: &str,
        args: &FunctionArguments,
        scope: &[ScopeColumn],
        g: &mut Option<&mut Grouping>,
    ) -> Result<(Expr, SqlType)> {
        self.uses_sequences = true;
        let list: Vec<&ast::Expr> = match args {
            FunctionArguments::List(list) => list
                .args
                .iter()
                .map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e),
                    other => Err(SqlError::unsupported(format!("argument {other}"))),
                })
                .collect::<Result<_>>()?,
            _ => Vec::new(),
        };
        let arity = match name {
            "lastval" => 0..=0,
            "nextval" | "currval" => 1..=1,
            _ => 2..=3,
        };
        if !arity.contains(&list.len()) {
            return Err(SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!("function {name} does not take {} arguments", list.len()),
            ));
        }
        if name == "lastval" {
            return Ok((Expr::Func(Func::LastVal, Vec::new()), SqlType::Int8));
        }
        let constant = match list[0] {
            ast::Expr::Cast { expr, .. } => expr.as_ref(),
            e => e,
        };
        let relation = match constant {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(s) => crate::expr::lookup::normalized(s),
                _ => return Err(SqlError::unsupported(format!("{name} of {constant}"))),
            },
            _ => {
                return Err(SqlError::unsupported(format!(
                    "{name} of a sequence named by an expression"
                )));
            }
        };
        let table = self.tables.table(&relation)?;
        let Some(sequence) = table.sequence.clone() else {
            return Err(SqlError::new(
                sqlstate::WRONG_OBJECT_TYPE,
                format!("\"{relation}\" is not a sequence"),
            ));
        };
        if name == "currval" {
            let named = Expr::Literal(Datum::Text(sequence.name.clone()));
            return Ok((Expr::Func(Func::CurrVal, vec![named]), SqlType::Int8));
        }
        let mut bound = Vec::new();
        for (e, ty) in list[1..].iter().zip([SqlType::Int8, SqlType::Bool]) {
            let (x, _) = self.expr(e, scope, g)?;
            self.infer(&x, ty);
            bound.push(Expr::Cast(Box::new(x), ty));
        }
        Ok((Expr::Sequence(sequence, bound), SqlType::Int8))
    }
}

/// Makes argument `at` of function `name` an integer: an untyped or text argument is cast, an
/// integer one kept; anything else has no such function (42883), as in PostgreSQL.
fn integer_argument(args: &mut [Expr], types: &[SqlType], at: usize, name: &str) -> Result<()> {
    let (Some(a), Some(t)) = (args.get_mut(at), types.get(at)) else {
        return Ok(());
    };
    match t {
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 => Ok(()),
        SqlType::Text => {
            *a = Expr::Cast(Box::new(a.clone()), SqlType::Int4);
            Ok(())
        }
        other => Err(SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!("function {name}(..., {}) does not exist", other.name()),
        )),
    }
}

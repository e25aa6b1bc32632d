//! Binding expressions: names resolved against the columns in scope, parameters numbered and
//! their types inferred from where they appear (as PostgreSQL infers an untyped `$1` compared
//! with an `integer` column to be an `integer`), literals typed, and every expression's result
//! type known before it runs (clients ask for it with Describe).

use sqlparser::ast::{
    self, BinaryOperator, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName,
    UnaryOperator, Value,
};

use crate::catalog::pending::Tables;
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::{BinOp, Expr, Func};
use crate::plan::{AggCall, AggFunc};
use crate::values::datum::Datum;
use crate::values::types::{LENGTH_MAX, SqlType};

use super::typing::*;

/// An identifier as PostgreSQL reads it: folded to lower case unless quoted.
pub fn ident(id: &Ident) -> String {
    match id.quote_style {
        Some(_) => id.value.clone(),
        None => id.value.to_lowercase(),
    }
}

/// The last part of a possibly qualified name (`public.t` is `t`: there is one schema).
pub fn object_name(name: &ObjectName) -> Result<String> {
    match name.0.last() {
        Some(ast::ObjectNamePart::Identifier(id)) => Ok(ident(id)),
        _ => Err(SqlError::syntax(format!("invalid name {name}"))),
    }
}

/// A column in scope: the table (or alias) it comes from, its name and type.
#[derive(Clone, Debug)]
pub struct ScopeColumn {
    pub table: String,
    pub name: String,
    pub ty: SqlType,
    /// An enclosing query's column, which a subquery sees where none of its own has the name.
    pub outer: bool,
    /// The right side's column of a `JOIN ... USING`: the left side's stands for both, so
    /// only a qualified name finds it, and `*` leaves it out.
    pub merged: bool,
    /// The left side's column of a `JOIN ... USING`, which stands for both: `*` lists it
    /// first, as PostgreSQL does.
    pub using: bool,
    /// A system column (`ctid`): found by its name, left out of `*`.
    pub system: bool,
}

/// What aggregate binding collects: grouping expressions (bound over the input) and the
/// aggregate calls met so far.
pub struct Grouping {
    pub group_by: Vec<Expr>,
    pub group_types: Vec<SqlType>,
    pub calls: Vec<AggCall>,
}

/// Names an aggregate function, if `name` is one.
pub fn aggregate_func(name: &str) -> Option<AggFunc> {
    Some(match name {
        "count" => AggFunc::Count,
        "sum" => AggFunc::Sum,
        "min" => AggFunc::Min,
        "max" => AggFunc::Max,
        "avg" => AggFunc::Avg,
        "array_agg" => AggFunc::ArrayAgg,
        "string_agg" => AggFunc::StringAgg,
        "json_agg" => AggFunc::JsonAgg,
        "jsonb_agg" => AggFunc::JsonbAgg,
        "bool_and" | "every" => AggFunc::BoolAnd,
        "bool_or" => AggFunc::BoolOr,
        _ => return None,
    })
}

/// Whether `e` calls an aggregate function (outside any subquery: a subquery's aggregates are
/// its own).
pub fn has_aggregate(e: &ast::Expr) -> bool {
    has_call(e, &|f| {
        f.over.is_none()
            && object_name(&f.name)
                .ok()
                .and_then(|n| aggregate_func(&n))
                .is_some()
    })
}

/// Whether `e` calls a window function (`f(...) OVER ...`) outside its subqueries.
pub fn has_window(e: &ast::Expr) -> bool {
    has_call(e, &|f| f.over.is_some())
}

/// Whether `e` holds a call `wanted` picks, outside its subqueries.
fn has_call(e: &ast::Expr, wanted: &dyn Fn(&ast::Function) -> bool) -> bool {
    use std::ops::ControlFlow;
    /// Finds a call, counting how deep in subqueries it is.
    struct Finder<'a> {
        depth: usize,
        wanted: &'a dyn Fn(&ast::Function) -> bool,
    }
    impl ast::Visitor for Finder<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &ast::Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &ast::Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &ast::Expr) -> ControlFlow<()> {
            match e {
                ast::Expr::Function(f) if self.depth == 0 && (self.wanted)(f) => {
                    ControlFlow::Break(())
                }
                _ => ControlFlow::Continue(()),
            }
        }
    }
    ast::Visit::visit(e, &mut Finder { depth: 0, wanted }).is_break()
}

/// Binds statements: the catalog to resolve tables in, and the parameters met so far.
pub struct Binder<'c> {
    /// The catalog as the statement's transaction sees it.
    pub tables: Tables<'c>,
    pub params: Vec<Option<SqlType>>,
    /// How deep the expression being bound is nested so far (see `depth`).
    pub(crate) depth: usize,
    /// How deep the query being bound is nested in others (see `select_in`).
    pub(crate) query_depth: usize,
    /// What is being bound is evaluated where a correlated subquery can run under each row (a
    /// SELECT's projection and WHERE): one is planned as an `Expr::SubPlan` there, and refused
    /// (0A000) elsewhere.
    pub(crate) per_row_ok: bool,
    /// The first error computing a constant part met (see [`folded`](Self::folded)).
    pub(crate) fold_error: Option<SqlError>,
    /// The WITH queries in scope, innermost last.
    pub(crate) ctes: Vec<crate::bind::with::CteBinding>,
    /// How many recursive WITH queries the statement has (their work tables' numbers).
    pub(crate) work_tables: usize,
    /// The statement's uncorrelated subqueries in expressions, by number (`Expr::Init`): each
    /// after those inside it.
    pub(crate) init: Vec<crate::plan::InitPlan>,
    /// What the system catalogs show, taken when the statement first reads one: its plan is
    /// then good for one execution only (see `system`).
    pub(crate) system: Option<crate::system::Snapshot>,
    /// It reads something as it stands when planned (the system catalogs, a sequence): its
    /// plan is good for one execution only.
    pub(crate) volatile: bool,
    /// It calls `current_setting` or `set_config`: its run needs the session's settings.
    pub(crate) reads_settings: bool,
    /// It calls a sequence function: its run needs the session's sequence values.
    pub(crate) uses_sequences: bool,
    /// Binding a view's query: the view's owner, whose privileges it reads with (see `view`).
    pub(crate) view_owner: Option<crate::catalog::acl::Actor>,
    /// The views whose queries are being bound, innermost last (a view reading itself is
    /// refused).
    pub(crate) views_open: Vec<String>,
    /// The window function calls of the select list and ORDER BY being bound (`None` where
    /// none may be: WHERE, GROUP BY, HAVING, other statements).
    pub(crate) windows: Option<crate::bind::window::Windows>,
}

impl<'c> Binder<'c> {
    pub fn new(tables: Tables<'c>, declared: &[Option<SqlType>]) -> Self {
        Binder {
            tables,
            params: declared.to_vec(),
            depth: 0,
            query_depth: 0,
            per_row_ok: false,
            fold_error: None,
            init: Vec::new(),
            ctes: Vec::new(),
            work_tables: 0,
            system: None,
            volatile: false,
            reads_settings: false,
            uses_sequences: false,
            view_owner: None,
            views_open: Vec::new(),
            windows: None,
        }
    }

    /// The parameters' types, unknown ones as `text`.
    pub fn param_types(&self) -> Vec<SqlType> {
        self.params
            .iter()
            .map(|t| t.unwrap_or(SqlType::Text))
            .collect()
    }

    fn param_type(&self, i: usize) -> Option<SqlType> {
        self.params.get(i).copied().flatten()
    }

    /// If `e` is a parameter of unknown type, it has type `ty` (where it is used says so).
    pub fn infer(&mut self, e: &Expr, ty: SqlType) {
        if let Expr::Param(i) = e
            && self.param_type(*i).is_none()
        {
            self.params[*i] = Some(ty);
        }
    }

    /// [`expr`](Self::expr) for a whole expression of the statement (a condition, a select
    /// item, a value): bound, then its constant parts computed as PostgreSQL's planner does
    /// (see `fold`); an error computing them is the statement's once all of it is bound
    /// (`fold_error`).
    pub fn folded(
        &mut self,
        e: &ast::Expr,
        scope: &[ScopeColumn],
        grouping: &mut Option<&mut Grouping>,
    ) -> Result<(Expr, SqlType)> {
        let (bound, ty) = self.expr(e, scope, grouping)?;
        match crate::plan::fold::fold(bound) {
            Ok(folded) => Ok((folded, ty)),
            // PostgreSQL reports what analysis finds (types, names) in any part of a statement
            // before what its planner's folding meets: the statement fails with this once it
            // is bound (the placeholder never runs).
            Err(e) => {
                self.fold_error.get_or_insert(e);
                Ok((Expr::Literal(Datum::Null), ty))
            }
        }
    }

    /// Binds `e` over `scope`; in an aggregate query `grouping` maps it onto the aggregated row.
    /// Fails with 54001 past the depth a statement may nest to (`depth`).
    pub fn expr(
        &mut self,
        e: &ast::Expr,
        scope: &[ScopeColumn],
        grouping: &mut Option<&mut Grouping>,
    ) -> Result<(Expr, SqlType)> {
        self.depth += 1;
        // Binding runs on OS threads' own stacks (a session's step on its worker, a network
        // thread, the thread opening a database), never in a scheduler task: there `stacker` can extend the stack as deep
        // as [`MAX_DEPTH`](crate::depth::MAX_DEPTH) needs (its bookkeeping is per OS thread,
        // which a task's own stack would confuse). A level's frames are large in a debug build.
        let bound = stacker::maybe_grow(2 * crate::depth::RED_ZONE, 16 << 20, || {
            crate::depth::check(self.depth)?;
            self.expr_nested(e, scope, grouping)
        });
        self.depth -= 1;
        bound
    }

    fn expr_nested(
        &mut self,
        e: &ast::Expr,
        scope: &[ScopeColumn],
        grouping: &mut Option<&mut Grouping>,
    ) -> Result<(Expr, SqlType)> {
        if let ast::Expr::Function(f) = e
            && f.over.is_some()
        {
            return self.window_call(f, scope, grouping);
        }
        if let Some(g) = grouping.as_deref_mut() {
            // A grouping expression, however written, is a column of the aggregated row.
            if !has_aggregate(e)
                && !has_window(e)
                && let Ok((bound, ty)) = self.expr(e, scope, &mut None)
            {
                if let Some(i) = g.group_by.iter().position(|x| *x == bound) {
                    return Ok((Expr::Column(i), ty));
                }
                if bound.max_column().is_none() {
                    return Ok((bound, ty)); // A constant.
                }
            }
            if let ast::Expr::Function(f) = e
                && let Some(func) = aggregate_func(&object_name(&f.name)?)
            {
                let call = self.aggregate(func, f, scope, None)?;
                let ty = call.ty;
                let at = g.group_by.len() + g.calls.len();
                g.calls.push(call);
                return Ok((Expr::Column(at), ty));
            }
            if matches!(
                e,
                ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_)
            ) {
                return Err(SqlError::new(
                    sqlstate::GROUPING_ERROR,
                    format!(
                        "column \"{e}\" must appear in the GROUP BY clause or be used in an aggregate function"
                    ),
                ));
            }
        }
        self.expr_inner(e, scope, grouping)
    }

    /// A chain of one logical operator (`a OR b OR c ...`), however long: its operands, found
    /// without recursing along the chain, bound into a balanced tree (as deep as the logarithm
    /// of their number; AND and OR are associative), as PostgreSQL flattens such chains.
    fn logical_chain(
        &mut self,
        e: &ast::Expr,
        op: &BinaryOperator,
        scope: &[ScopeColumn],
        g: &mut Option<&mut Grouping>,
    ) -> Result<(Expr, SqlType)> {
        let mut operands = Vec::new();
        let mut pending = vec![e];
        while let Some(x) = pending.pop() {
            match x {
                ast::Expr::BinaryOp { left, op: o, right } if o == op => {
                    pending.push(right);
                    pending.push(left);
                }
                other => operands.push(self.expr(other, scope, g)?.0),
            }
        }
        let op = if *op == BinaryOperator::And {
            BinOp::And
        } else {
            BinOp::Or
        };
        // Pairs operands level by level until one remains.
        while operands.len() > 1 {
            let mut next = Vec::with_capacity(operands.len().div_ceil(2));
            let mut it = operands.into_iter();
            while let Some(l) = it.next() {
                next.push(match it.next() {
                    Some(r) => Expr::Binary(op, Box::new(l), Box::new(r)),
                    None => l,
                });
            }
            operands = next;
        }
        let only = operands.pop().expect("a chain has operands");
        Ok((only, SqlType::Bool))
    }

    /// Aggregate call `f` over rows of `scope`; as a window function (`over`: the grouping its
    /// argument is bound with, the query's), over the frame of each row.
    pub(crate) fn aggregate(
        &mut self,
        func: AggFunc,
        f: &ast::Function,
        scope: &[ScopeColumn],
        mut over: Option<&mut Option<&mut Grouping>>,
    ) -> Result<AggCall> {
        let FunctionArguments::List(list) = &f.args else {
            return Err(SqlError::syntax(format!("{} needs an argument", f.name)));
        };
        let window = over.is_some();
        if window && !list.clauses.is_empty() {
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "aggregate ORDER BY is not implemented for window functions",
            ));
        }
        if window && list.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct) {
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "DISTINCT is not implemented for window functions",
            ));
        }
        if f.over.is_some() && !window {
            return Err(SqlError::unsupported(format!(
                "{} as a window function",
                f.name
            )));
        }
        if !f.within_group.is_empty() {
            return Err(SqlError::unsupported(format!("WITHIN GROUP of {}", f.name)));
        }
        let mut order_by = Vec::new();
        for clause in &list.clauses {
            match clause {
                ast::FunctionArgumentClause::OrderBy(items) => {
                    for item in items {
                        let (e, _) = self.expr(&item.expr, scope, &mut None)?;
                        let descending = matches!(item.options.sort, Some(ast::OrderBySort::Desc));
                        let nulls_first = item.options.nulls_first.unwrap_or(descending);
                        order_by.push((e, descending, nulls_first));
                    }
                }
                other => return Err(SqlError::unsupported(format!("{other} in {}", f.name))),
            }
        }
        let filter = match &f.filter {
            Some(condition) => {
                if has_aggregate(condition) && !window {
                    return Err(SqlError::new(
                        sqlstate::GROUPING_ERROR,
                        "aggregate functions are not allowed in FILTER",
                    ));
                }
                let (e, ty) = match over.as_deref_mut() {
                    Some(g) => self.expr(condition, scope, g)?,
                    None => self.expr(condition, scope, &mut None)?,
                };
                require_boolean("FILTER", ty)?;
                Some(e)
            }
            None => None,
        };
        let distinct = matches!(
            list.duplicate_treatment,
            Some(ast::DuplicateTreatment::Distinct)
        );
        let mut separator = None;
        let args = match (func, list.args.as_slice()) {
            (AggFunc::StringAgg, [a, FunctionArg::Unnamed(FunctionArgExpr::Expr(sep))]) => {
                let (s, _) = self.expr(sep, scope, &mut None)?;
                self.infer(&s, SqlType::Text);
                separator = Some(s);
                std::slice::from_ref(a)
            }
            (AggFunc::StringAgg, _) => {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    "function string_agg takes a value and a separator",
                ));
            }
            (_, args) => args,
        };
        if distinct && !order_by.is_empty() {
            return Err(SqlError::unsupported(format!(
                "DISTINCT with ORDER BY in {}",
                f.name
            )));
        }
        let arg = match args {
            [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] if func == AggFunc::Count => None,
            [FunctionArg::Unnamed(FunctionArgExpr::Expr(a))] => match over {
                Some(g) => Some(self.expr(a, scope, g)?),
                None => {
                    if has_aggregate(a) {
                        return Err(SqlError::new(
                            sqlstate::GROUPING_ERROR,
                            "aggregate function calls cannot be nested",
                        ));
                    }
                    if has_window(a) {
                        return Err(SqlError::new(
                            sqlstate::GROUPING_ERROR,
                            "aggregate function calls cannot contain window function calls",
                        ));
                    }
                    Some(self.expr(a, scope, &mut None)?)
                }
            },
            _ => return Err(SqlError::syntax(format!("wrong arguments to {}", f.name))),
        };
        let arg_ty = arg.as_ref().map(|(_, t)| *t);
        // json_agg collects each value's JSON text.
        let arg = match (func, arg) {
            (AggFunc::JsonAgg | AggFunc::JsonbAgg, Some((e, t))) => {
                let t = if is_unknown(&e) { SqlType::Text } else { t };
                let json = Expr::Func(Func::Json(crate::expr::JsonFunc::ToJson(t)), vec![e]);
                Some((json, t))
            }
            (_, arg) => arg,
        };
        let ty = match (func, arg_ty) {
            (AggFunc::Count, _) => SqlType::Int8,
            (AggFunc::JsonAgg, Some(_)) => SqlType::Json,
            (AggFunc::JsonbAgg, Some(_)) => SqlType::Jsonb,
            // No ordering of these is offered as an aggregate (as PostgreSQL has none).
            (
                AggFunc::Min | AggFunc::Max,
                Some(t @ (SqlType::Json | SqlType::Jsonb | SqlType::Bytea)),
            ) => {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    format!("function {}({}) does not exist", f.name, t.name()),
                ));
            }
            (_, None) => return Err(SqlError::syntax(format!("{}(*) is not defined", f.name))),
            (AggFunc::ArrayAgg, Some(t)) => crate::bind::arrays::array_of(t)?,
            (AggFunc::StringAgg, Some(t)) if t.is_string() => SqlType::Text,
            (AggFunc::BoolAnd | AggFunc::BoolOr, Some(SqlType::Bool | SqlType::Text)) => {
                SqlType::Bool
            }
            (AggFunc::Min | AggFunc::Max, Some(t)) => t,
            (AggFunc::Sum, Some(SqlType::Int2 | SqlType::Int4)) => SqlType::Int8,
            (AggFunc::Sum | AggFunc::Avg, Some(SqlType::Float8)) => SqlType::Float8,
            (AggFunc::Sum | AggFunc::Avg, Some(t)) if t.is_numeric() || t == SqlType::Text => {
                SqlType::Numeric(None)
            }
            (_, Some(t)) => {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    format!("function {}({}) does not exist", f.name, t.name()),
                ));
            }
        };
        Ok(AggCall {
            func,
            arg: arg.map(|(e, _)| e),
            distinct,
            filter,
            ty,
            separator,
            order_by,
        })
    }

    /// `expr [NOT] LIKE pattern` (or ILIKE): `op` over the two, the pattern taken as text.
    fn like(
        &mut self,
        op: BinOp,
        expr: &ast::Expr,
        pattern: &ast::Expr,
        scope: &[ScopeColumn],
        g: &mut Option<&mut Grouping>,
    ) -> Result<(Expr, SqlType)> {
        let (x, t) = self.expr(expr, scope, g)?;
        if t == SqlType::Bytea {
            return Err(SqlError::unsupported("LIKE on bytea"));
        }
        // ('a'::char(3) LIKE 'a' is false.)
        let x = with_char_padding(x, t);
        let (p, _) = self.expr(pattern, scope, g)?;
        self.infer(&p, SqlType::Text);
        Ok((Expr::Binary(op, Box::new(x), Box::new(p)), SqlType::Bool))
    }

    fn column(&self, parts: &[Ident], scope: &[ScopeColumn]) -> Result<(Expr, SqlType)> {
        let (table, name) = match parts {
            [name] => (None, ident(name)),
            [.., table, name] => (Some(ident(table)), ident(name)),
            [] => return Err(SqlError::syntax("empty column name")),
        };
        let (n, t) = (&name, &table);
        let named = |outer: bool| {
            scope.iter().enumerate().filter(move |(_, c)| {
                c.outer == outer && c.name == *n && t.as_ref().map_or(!c.merged, |t| *t == c.table)
            })
        };
        // A subquery's own columns first, then the enclosing query's (PostgreSQL's scoping).
        let mut found = if named(false).next().is_some() {
            named(false)
        } else {
            named(true)
        };
        match (found.next(), found.next()) {
            (Some((i, c)), None) => Ok((Expr::Column(i), c.ty)),
            // PostgreSQL finds a system column unqualified only where one table has it.
            (Some((_, a)), Some((_, b))) if a.system && b.system => Err(SqlError::new(
                sqlstate::UNDEFINED_COLUMN,
                format!("column \"{name}\" does not exist"),
            )),
            (Some(_), Some(_)) => Err(SqlError::new(
                sqlstate::AMBIGUOUS_COLUMN,
                format!("column reference \"{name}\" is ambiguous"),
            )),
            (None, _) => Err(SqlError::new(
                sqlstate::UNDEFINED_COLUMN,
                match table {
                    Some(t) => format!("column {t}.{name} does not exist"),
                    None => format!("column \"{name}\" does not exist"),
                },
            )),
        }
    }

    fn expr_inner(
        &mut self,
        e: &ast::Expr,
        scope: &[ScopeColumn],
        g: &mut Option<&mut Grouping>,
    ) -> Result<(Expr, SqlType)> {
        use ast::Expr as A;
        Ok(match e {
            A::Identifier(id) => self.column(std::slice::from_ref(id), scope)?,
            A::CompoundIdentifier(parts) => self.column(parts, scope)?,
            A::Value(v) => self.value(&v.value)?,
            A::Nested(inner) => self.expr(inner, scope, g)?,
            // A negated number is one constant, as PostgreSQL's grammar folds it (through
            // parentheses too): -9223372036854775808 is a bigint, -(-9223372036854775808) a
            // numeric.
            A::UnaryOp {
                op: UnaryOperator::Minus,
                ..
            } if let Some(text) = signed_number(e) => number(&text)?,
            A::UnaryOp { op, expr } => {
                let (x, ty) = self.expr(expr, scope, g)?;
                match op {
                    UnaryOperator::Not => (Expr::Not(Box::new(x)), SqlType::Bool),
                    UnaryOperator::Minus if is_unknown(&x) => return Err(not_unique("-", None)),
                    // A constant operand is negated by folding (checked, like any arithmetic).
                    UnaryOperator::Minus => (narrowed(Expr::Negate(Box::new(x)), ty), ty),
                    UnaryOperator::Plus => (x, ty),
                    other => return Err(SqlError::unsupported(format!("operator {other}"))),
                }
            }
            A::BinaryOp {
                op: op @ (BinaryOperator::And | BinaryOperator::Or),
                ..
            } => self.logical_chain(e, op, scope, g)?,
            A::BinaryOp { left, op, right }
                if let (Some(l), Some(r)) = (
                    super::row_values::row_items(left),
                    super::row_values::row_items(right),
                ) =>
            {
                match super::row_values::compare(l, op, r)? {
                    Some(conditions) => self.expr(&conditions, scope, g)?,
                    None => {
                        return Err(SqlError::unsupported(format!("operator {op} between rows")));
                    }
                }
            }
            A::BinaryOp { left, op, right } => {
                let (mut l, lt) = self.expr(left, scope, g)?;
                let (mut r, rt) = self.expr(right, scope, g)?;
                if lt == SqlType::Bytea || rt == SqlType::Bytea {
                    return self.bytea_operator(op, (l, lt), (r, rt));
                }
                if super::json::is_document(lt) || super::json::is_document(rt) {
                    match self.json_operator(op, (l, lt), (r, rt))? {
                        Ok(bound) => return Ok(bound),
                        Err(text_operands) => (l, r) = text_operands,
                    }
                }
                // Arithmetic between two untyped literals has no one operator to pick.
                if let BinaryOperator::Plus
                | BinaryOperator::Minus
                | BinaryOperator::Multiply
                | BinaryOperator::Divide
                | BinaryOperator::Modulo = op
                    && is_unknown(&l)
                    && is_unknown(&r)
                {
                    return Err(not_unique(&op.to_string(), Some("unknown")));
                }
                // What an unknown operand is taken to be: the other's type, but a timestamp
                // plus one is an interval (the only addition timestamps have).
                let hint = |other: SqlType| match op {
                    BinaryOperator::Plus if is_timestamp(other) => SqlType::Interval,
                    _ => other,
                };
                self.infer(&l, hint(rt));
                self.infer(&r, hint(lt));
                let (l, r) = if *op == BinaryOperator::StringConcat {
                    (l, r)
                } else {
                    (literal_as(l, hint(rt))?, literal_as(r, hint(lt))?)
                };
                // A varchar compared with a char(n) is compared as a char (PostgreSQL's
                // bpchar operators: trailing spaces do not count).
                let compares = matches!(
                    op,
                    BinaryOperator::Eq
                        | BinaryOperator::NotEq
                        | BinaryOperator::Lt
                        | BinaryOperator::LtEq
                        | BinaryOperator::Gt
                        | BinaryOperator::GtEq
                );
                let as_char = |e: Expr, t: SqlType, other: SqlType| match (t, other) {
                    (SqlType::VarChar(_), SqlType::Char(_)) if compares => {
                        Expr::Cast(Box::new(e), SqlType::Char(LENGTH_MAX))
                    }
                    _ => e,
                };
                let (l, r) = (as_char(l, lt, rt), as_char(r, rt, lt));
                let (op, ty) = match op {
                    BinaryOperator::Eq => (BinOp::Eq, SqlType::Bool),
                    BinaryOperator::NotEq => (BinOp::NotEq, SqlType::Bool),
                    BinaryOperator::Lt => (BinOp::Lt, SqlType::Bool),
                    BinaryOperator::LtEq => (BinOp::LtEq, SqlType::Bool),
                    BinaryOperator::Gt => (BinOp::Gt, SqlType::Bool),
                    BinaryOperator::GtEq => (BinOp::GtEq, SqlType::Bool),
                    BinaryOperator::And => (BinOp::And, SqlType::Bool),
                    BinaryOperator::Or => (BinOp::Or, SqlType::Bool),
                    BinaryOperator::Plus => (BinOp::Plus, arith_type(lt, rt)),
                    BinaryOperator::Minus if is_timestamp(lt) && is_timestamp(rt) => {
                        (BinOp::Minus, SqlType::Interval)
                    }
                    BinaryOperator::Minus => (BinOp::Minus, arith_type(lt, rt)),
                    BinaryOperator::Multiply => (BinOp::Multiply, arith_type(lt, rt)),
                    BinaryOperator::Divide => (BinOp::Divide, arith_type(lt, rt)),
                    // PostgreSQL has no remainder of doubles.
                    BinaryOperator::Modulo if arith_type(lt, rt) == SqlType::Float8 => {
                        return Err(SqlError::new(
                            sqlstate::UNDEFINED_FUNCTION,
                            format!("operator does not exist: {} % {}", lt.name(), rt.name()),
                        ));
                    }
                    BinaryOperator::Modulo => (BinOp::Modulo, arith_type(lt, rt)),
                    BinaryOperator::StringConcat => (BinOp::Concat, SqlType::Text),
                    BinaryOperator::PGRegexMatch => (BinOp::RegexMatch, SqlType::Bool),
                    BinaryOperator::PGRegexNotMatch => (BinOp::RegexNotMatch, SqlType::Bool),
                    BinaryOperator::PGRegexIMatch => (BinOp::RegexIMatch, SqlType::Bool),
                    BinaryOperator::PGRegexNotIMatch => (BinOp::RegexNotIMatch, SqlType::Bool),
                    // OPERATOR(pg_catalog.~): the operator, named with its schema.
                    BinaryOperator::PGCustomBinaryOperator(parts)
                        if parts.len() == 2 && parts[0] == "pg_catalog" =>
                    {
                        let named = match parts[1].as_str() {
                            "~" => BinaryOperator::PGRegexMatch,
                            "!~" => BinaryOperator::PGRegexNotMatch,
                            "~*" => BinaryOperator::PGRegexIMatch,
                            "!~*" => BinaryOperator::PGRegexNotIMatch,
                            "=" => BinaryOperator::Eq,
                            "<>" => BinaryOperator::NotEq,
                            "<" => BinaryOperator::Lt,
                            "<=" => BinaryOperator::LtEq,
                            ">" => BinaryOperator::Gt,
                            ">=" => BinaryOperator::GtEq,
                            other => {
                                return Err(SqlError::unsupported(format!("operator {other}")));
                            }
                        };
                        let plain = A::BinaryOp {
                            left: left.clone(),
                            op: named,
                            right: right.clone(),
                        };
                        return self.expr(&plain, scope, g);
                    }
                    other => return Err(SqlError::unsupported(format!("operator {other}"))),
                };
                let e = Expr::Binary(op, Box::new(l), Box::new(r));
                let arithmetic = matches!(
                    op,
                    BinOp::Plus | BinOp::Minus | BinOp::Multiply | BinOp::Divide | BinOp::Modulo
                );
                if arithmetic {
                    (narrowed(e, ty), ty)
                } else {
                    (e, ty)
                }
            }
            // Text compares by code point here (every collation is C's): a COLLATE changes
            // nothing.
            A::Collate { expr, .. } => self.expr(expr, scope, g)?,
            // extract(field FROM x): a numeric.
            A::Extract { field, expr, .. } => {
                let (x, ty) = self.expr(expr, scope, g)?;
                let x = if ty == SqlType::Text {
                    Expr::Cast(Box::new(x), SqlType::TimestampTz)
                } else {
                    x
                };
                let name = Expr::Literal(Datum::Text(field.to_string().to_lowercase()));
                (
                    Expr::Func(Func::Extract, vec![name, x]),
                    SqlType::Numeric(None),
                )
            }
            A::IsNull(x) | A::IsNotNull(x) => {
                let (x, _) = self.expr(x, scope, g)?;
                (
                    Expr::IsNull(Box::new(x), matches!(e, A::IsNotNull(_))),
                    SqlType::Bool,
                )
            }
            A::IsTrue(x) | A::IsFalse(x) | A::IsNotTrue(x) | A::IsNotFalse(x) => {
                // x IS TRUE is never NULL: coalesce(x = value, false), negated as asked.
                let (x, _) = self.expr(x, scope, g)?;
                let value = matches!(e, A::IsTrue(_) | A::IsNotTrue(_));
                let test = Expr::Func(
                    Func::Coalesce,
                    vec![
                        Expr::Binary(
                            BinOp::Eq,
                            Box::new(x),
                            Box::new(Expr::Literal(Datum::Bool(value))),
                        ),
                        Expr::Literal(Datum::Bool(false)),
                    ],
                );
                let negated = matches!(e, A::IsNotTrue(_) | A::IsNotFalse(_));
                (
                    if negated {
                        Expr::Not(Box::new(test))
                    } else {
                        test
                    },
                    SqlType::Bool,
                )
            }
            A::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let (x, ty) = self.expr(expr, scope, g)?;
                let (lo, _) = self.expr(low, scope, g)?;
                let (hi, _) = self.expr(high, scope, g)?;
                self.infer(&lo, ty);
                self.infer(&hi, ty);
                let (lo, hi) = (literal_as(lo, ty)?, literal_as(hi, ty)?);
                (
                    Expr::Between {
                        expr: Box::new(x),
                        low: Box::new(lo),
                        high: Box::new(hi),
                        negated: *negated,
                    },
                    SqlType::Bool,
                )
            }
            A::In {
                expr,
                target: ast::InTarget::List(list),
                negated,
                ..
            } if let Some(row) = super::row_values::row_items(expr) => {
                self.expr(&super::row_values::in_list(row, list, *negated)?, scope, g)?
            }
            A::In {
                expr,
                target: ast::InTarget::List(list),
                negated,
                ..
            } => {
                let (x, ty) = self.expr(expr, scope, g)?;
                let mut items = Vec::with_capacity(list.len());
                for item in list {
                    let (item, _) = self.expr(item, scope, g)?;
                    self.infer(&item, ty);
                    items.push(literal_as(item, ty)?);
                }
                (
                    Expr::InList {
                        expr: Box::new(x),
                        list: items,
                        negated: *negated,
                    },
                    SqlType::Bool,
                )
            }
            A::Like {
                negated,
                any: false,
                expr,
                pattern,
                escape_char: None,
            }
            | A::ILike {
                negated,
                any: false,
                expr,
                pattern,
                escape_char: None,
            } => {
                let op = match (matches!(e, A::ILike { .. }), *negated) {
                    (false, false) => BinOp::Like,
                    (false, true) => BinOp::NotLike,
                    (true, false) => BinOp::ILike,
                    (true, true) => BinOp::NotILike,
                };
                self.like(op, expr, pattern, scope, g)?
            }
            // TRIM([LEADING | TRAILING | BOTH] [characters] FROM s): ltrim, rtrim or btrim.
            A::Trim {
                expr,
                trim_where,
                trim_what,
                trim_characters: None,
            } => {
                let name = match trim_where {
                    Some(ast::TrimWhereField::Leading) => "ltrim",
                    Some(ast::TrimWhereField::Trailing) => "rtrim",
                    _ => "btrim",
                };
                let (x, t) = self.expr(expr, scope, g)?;
                let (mut args, mut types) = (vec![x], vec![t]);
                if let Some(what) = trim_what {
                    let (w, t) = self.expr(what, scope, g)?;
                    args.push(w);
                    types.push(t);
                }
                self.call(name, args, types)?
            }
            // position(substring IN s): strpos(s, substring).
            A::Position { expr, r#in } => {
                let (sub, st) = self.expr(expr, scope, g)?;
                let (s, t) = self.expr(r#in, scope, g)?;
                self.call("strpos", vec![s, sub], vec![t, st])?
            }
            A::Cast {
                expr, data_type, ..
            } => {
                let ty = SqlType::from_ast(data_type)?;
                // ARRAY[]::integer[]: an empty array of the type cast to.
                if let (A::Array(a), SqlType::Array(_)) = (expr.as_ref(), ty)
                    && a.elem.is_empty()
                {
                    return Ok((Expr::Literal(Datum::Array(Vec::new())), ty));
                }
                let (x, from) = self.expr(expr, scope, g)?;
                // A parameter cast to regclass or regtype is a name.
                let reg = matches!(
                    ty,
                    SqlType::RegClass | SqlType::RegType | SqlType::RegNamespace
                );
                self.infer(&x, if reg { SqlType::Text } else { ty });
                let x = match self.reg_cast(x, from, ty)? {
                    Ok(named) => return Ok((named, ty)),
                    Err(x) => x,
                };
                if super::json::is_document(from) || super::json::is_document(ty) {
                    return Ok((self.json_cast(x, from, ty)?, ty));
                }
                // An explicit cast to a bounded string cuts the value to its length, where
                // assigning the value is an error (22001), as PostgreSQL's casts do.
                let x = match ty {
                    SqlType::VarChar(n) | SqlType::Char(n) => Expr::Func(
                        Func::Substr,
                        vec![
                            Expr::Cast(Box::new(x), SqlType::Text),
                            Expr::Literal(Datum::Int(1)),
                            Expr::Literal(Datum::Int(n.into())),
                        ],
                    ),
                    _ => x,
                };
                (Expr::Cast(Box::new(x), ty), ty)
            }
            A::Interval(iv) => {
                let text = match &*iv.value {
                    A::Value(v) => match &v.value {
                        Value::SingleQuotedString(s) => s.clone(),
                        other => other.to_string(),
                    },
                    other => return Err(SqlError::unsupported(format!("interval {other}"))),
                };
                // `INTERVAL '3' DAY`: the unit follows the number.
                let text = match &iv.leading_field {
                    Some(unit) if iv.last_field.is_none() => format!("{text} {unit}"),
                    None => text,
                    Some(_) => return Err(SqlError::unsupported("an interval's field range")),
                };
                let ty = SqlType::Interval;
                (Expr::Literal(Datum::parse(&text, ty)?), ty)
            }
            A::TypedString(ts) => {
                let ty = SqlType::from_ast(&ts.data_type)?;
                let text = match &ts.value.value {
                    Value::SingleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                };
                (Expr::Literal(Datum::parse(&text, ty)?), ty)
            }
            A::Function(f) => self.function(f, scope, g)?,
            A::Ceil {
                expr,
                field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
            }
            | A::Floor {
                expr,
                field: ast::CeilFloorKind::DateTimeField(ast::DateTimeField::NoDateTime),
            } => {
                let name = if matches!(e, A::Ceil { .. }) {
                    "ceil"
                } else {
                    "floor"
                };
                let (x, t) = self.expr(expr, scope, g)?;
                self.call(name, vec![x], vec![t])?
            }
            A::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let (x, t) = self.expr(expr, scope, g)?;
                let mut args = vec![x];
                let mut types = vec![t];
                for e in [substring_from, substring_for].into_iter().flatten() {
                    let (x, t) = self.expr(e, scope, g)?;
                    self.infer(&x, SqlType::Int4);
                    args.push(x);
                    types.push(t);
                }
                if t == SqlType::Bytea {
                    return self.call("substring", args, types);
                }
                if args.len() == 1 {
                    args.push(Expr::Literal(Datum::Int(1)));
                }
                (Expr::Func(Func::Substr, args), SqlType::Text)
            }
            A::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let operand = match operand {
                    Some(o) => Some(Box::new(self.expr(o, scope, g)?.0)),
                    None => None,
                };
                let mut conds = Vec::with_capacity(conditions.len());
                let mut results = Vec::with_capacity(conditions.len() + 1);
                for c in conditions {
                    conds.push(self.expr(&c.condition, scope, g)?.0);
                    results.push(self.expr(&c.result, scope, g)?);
                }
                if let Some(e) = else_result {
                    results.push(self.expr(e, scope, g)?);
                }
                let (mut results, ty) = unified(results);
                let otherwise = if else_result.is_some() {
                    results.pop().map(Box::new)
                } else {
                    None
                };
                (
                    Expr::Case {
                        operand,
                        whens: conds.into_iter().zip(results).collect(),
                        otherwise,
                    },
                    ty,
                )
            }
            // x op ANY (ARRAY[a, b, ...]): x op a OR x op b ...; ALL: AND (an empty array: false
            // for ANY, true for ALL).
            A::AnyOp {
                left,
                compare_op,
                right,
                ..
            }
            | A::AllOp {
                left,
                compare_op,
                right,
            } if let A::Array(array) = right.as_ref() => {
                let any = matches!(e, A::AnyOp { .. });
                let joined = array
                    .elem
                    .iter()
                    .map(|item| A::BinaryOp {
                        left: left.clone(),
                        op: compare_op.clone(),
                        right: Box::new(item.clone()),
                    })
                    .reduce(|a, b| A::BinaryOp {
                        left: Box::new(a),
                        op: if any {
                            BinaryOperator::Or
                        } else {
                            BinaryOperator::And
                        },
                        right: Box::new(b),
                    });
                match joined {
                    Some(chain) => self.expr(&chain, scope, g)?,
                    None => (Expr::Literal(Datum::Bool(!any)), SqlType::Bool),
                }
            }
            A::AnyOp {
                left,
                compare_op,
                right,
                ..
            } if !matches!(right.as_ref(), A::Subquery(_)) => {
                self.quantified((left, compare_op, right), false, scope, g)?
            }
            A::AllOp {
                left,
                compare_op,
                right,
            } if !matches!(right.as_ref(), A::Subquery(_)) => {
                self.quantified((left, compare_op, right), true, scope, g)?
            }
            A::Array(array) => self.array_constructor(&array.elem, scope, g)?,
            A::CompoundFieldAccess { root, access_chain } => {
                self.subscript(root, access_chain, scope, g)?
            }
            A::Subquery(_)
            | A::Exists { .. }
            | A::In {
                target: ast::InTarget::Subquery(_),
                ..
            } => self.subquery(e, scope, g)?,
            other => return Err(SqlError::unsupported(format!("expression {other}"))),
        })
    }

    /// A literal.
    pub fn value(&mut self, v: &Value) -> Result<(Expr, SqlType)> {
        Ok(match v {
            Value::Number(text, _) => number(text)?,
            Value::SingleQuotedString(s)
            | Value::EscapedStringLiteral(s)
            | Value::DoubleQuotedString(s) => {
                (Expr::Literal(Datum::Text(s.clone())), SqlType::Text)
            }
            Value::DollarQuotedString(s) => {
                (Expr::Literal(Datum::Text(s.value.clone())), SqlType::Text)
            }
            Value::Boolean(b) => (Expr::Literal(Datum::Bool(*b)), SqlType::Bool),
            Value::Null => (Expr::Literal(Datum::Null), SqlType::Text),
            Value::Placeholder(p) => {
                let n: usize = p
                    .strip_prefix('$')
                    .and_then(|n| n.parse().ok())
                    .filter(|n| (1..=65_535).contains(n))
                    .ok_or_else(|| SqlError::syntax(format!("invalid parameter {p}")))?;
                if self.params.len() < n {
                    self.params.resize(n, None);
                }
                let ty = self.param_type(n - 1).unwrap_or(SqlType::Text);
                (Expr::Param(n - 1), ty)
            }
            other => return Err(SqlError::unsupported(format!("literal {other}"))),
        })
    }
}

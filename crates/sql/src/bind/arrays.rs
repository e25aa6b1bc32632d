//! Binding arrays: `ARRAY[...]`, `ARRAY(SELECT ...)`, `a[i]`, `x op ANY/ALL (array)` and the
//! array functions, with their element types known when bound.

use sqlparser::ast;

use crate::bind::{Binder, Grouping, ScopeColumn, unified};
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::{BinOp, Expr, Func};
use crate::plan::SetFunc;
use crate::values::types::{ArrayElem, SqlType};

/// The array type of elements of `ty` (42704 for a type that has none here).
pub(crate) fn array_of(ty: SqlType) -> Result<SqlType> {
    ArrayElem::of(ty)
        .map(SqlType::Array)
        .ok_or_else(|| SqlError::unsupported(format!("an array of {}", ty.name())))
}

impl Binder<'_> {
    /// `ARRAY[a, b, ...]`: its elements of one type.
    pub(crate) fn array_constructor(
        &mut self,
        items: &[ast::Expr],
        scope: &[ScopeColumn],
        g: &mut Option<&mut Grouping>,
    ) -> Result<(Expr, SqlType)> {
        if items.is_empty() {
            return Err(SqlError::new(
                sqlstate::INDETERMINATE_DATATYPE,
                "cannot determine type of empty array",
            )
            .with_hint("Explicitly cast to the desired type, for example ARRAY[]::integer[]."));
        }
        let mut bound = Vec::with_capacity(items.len());
        for item in items {
            bound.push(self.expr(item, scope, g)?);
        }
        let (elements, ty) = unified(bound);
        for e in &elements {
            self.infer(e, ty);
        }
        Ok((Expr::Func(Func::ArrayBuild, elements), array_of(ty)?))
    }

    /// `left op ANY (array)` or (`all`) `op ALL`, over an array expression (a parameter is
    /// taken to be an array of `left`'s type).
    pub(crate) fn quantified(
        &mut self,
        (left, op, right): (&ast::Expr, &ast::BinaryOperator, &ast::Expr),
        all: bool,
        scope: &[ScopeColumn],
        g: &mut Option<&mut Grouping>,
    ) -> Result<(Expr, SqlType)> {
        let (l, lt) = self.expr(left, scope, g)?;
        let (r, rt) = self.expr(right, scope, g)?;
        let elem = match rt {
            SqlType::Array(e) => e.ty(),
            _ if matches!(r, Expr::Param(_)) || crate::bind::is_unknown(&r) => lt,
            other => {
                return Err(SqlError::new(
                    sqlstate::WRONG_OBJECT_TYPE,
                    format!(
                        "op ANY/ALL (array) requires array on right side, not {}",
                        other.name()
                    ),
                ));
            }
        };
        self.infer(&l, elem);
        self.infer(&r, array_of(elem)?);
        // An untyped literal on the right is an array literal of the left's type.
        let r = match r {
            Expr::Literal(crate::Datum::Text(s)) => {
                Expr::Literal(crate::Datum::parse(&s, array_of(elem)?)?)
            }
            r => r,
        };
        let op = match op {
            ast::BinaryOperator::Eq => BinOp::Eq,
            ast::BinaryOperator::NotEq => BinOp::NotEq,
            ast::BinaryOperator::Lt => BinOp::Lt,
            ast::BinaryOperator::LtEq => BinOp::LtEq,
            ast::BinaryOperator::Gt => BinOp::Gt,
            ast::BinaryOperator::GtEq => BinOp::GtEq,
            other => return Err(SqlError::unsupported(format!("{other} ANY/ALL"))),
        };
        Ok((
            Expr::Quantified {
                op,
                left: Box::new(l),
                array: Box::new(r),
                all,
            },
            SqlType::Bool,
        ))
    }

    /// `a[i]` (one subscript; slices are refused).
    pub(crate) fn subscript(
        &mut self,
        root: &ast::Expr,
        chain: &[ast::AccessExpr],
        scope: &[ScopeColumn],
        g: &mut Option<&mut Grouping>,
    ) -> Result<(Expr, SqlType)> {
        let [ast::AccessExpr::Subscript(ast::Subscript::Index { index })] = chain else {
            return Err(SqlError::unsupported(format!(
                "this access to {root} (one subscript is taken)"
            )));
        };
        let (a, at) = self.expr(root, scope, g)?;
        let SqlType::Array(elem) = at else {
            return Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!(
                    "cannot subscript type {} because it does not support subscripting",
                    at.name()
                ),
            ));
        };
        let (i, _) = self.expr(index, scope, g)?;
        self.infer(&i, SqlType::Int4);
        Ok((
            Expr::Func(
                Func::ArrayElement,
                vec![a, Expr::Cast(Box::new(i), SqlType::Int8)],
            ),
            elem.ty(),
        ))
    }

    /// A call of set-returning function `func` over `args`: the bound arguments and the type
    /// of the values it makes.
    pub(crate) fn set_function(
        &mut self,
        func: SetFunc,
        args: &[ast::Expr],
        scope: &[ScopeColumn],
    ) -> Result<(Vec<Expr>, SqlType)> {
        let mut bound = Vec::with_capacity(args.len());
        let mut types = Vec::with_capacity(args.len());
        for a in args {
            let (x, t) = self.expr(a, scope, &mut None)?;
            bound.push(x);
            types.push(t);
        }
        let wrong = || {
            SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!(
                    "function {}({}) does not exist",
                    func.name(),
                    types
                        .iter()
                        .map(|t| t.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        };
        let ty = match func {
            SetFunc::Unnest => match types.as_slice() {
                [SqlType::Array(e)] => e.ty(),
                [SqlType::Text] => {
                    return Err(SqlError::new(
                        sqlstate::INDETERMINATE_DATATYPE,
                        "could not determine polymorphic type because input has type unknown",
                    ));
                }
                _ => return Err(wrong()),
            },
            SetFunc::JsonArrayElements { jsonb, text } => {
                let doc = if jsonb { SqlType::Jsonb } else { SqlType::Json };
                match types.as_slice() {
                    [t] if *t == doc || crate::bind::is_unknown(&bound[0]) => {
                        self.infer(&bound[0], doc);
                        bound[0] = Expr::Cast(Box::new(bound[0].clone()), doc);
                        if text { SqlType::Text } else { doc }
                    }
                    _ => return Err(wrong()),
                }
            }
            SetFunc::JsonbObjectKeys => match types.as_slice() {
                [t] if *t == SqlType::Jsonb || crate::bind::is_unknown(&bound[0]) => {
                    self.infer(&bound[0], SqlType::Jsonb);
                    bound[0] = Expr::Cast(Box::new(bound[0].clone()), SqlType::Jsonb);
                    SqlType::Text
                }
                _ => return Err(wrong()),
            },
            SetFunc::GenerateSubscripts => match types.as_slice() {
                [SqlType::Array(_), _] => {
                    bound[1] = Expr::Cast(Box::new(bound[1].clone()), SqlType::Int8);
                    SqlType::Int4
                }
                _ => return Err(wrong()),
            },
            SetFunc::PartitionAncestors => match types.as_slice() {
                [_] => {
                    self.infer(&bound[0], SqlType::RegClass);
                    bound[0] = Expr::Cast(Box::new(bound[0].clone()), SqlType::RegClass);
                    SqlType::RegClass
                }
                _ => return Err(wrong()),
            },
            SetFunc::GenerateSeries => {
                if !(2..=3).contains(&bound.len()) {
                    return Err(wrong());
                }
                let ty = types[..2]
                    .iter()
                    .copied()
                    .reduce(crate::bind::arith_type)
                    .unwrap_or(SqlType::Int4);
                let ty = match ty {
                    SqlType::Text => SqlType::Int4,
                    t @ (SqlType::Int2 | SqlType::Int4) => {
                        if t == SqlType::Int2 {
                            SqlType::Int4
                        } else {
                            t
                        }
                    }
                    t @ (SqlType::Int8
                    | SqlType::Numeric(_)
                    | SqlType::Timestamp
                    | SqlType::TimestampTz) => t,
                    _ => return Err(wrong()),
                };
                let step_ty = if crate::bind::is_timestamp(ty) {
                    SqlType::Interval
                } else {
                    ty
                };
                for (i, x) in bound.iter_mut().enumerate() {
                    let want = if i == 2 { step_ty } else { ty };
                    self.infer(x, want);
                    *x = Expr::Cast(Box::new(x.clone()), want);
                }
                ty
            }
        };
        Ok((bound, ty))
    }

    /// Array function `name` (see [`is_array_function`]).
    pub(crate) fn array_function(
        &mut self,
        name: &str,
        mut args: Vec<Expr>,
        types: &[SqlType],
    ) -> Result<(Expr, SqlType)> {
        let elem_of = |i: usize| match types.get(i) {
            Some(SqlType::Array(e)) => Some(e.ty()),
            _ => None,
        };
        let (func, arity, ty) = match name {
            "array_length" => (Func::ArrayLength, 2..=2, SqlType::Int4),
            "array_upper" => (Func::ArrayUpper, 2..=2, SqlType::Int4),
            "array_lower" => (Func::ArrayLower, 2..=2, SqlType::Int4),
            "cardinality" => (Func::Cardinality, 1..=1, SqlType::Int4),
            "array_to_string" => (Func::ArrayToString, 2..=3, SqlType::Text),
            "string_to_array" => (Func::StringToArray, 2..=3, SqlType::Array(ArrayElem::Text)),
            "array_position" => (Func::ArrayPosition, 2..=2, SqlType::Int4),
            "array_append" => {
                let ty = elem_of(0)
                    .or(types.get(1).copied())
                    .unwrap_or(SqlType::Text);
                (Func::ArrayAppend, 2..=2, array_of(ty)?)
            }
            "array_prepend" => {
                let ty = elem_of(1)
                    .or(types.first().copied())
                    .unwrap_or(SqlType::Text);
                (Func::ArrayPrepend, 2..=2, array_of(ty)?)
            }
            "array_cat" => {
                let ty = elem_of(0).or(elem_of(1)).unwrap_or(SqlType::Text);
                (Func::ArrayCat, 2..=2, array_of(ty)?)
            }
            _ => unreachable!("{name} is not an array function"),
        };
        if !arity.contains(&args.len()) {
            return Err(SqlError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!("function {name} does not take {} arguments", args.len()),
            ));
        }
        // Dimension arguments are integers.
        if matches!(
            func,
            Func::ArrayLength | Func::ArrayUpper | Func::ArrayLower
        ) {
            args[1] = Expr::Cast(Box::new(args[1].clone()), SqlType::Int8);
        }
        Ok((Expr::Func(func, args), ty))
    }
}

/// Whether `name` is an array function ([`Binder::array_function`] binds it).
pub(crate) fn is_array_function(name: &str) -> bool {
    matches!(
        name,
        "array_length"
            | "array_upper"
            | "array_lower"
            | "cardinality"
            | "array_to_string"
            | "string_to_array"
            | "array_position"
            | "array_append"
            | "array_prepend"
            | "array_cat"
    )
}

//! Binding what takes or makes `bytea`: its operators (comparisons and `||` with another bytea
//! or an untyped value) and functions (`length`, `octet_length`, `md5`, `encode`, `decode`,
//! `substring`, `get_byte`, `convert_to`, `convert_from`).
//!
//! Must never let a bytea reach an operator or function of text: its held form is hex text
//! (see `values::bytea`), so `upper(b)` or `b = 'x'::text` would answer about the hex digits
//! where PostgreSQL has no such operator or function (42883).

use sqlparser::ast::BinaryOperator;

use crate::bind::Binder;
use crate::bind::typing::{is_unknown, literal_as, no_function, no_operator, untyped};
use crate::error::Result;
use crate::expr::{BinOp, ByteaFunc, Expr, Func};
use crate::values::datum::Datum;
use crate::values::types::SqlType;

/// Whether `e` of type `ty` may stand where a bytea is wanted: a bytea, or a value of no
/// type yet (an untyped literal, a parameter) that becomes one.
fn takes_bytea(e: &Expr, ty: SqlType) -> bool {
    ty == SqlType::Bytea || untyped(e, ty)
}

impl Binder<'_> {
    /// `l op r` where either side is a bytea: a comparison or `||` of two bytea values.
    pub(super) fn bytea_operator(
        &mut self,
        op: &BinaryOperator,
        (l, lt): (Expr, SqlType),
        (r, rt): (Expr, SqlType),
    ) -> Result<(Expr, SqlType)> {
        if !takes_bytea(&l, lt) || !takes_bytea(&r, rt) {
            return Err(no_operator(lt, op, rt));
        }
        for e in [&l, &r] {
            self.infer(e, SqlType::Bytea);
        }
        let (l, r) = (
            Box::new(literal_as(l, SqlType::Bytea)?),
            Box::new(literal_as(r, SqlType::Bytea)?),
        );
        let bin = |op| Ok((Expr::Binary(op, l.clone(), r.clone()), SqlType::Bool));
        match op {
            BinaryOperator::Eq => bin(BinOp::Eq),
            BinaryOperator::NotEq => bin(BinOp::NotEq),
            BinaryOperator::Lt => bin(BinOp::Lt),
            BinaryOperator::LtEq => bin(BinOp::LtEq),
            BinaryOperator::Gt => bin(BinOp::Gt),
            BinaryOperator::GtEq => bin(BinOp::GtEq),
            BinaryOperator::StringConcat => Ok((
                Expr::Func(Func::Bytea(ByteaFunc::Concat), vec![*l, *r]),
                SqlType::Bytea,
            )),
            _ => Err(no_operator(lt, op, rt)),
        }
    }

    /// Function `name` over `args` if it is one of bytea's (or any function given a bytea:
    /// those of text have no such signature); `None` for every other call.
    pub(super) fn bytea_call(
        &mut self,
        name: &str,
        args: &mut Vec<Expr>,
        types: &[SqlType],
    ) -> Result<Option<(Expr, SqlType)>> {
        let any_bytea = types.contains(&SqlType::Bytea);
        let (func, ty, wanted): (ByteaFunc, SqlType, &[SqlType]) = match name {
            "length" | "octet_length" if any_bytea => {
                (ByteaFunc::Length, SqlType::Int4, &[SqlType::Bytea])
            }
            "md5" if any_bytea => (ByteaFunc::Md5, SqlType::Text, &[SqlType::Bytea]),
            // md5 of text hashes its UTF-8 bytes: md5(convert_to(s, 'UTF8')).
            "md5" if args.len() == 1 && types[0].is_string() => {
                self.infer(&args[0], SqlType::Text);
                let utf8 = Expr::Literal(Datum::Text("UTF8".into()));
                let bytes = Expr::Func(
                    Func::Bytea(ByteaFunc::ConvertTo),
                    vec![std::mem::take(args).remove(0), utf8],
                );
                return Ok(Some((
                    Expr::Func(Func::Bytea(ByteaFunc::Md5), vec![bytes]),
                    SqlType::Text,
                )));
            }
            "encode" => (
                ByteaFunc::Encode,
                SqlType::Text,
                &[SqlType::Bytea, SqlType::Text],
            ),
            "decode" => (
                ByteaFunc::Decode,
                SqlType::Bytea,
                &[SqlType::Text, SqlType::Text],
            ),
            "substr" | "substring" if any_bytea => (
                ByteaFunc::Substr,
                SqlType::Bytea,
                &[SqlType::Bytea, SqlType::Int4, SqlType::Int4],
            ),
            "get_byte" => (
                ByteaFunc::GetByte,
                SqlType::Int4,
                &[SqlType::Bytea, SqlType::Int4],
            ),
            "convert_to" => (
                ByteaFunc::ConvertTo,
                SqlType::Bytea,
                &[SqlType::Text, SqlType::Text],
            ),
            "convert_from" => (
                ByteaFunc::ConvertFrom,
                SqlType::Text,
                &[SqlType::Bytea, SqlType::Text],
            ),
            // Functions of any type take a bytea as they take any value.
            _ if super::typing::takes_any_type(name) => return Ok(None),
            _ if any_bytea => return Err(no_function(name, types)),
            _ => return Ok(None),
        };
        let arity = match func {
            ByteaFunc::Substr => 2..=3,
            _ => wanted.len()..=wanted.len(),
        };
        let fits = |(e, (t, w)): (&Expr, (&SqlType, &SqlType))| match w {
            SqlType::Bytea => takes_bytea(e, *t),
            SqlType::Int4 => {
                matches!(t, SqlType::Int2 | SqlType::Int4 | SqlType::Int8) || is_unknown(e)
            }
            // Text: any string, or an untyped value.
            _ => t.is_string(),
        };
        if !arity.contains(&args.len()) || !args.iter().zip(types.iter().zip(wanted)).all(fits) {
            return Err(no_function(name, types));
        }
        for ((a, t), w) in args.iter_mut().zip(types).zip(wanted) {
            self.infer(a, *w);
            let e = std::mem::replace(a, Expr::Literal(Datum::Null));
            *a = match w {
                SqlType::Bytea => literal_as(e, *w)?,
                SqlType::Int4 if *t == SqlType::Text => Expr::Cast(Box::new(e), *w),
                _ => e,
            };
        }
        Ok(Some((
            Expr::Func(Func::Bytea(func), std::mem::take(args)),
            ty,
        )))
    }
}

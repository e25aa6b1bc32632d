//! Binding what takes or makes `json` and `jsonb`: the operators (`->`, `->>`, `#>`, `#>>`
//! on both; `@>`, `<@`, `?`, `?|`, `?&`, `||`, `-`, `=` on jsonb), the functions (`to_json`,
//! `json_build_object`/`_array`, `json_typeof`, `json_array_length`, `json_extract_path`
//! and their `jsonb` twins) and casts out of a document.
//!
//! Must never let a document reach an operator or function of text as if it were text (its
//! held form is text, see `values::json`): PostgreSQL has no such operator (42883), and jsonb
//! has no ordering here (0A000) rather than the text's.

use sqlparser::ast::BinaryOperator;

use crate::bind::Binder;
use crate::bind::typing::{literal_as, no_function, no_operator, untyped};
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::{Expr, Func, JsonFunc};
use crate::values::datum::Datum;
use crate::values::types::{ArrayElem, SqlType};

/// Whether `ty` is a document type.
pub(crate) fn is_document(ty: SqlType) -> bool {
    matches!(ty, SqlType::Json | SqlType::Jsonb)
}

fn func(f: JsonFunc, args: Vec<Expr>) -> Expr {
    Expr::Func(Func::Json(f), args)
}

const TEXT_ARRAY: SqlType = SqlType::Array(ArrayElem::Text);

impl Binder<'_> {
    /// `e` as a value of `ty`: an untyped one takes the type (a literal is read now).
    fn as_type(&mut self, e: Expr, ty: SqlType) -> Result<Expr> {
        self.infer(&e, ty);
        literal_as(e, ty)
    }

    /// `l op r` where a side is a document; the operands given back where the operator is
    /// text's (`json || text` concatenates text, as PostgreSQL's `anynonarray || text`).
    pub(super) fn json_operator(
        &mut self,
        op: &BinaryOperator,
        (l, lt): (Expr, SqlType),
        (r, rt): (Expr, SqlType),
    ) -> Result<std::result::Result<(Expr, SqlType), (Expr, Expr)>> {
        use BinaryOperator as B;
        let jsonb_pair = |l: &Expr, r: &Expr| {
            (lt == SqlType::Jsonb || untyped(l, lt)) && (rt == SqlType::Jsonb || untyped(r, rt))
        };
        let integer = matches!(rt, SqlType::Int2 | SqlType::Int4 | SqlType::Int8);
        let key = rt.is_string() || untyped(&r, rt);
        let bound = match op {
            B::Arrow | B::LongArrow if is_document(lt) && (integer || key) => {
                let text = *op == B::LongArrow;
                let r = if integer {
                    r
                } else {
                    self.as_type(r, SqlType::Text)?
                };
                let f = JsonFunc::Get {
                    raw: lt == SqlType::Json,
                    text,
                    index: integer,
                };
                (func(f, vec![l, r]), if text { SqlType::Text } else { lt })
            }
            B::HashArrow | B::HashLongArrow
                if is_document(lt) && (rt == TEXT_ARRAY || untyped(&r, rt)) =>
            {
                let text = *op == B::HashLongArrow;
                let r = self.as_type(r, TEXT_ARRAY)?;
                let f = JsonFunc::GetPath {
                    raw: lt == SqlType::Json,
                    text,
                };
                (func(f, vec![l, r]), if text { SqlType::Text } else { lt })
            }
            B::AtArrow | B::ArrowAt if jsonb_pair(&l, &r) => {
                let (l, r) = (
                    self.as_type(l, SqlType::Jsonb)?,
                    self.as_type(r, SqlType::Jsonb)?,
                );
                let args = if *op == B::AtArrow {
                    vec![l, r]
                } else {
                    vec![r, l]
                };
                (func(JsonFunc::Contains, args), SqlType::Bool)
            }
            B::Question if lt == SqlType::Jsonb && key => {
                let r = self.as_type(r, SqlType::Text)?;
                (func(JsonFunc::Exists, vec![l, r]), SqlType::Bool)
            }
            B::QuestionPipe | B::QuestionAnd
                if lt == SqlType::Jsonb && (rt == TEXT_ARRAY || untyped(&r, rt)) =>
            {
                let r = self.as_type(r, TEXT_ARRAY)?;
                let f = match op {
                    B::QuestionPipe => JsonFunc::ExistsAny,
                    _ => JsonFunc::ExistsAll,
                };
                (func(f, vec![l, r]), SqlType::Bool)
            }
            B::StringConcat if jsonb_pair(&l, &r) => {
                let (l, r) = (
                    self.as_type(l, SqlType::Jsonb)?,
                    self.as_type(r, SqlType::Jsonb)?,
                );
                (func(JsonFunc::Concat, vec![l, r]), SqlType::Jsonb)
            }
            B::StringConcat => return Ok(Err((l, r))),
            B::Minus if lt == SqlType::Jsonb && (integer || key || rt == TEXT_ARRAY) => {
                let r = if integer {
                    r
                } else {
                    self.as_type(r, SqlType::Text)?
                };
                let f = JsonFunc::Delete { index: integer };
                (func(f, vec![l, r]), SqlType::Jsonb)
            }
            B::HashMinus if lt == SqlType::Jsonb && (rt == TEXT_ARRAY || untyped(&r, rt)) => {
                let r = self.as_type(r, TEXT_ARRAY)?;
                (func(JsonFunc::DeletePath, vec![l, r]), SqlType::Jsonb)
            }
            // Compared as documents: numbers by value (`1.0` = `1.00`), which their canonical
            // texts are not.
            B::Eq | B::NotEq if jsonb_pair(&l, &r) => {
                let (l, r) = (
                    self.as_type(l, SqlType::Jsonb)?,
                    self.as_type(r, SqlType::Jsonb)?,
                );
                let equal = func(JsonFunc::Equal, vec![l, r]);
                match op {
                    B::Eq => (equal, SqlType::Bool),
                    _ => (Expr::Not(Box::new(equal)), SqlType::Bool),
                }
            }
            B::Lt | B::LtEq | B::Gt | B::GtEq if jsonb_pair(&l, &r) => {
                return Err(SqlError::unsupported("ordering jsonb values"));
            }
            _ => return Err(no_operator(lt, op, rt)),
        };
        Ok(Ok(bound))
    }

    /// Function `name` over `args` if it is one of the documents' (or any function given a
    /// document: those of text have no such signature); `None` for every other call.
    pub(super) fn json_call(
        &mut self,
        name: &str,
        args: &mut Vec<Expr>,
        types: &[SqlType],
    ) -> Result<Option<(Expr, SqlType)>> {
        let (jsonb, rest) = match name {
            "to_json" => (false, "to"),
            "to_jsonb" => (true, "to"),
            n => match (n.strip_prefix("jsonb_"), n.strip_prefix("json_")) {
                (Some(rest), _) if rest != "to" => (true, rest),
                (None, Some(rest)) if rest != "to" => (false, rest),
                _ => (false, ""),
            },
        };
        let known = match rest {
            "to" | "typeof" | "array_length" => args.len() == 1,
            "strip_nulls" | "pretty" => jsonb && args.len() == 1,
            "set" => jsonb && (3..=4).contains(&args.len()),
            "extract_path" | "extract_path_text" => !args.is_empty(),
            "build_object" | "build_array" => true,
            _ => false,
        };
        if !known {
            if types.iter().any(|t| is_document(*t)) && !super::typing::takes_any_type(name) {
                return Err(no_function(name, types));
            }
            return Ok(None);
        }
        let doc = if jsonb { SqlType::Jsonb } else { SqlType::Json };
        let args = std::mem::take(args);
        let bound = match rest {
            "to" => {
                let ty = self.value_type(&args[0], types[0]);
                (func(JsonFunc::ToJson(ty), args), doc)
            }
            "build_object" | "build_array" => {
                let object = rest == "build_object";
                if object && !args.len().is_multiple_of(2) {
                    return Err(SqlError::new(
                        sqlstate::INVALID_PARAMETER_VALUE,
                        "argument list must have even number of elements",
                    ));
                }
                let mut built = Vec::with_capacity(args.len());
                for (i, (a, t)) in args.into_iter().zip(types).enumerate() {
                    built.push(if object && i % 2 == 0 {
                        self.as_type(a, SqlType::Text)?
                    } else {
                        let ty = self.value_type(&a, *t);
                        func(JsonFunc::ToJson(ty), vec![a])
                    });
                }
                let f = if object {
                    JsonFunc::BuildObject
                } else {
                    JsonFunc::BuildArray
                };
                (func(f, built), doc)
            }
            "typeof" | "array_length" | "strip_nulls" | "pretty" | "set" => {
                let mut a = self.document_argument(name, args, types, doc)?;
                if rest == "set" {
                    let wanted = [TEXT_ARRAY, SqlType::Jsonb, SqlType::Bool];
                    for ((e, t), w) in a[1..].iter_mut().zip(&types[1..]).zip(wanted) {
                        if *t != w && !untyped(e, *t) {
                            return Err(no_function(name, types));
                        }
                        let x = std::mem::replace(e, Expr::Literal(Datum::Null));
                        *e = self.as_type(x, w)?;
                    }
                }
                let (f, ty) = match rest {
                    "typeof" => (JsonFunc::TypeOf, SqlType::Text),
                    "array_length" => (JsonFunc::ArrayLength, SqlType::Int4),
                    "set" => (JsonFunc::SetPath, doc),
                    "strip_nulls" => (JsonFunc::StripNulls, doc),
                    _ => (JsonFunc::Pretty, SqlType::Text),
                };
                (func(f, a), ty)
            }
            "extract_path" | "extract_path_text" => {
                let text = rest == "extract_path_text";
                let mut a = self.document_argument(name, args, types, doc)?;
                for p in &mut a[1..] {
                    let e = std::mem::replace(p, Expr::Literal(Datum::Null));
                    *p = self.as_type(e, SqlType::Text)?;
                }
                let f = JsonFunc::GetPath { raw: !jsonb, text };
                (func(f, a), if text { SqlType::Text } else { doc })
            }
            _ => unreachable!("a known function"),
        };
        // A jsonb is held in its canonical spelling: what a builder wrote is read once more.
        Ok(Some(match bound {
            (e, SqlType::Jsonb) if matches!(rest, "to" | "build_object" | "build_array") => {
                (Expr::Cast(Box::new(e), SqlType::Jsonb), SqlType::Jsonb)
            }
            other => other,
        }))
    }

    /// The type `to_json` treats a value as: an untyped one is text.
    fn value_type(&mut self, e: &Expr, ty: SqlType) -> SqlType {
        if untyped(e, ty) {
            self.infer(e, SqlType::Text);
            SqlType::Text
        } else {
            ty
        }
    }

    /// The arguments of a function whose first is a document of type `doc`.
    fn document_argument(
        &mut self,
        name: &str,
        mut args: Vec<Expr>,
        types: &[SqlType],
        doc: SqlType,
    ) -> Result<Vec<Expr>> {
        if types[0] != doc && !untyped(&args[0], types[0]) {
            return Err(no_function(name, types));
        }
        let first = args.remove(0);
        args.insert(0, self.as_type(first, doc)?);
        Ok(args)
    }

    /// `x::to` where `x` (of type `from`) or `to` is a document: the plain cast where it
    /// serves (text to a document reads it, a document to text is its text, json and jsonb
    /// into each other), a jsonb scalar's number or boolean, else 42846.
    pub(super) fn json_cast(&mut self, x: Expr, from: SqlType, to: SqlType) -> Result<Expr> {
        let plain = |x| Ok(Expr::Cast(Box::new(x), to));
        let castable = from.is_string() || is_document(from) || untyped(&x, from);
        match (from, to) {
            _ if is_document(to) && castable => plain(x),
            (_, to) if is_document(to) => Err(cannot_cast(from, to)),
            (_, to) if to.is_string() => plain(x),
            // A jsonb scalar becomes a number or a boolean; numbers into integers through
            // numeric, which rounds as PostgreSQL's casts do.
            (SqlType::Jsonb, to) if to.is_numeric() || to == SqlType::Bool => {
                let scalar = func(JsonFunc::Scalar(to), vec![x]);
                let via = if to == SqlType::Bool {
                    SqlType::Bool
                } else {
                    SqlType::Numeric(None)
                };
                Ok(Expr::Cast(Box::new(Expr::Cast(Box::new(scalar), via)), to))
            }
            _ => Err(cannot_cast(from, to)),
        }
    }
}

/// Refuses to sort by a document: json has no order in PostgreSQL (42883), and jsonb's is
/// not the text's (0A000 here).
pub(crate) fn check_orderable(ty: SqlType) -> Result<()> {
    match ty {
        SqlType::Json => Err(SqlError::new(
            sqlstate::UNDEFINED_FUNCTION,
            "could not identify an ordering operator for type json",
        )),
        SqlType::Jsonb => Err(SqlError::unsupported("ordering jsonb values")),
        _ => Ok(()),
    }
}

fn cannot_cast(from: SqlType, to: SqlType) -> SqlError {
    SqlError::new(
        "42846",
        format!("cannot cast type {} to {}", from.name(), to.name()),
    )
}

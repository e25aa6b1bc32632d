//! Binding what reads the system catalogs: their relations in FROM (`pg_class`,
//! `pg_catalog.pg_class`, `information_schema.tables`), the `reg*` casts, and the catalog's
//! functions (`format_type`, `pg_get_userbyid`, `to_regclass`, ...). Each takes the binder's
//! snapshot of the catalog, which makes the plan good for one execution only.

use sqlparser::ast::{ObjectName, ObjectNamePart};

use crate::bind::{Binder, ident};
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::{Expr, Func, Lookup};
use crate::system::{Schema, Snapshot, SystemRelation, find};
use crate::values::datum::Datum;
use crate::values::types::SqlType;

impl Binder<'_> {
    /// What the system catalogs show, taken now if not yet.
    pub(crate) fn snapshot(&mut self) -> Result<&Snapshot> {
        if self.system.is_none() {
            self.system = Some(Snapshot::take(&self.tables)?);
            self.volatile = true;
        }
        Ok(self.system.as_ref().expect("taken above"))
    }

    /// The system relation `name` names, if it names one; an error for a schema that is not
    /// there. An unqualified name finds `pg_catalog`'s relations first (it leads the search
    /// path), then the user's tables.
    pub(crate) fn system_relation(
        &self,
        name: &ObjectName,
    ) -> Result<Option<&'static SystemRelation>> {
        let parts: Vec<String> = name
            .0
            .iter()
            .map(|p| match p {
                ObjectNamePart::Identifier(id) => Ok(ident(id)),
                _ => Err(SqlError::syntax(format!("invalid name {name}"))),
            })
            .collect::<Result<_>>()?;
        let missing = || {
            SqlError::new(
                sqlstate::UNDEFINED_TABLE,
                format!("relation \"{}\" does not exist", parts.join(".")),
            )
        };
        match parts.as_slice() {
            [relation] => Ok(find(None, relation)),
            [schema, relation] | [_, schema, relation] => match Schema::named(schema) {
                Some(Schema::Public) => Ok(None),
                Some(s) => find(Some(s), relation).map(Some).ok_or_else(missing),
                None => Err(missing()),
            },
            _ => Err(SqlError::syntax(format!(
                "improper qualified name (too many dotted names): {name}"
            ))),
        }
    }

    /// A cast of `x` to `regclass` or `regtype` (`ty`), from a name or from an object id; a
    /// cast of such a value to text, its name. `x` itself back (`Err`) for other casts.
    pub(crate) fn reg_cast(
        &mut self,
        x: Expr,
        from: SqlType,
        ty: SqlType,
    ) -> Result<std::result::Result<Expr, Expr>> {
        let lookup = match (from, ty) {
            (SqlType::RegClass, t) if t.is_string() => self.snapshot()?.relation_texts(),
            (SqlType::RegType, t) if t.is_string() => self.snapshot()?.type_texts(),
            (SqlType::RegNamespace, t) if t.is_string() => crate::system::schema_texts(),
            (f, SqlType::RegNamespace) if f.is_string() => crate::system::schema_oids(),
            (f, SqlType::RegClass) if f.is_string() => self.snapshot()?.relation_oids(false),
            (f, SqlType::RegType) if f.is_string() => self.snapshot()?.type_oids(false),
            _ => return Ok(Err(x)),
        };
        Ok(Ok(lookup_expr(x, lookup)))
    }

    /// A result column of `ty`: a `regclass` or `regtype` is sent as its name. (Never clones
    /// `x`: a deep expression's clone would recurse as deep as it.)
    pub(crate) fn output(&mut self, x: Expr, ty: SqlType) -> Result<(Expr, SqlType)> {
        if !matches!(
            ty,
            SqlType::RegClass | SqlType::RegType | SqlType::RegNamespace
        ) {
            return Ok((x, ty));
        }
        match self.reg_cast(x, ty, SqlType::Text)? {
            Ok(named) => Ok((named, SqlType::Text)),
            Err(x) => Ok((x, ty)),
        }
    }

    /// The catalog functions, by name: `None` if `name` is not one.
    pub(crate) fn catalog_function(
        &mut self,
        name: &str,
        args: &[Expr],
    ) -> Result<Option<(Expr, SqlType)>> {
        let one = |args: &[Expr]| -> Result<Expr> {
            match args {
                [x] => Ok(x.clone()),
                _ => Err(SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    format!("function {name} takes one argument"),
                )),
            }
        };
        Ok(Some(match name {
            "to_regclass" => {
                let l = self.snapshot()?.relation_oids(true);
                (lookup_expr(one(args)?, l), SqlType::RegClass)
            }
            "to_regtype" => {
                let l = self.snapshot()?.type_oids(true);
                (lookup_expr(one(args)?, l), SqlType::RegType)
            }
            "pg_get_userbyid" => {
                let l = self.snapshot()?.role_names();
                (lookup_expr(one(args)?, l), SqlType::Name)
            }
            // The fork other than the main one (`fsm`, `vm`, `init`) has nothing here.
            "pg_relation_size" if args.len() == 2 => {
                let size = lookup_expr(args[0].clone(), self.snapshot()?.relation_sizes(false));
                let main = Expr::Binary(
                    crate::expr::BinOp::Eq,
                    Box::new(args[1].clone()),
                    Box::new(Expr::Literal(Datum::Text("main".into()))),
                );
                let e = Expr::Case {
                    operand: None,
                    whens: vec![(main, size)],
                    otherwise: Some(Box::new(Expr::Literal(Datum::Int(0)))),
                };
                (e, SqlType::Int8)
            }
            "pg_relation_size" | "pg_table_size" => {
                let l = self.snapshot()?.relation_sizes(false);
                (lookup_expr(one(args)?, l), SqlType::Int8)
            }
            "pg_total_relation_size" => {
                let l = self.snapshot()?.relation_sizes(true);
                (lookup_expr(one(args)?, l), SqlType::Int8)
            }
            "pg_table_is_visible" => {
                let l = self.snapshot()?.visible_relations();
                (lookup_expr(one(args)?, l), SqlType::Bool)
            }
            "pg_get_serial_sequence" => {
                let [table, column] = args else {
                    return Err(SqlError::new(
                        sqlstate::UNDEFINED_FUNCTION,
                        "function pg_get_serial_sequence takes two arguments",
                    ));
                };
                let key = Expr::Func(
                    Func::Concat,
                    vec![
                        table.clone(),
                        Expr::Literal(Datum::Text(".".into())),
                        column.clone(),
                    ],
                );
                let l = self.snapshot()?.serial_sequences();
                (lookup_expr(key, l), SqlType::Text)
            }
            // The expression a catalog holds is its SQL here: pg_get_expr gives it back.
            "pg_get_expr" if (2..=3).contains(&args.len()) => (
                Expr::Cast(Box::new(args[0].clone()), SqlType::Text),
                SqlType::Text,
            ),
            "pg_get_indexdef" if (1..=3).contains(&args.len()) => {
                let pretty = matches!(args.get(2), Some(Expr::Literal(Datum::Bool(true))));
                let definition = self.snapshot()?.index_definitions(pretty);
                let definition = lookup_expr(args[0].clone(), definition);
                // pg_get_indexdef(index, n, ...): its column n, where n is not 0.
                let e = match args.get(1) {
                    None | Some(Expr::Literal(Datum::Int(0))) => definition,
                    Some(n) => {
                        let key = Expr::Func(
                            Func::Concat,
                            vec![
                                args[0].clone(),
                                Expr::Literal(Datum::Text(".".into())),
                                n.clone(),
                            ],
                        );
                        let column = lookup_expr(key, self.snapshot()?.index_columns());
                        let zero = Expr::Binary(
                            crate::expr::BinOp::Eq,
                            Box::new(n.clone()),
                            Box::new(Expr::Literal(Datum::Int(0))),
                        );
                        Expr::Case {
                            operand: None,
                            whens: vec![(zero, definition)],
                            otherwise: Some(Box::new(column)),
                        }
                    }
                };
                (e, SqlType::Text)
            }
            "pg_get_viewdef" if (1..=2).contains(&args.len()) => {
                let l = self.snapshot()?.view_definitions();
                (lookup_expr(args[0].clone(), l), SqlType::Text)
            }
            "pg_get_constraintdef" if (1..=2).contains(&args.len()) => {
                let pretty = matches!(args.get(1), Some(Expr::Literal(Datum::Bool(true))));
                let l = self.snapshot()?.constraint_definitions(pretty);
                (lookup_expr(args[0].clone(), l), SqlType::Text)
            }
            // Only PostgreSQL's own encoding here.
            "pg_encoding_to_char" if args.len() == 1 => (
                Expr::Case {
                    operand: Some(Box::new(args[0].clone())),
                    whens: vec![(
                        Expr::Literal(Datum::Int(6)),
                        Expr::Literal(Datum::Text("UTF8".into())),
                    )],
                    otherwise: Some(Box::new(Expr::Literal(Datum::Text(String::new())))),
                },
                SqlType::Name,
            ),
            // There are no user functions (pg_proc lists none): each is visible, and these
            // describe what `pg_proc` would hold.
            "pg_function_is_visible" | "pg_type_is_visible" if args.len() == 1 => {
                (Expr::Literal(Datum::Bool(true)), SqlType::Bool)
            }
            "pg_get_function_result"
            | "pg_get_function_arguments"
            | "pg_get_function_identity_arguments"
                if args.len() == 1 =>
            {
                (Expr::Literal(Datum::Null), SqlType::Text)
            }
            // Nothing is published, and there are no extended statistics.
            "pg_relation_is_publishable" if args.len() == 1 => {
                (Expr::Literal(Datum::Bool(false)), SqlType::Bool)
            }
            "pg_get_statisticsobjdef_columns" if args.len() == 1 => {
                (Expr::Literal(Datum::Null), SqlType::Text)
            }
            // There are no triggers (pg_trigger lists none; foreign keys are kept without).
            "pg_get_triggerdef" if (1..=2).contains(&args.len()) => {
                (Expr::Literal(Datum::Null), SqlType::Text)
            }
            // Nothing has a comment.
            "obj_description" | "col_description" | "shobj_description"
                if (1..=2).contains(&args.len()) =>
            {
                (Expr::Literal(Datum::Null), SqlType::Text)
            }
            _ => return Ok(None),
        }))
    }
}

fn lookup_expr(x: Expr, lookup: Lookup) -> Expr {
    Expr::Lookup(Box::new(x), std::sync::Arc::new(lookup))
}

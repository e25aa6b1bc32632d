//! Declared table schemas: column names and types, the primary key and secondary indexes.
//!
//! A schema is validated once, when it is built, so that everything downstream (row layout, key
//! encoding, generic access by column) can rely on it: names are unique, keys are not nullable and
//! fit the maximum encoded key length, rows fit the row format. A table without a declared primary
//! key gets a hidden 64-bit row id, as a user of any serious engine would expect.

use std::collections::HashSet;

use crate::error::SchemaError;
use crate::limits::{MAX_COLUMNS, MAX_DECIMAL_PRECISION, MAX_KEY_LEN, MAX_ROW_LEN};
use crate::storage::numeric;

/// The type of a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ColumnType {
    /// 32-bit signed integer.
    Int32,
    /// 64-bit signed integer.
    Int64,
    /// Fixed-point decimal with `precision` total digits, `scale` of them after the point. Stored as
    /// an `i64` count of `10^-scale` units.
    Decimal {
        /// Total digits, 1..=18.
        precision: u8,
        /// Digits after the point, at most `precision`.
        scale: u8,
    },
    /// Fixed-length string of up to `n` bytes (SQL `CHAR(n)`): padded with spaces when stored,
    /// returned without the padding.
    Char(u16),
    /// Variable-length string of up to `n` bytes (SQL `VARCHAR(n)`).
    VarChar(u16),
    /// Microseconds since the Unix epoch.
    Timestamp,
    /// Decimal number of any scale with up to `n` significant digits, stored variable-length in
    /// an order-preserving form with its display scale (see [`NumericParts`]).
    ///
    /// [`NumericParts`]: crate::NumericParts
    Numeric(u16),
}

impl ColumnType {
    /// Bytes the column occupies in the fixed part of a row, or `None` for variable-length columns.
    pub fn fixed_width(self) -> Option<usize> {
        match self {
            ColumnType::Int32 => Some(4),
            ColumnType::Int64 | ColumnType::Decimal { .. } | ColumnType::Timestamp => Some(8),
            ColumnType::Char(n) => Some(usize::from(n)),
            ColumnType::VarChar(_) | ColumnType::Numeric(_) => None,
        }
    }

    /// Largest number of bytes the column can contribute to an encoded key.
    pub(crate) fn max_key_width(self) -> usize {
        match self {
            // A length code and up to 4 or 8 significant bytes.
            ColumnType::Int32 => 5,
            ColumnType::Int64 | ColumnType::Decimal { .. } | ColumnType::Timestamp => 9,
            // Its bytes and a two-byte terminator: string columns hold no NUL (rows refuse
            // one), the only byte the encoding escapes.
            ColumnType::Char(n) | ColumnType::VarChar(n) => usize::from(n) + 2,
            // Its sortable part, which needs no escaping.
            ColumnType::Numeric(n) => numeric::max_sortable_len(n),
        }
    }

    /// Bytes the column occupies in every row: its field, or a variable-length column's offset
    /// entry (its value's bytes are counted when a row is written).
    fn min_row_width(self) -> usize {
        self.fixed_width().unwrap_or(2)
    }
}

/// One column of a table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// Column name, unique within the table.
    pub name: String,
    /// Declared type.
    pub ty: ColumnType,
    /// Whether the column may hold NULL.
    pub nullable: bool,
}

/// A secondary index: an ordered map from the indexed columns (followed by the primary key, which
/// makes every entry unique) to the row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexDef {
    /// Index name, unique within the table.
    pub name: String,
    /// Positions of the indexed columns, in key order.
    pub columns: Vec<usize>,
}

/// A validated table schema. Build one with [`TableSchema::builder`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSchema {
    name: String,
    columns: Vec<Column>,
    primary_key: Vec<usize>,
    indexes: Vec<IndexDef>,
}

impl TableSchema {
    /// Starts declaring a table.
    pub fn builder(name: impl Into<String>) -> TableSchemaBuilder {
        TableSchemaBuilder {
            name: name.into(),
            columns: Vec::new(),
            primary_key: Vec::new(),
            indexes: Vec::new(),
        }
    }

    /// The table name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// All columns, in declaration order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// Position of the column called `name`.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// Positions of the primary-key columns; empty when the table uses a hidden row id.
    pub fn primary_key(&self) -> &[usize] {
        &self.primary_key
    }

    /// The secondary indexes.
    pub fn indexes(&self) -> &[IndexDef] {
        &self.indexes
    }
}

/// Declares a table column by column; [`build`](Self::build) validates the whole declaration.
#[derive(Clone, Debug)]
pub struct TableSchemaBuilder {
    name: String,
    columns: Vec<Column>,
    primary_key: Vec<String>,
    indexes: Vec<(String, Vec<String>)>,
}

impl TableSchemaBuilder {
    /// Adds a NOT NULL column.
    pub fn column(mut self, name: impl Into<String>, ty: ColumnType) -> Self {
        self.columns.push(Column {
            name: name.into(),
            ty,
            nullable: false,
        });
        self
    }

    /// Adds a nullable column.
    pub fn nullable_column(mut self, name: impl Into<String>, ty: ColumnType) -> Self {
        self.columns.push(Column {
            name: name.into(),
            ty,
            nullable: true,
        });
        self
    }

    /// Declares the primary key (column names, in key order).
    pub fn primary_key(mut self, columns: &[&str]) -> Self {
        self.primary_key = columns.iter().map(|c| (*c).to_owned()).collect();
        self
    }

    /// Declares a secondary index over `columns` (in key order).
    pub fn index(mut self, name: impl Into<String>, columns: &[&str]) -> Self {
        self.indexes.push((
            name.into(),
            columns.iter().map(|c| (*c).to_owned()).collect(),
        ));
        self
    }

    /// Validates the declaration.
    pub fn build(self) -> Result<TableSchema, SchemaError> {
        if self.name.is_empty() {
            return Err(SchemaError::EmptyName);
        }
        if self.columns.is_empty() {
            return Err(SchemaError::NoColumns(self.name));
        }
        if self.columns.len() > MAX_COLUMNS {
            return Err(SchemaError::TooManyColumns(self.columns.len()));
        }
        let mut seen = HashSet::new();
        for column in &self.columns {
            if column.name.is_empty() {
                return Err(SchemaError::EmptyName);
            }
            if !seen.insert(column.name.as_str()) {
                return Err(SchemaError::DuplicateColumn(column.name.clone()));
            }
            validate_type(&column.name, column.ty)?;
        }
        let row_len = 1
            + self.columns.len().div_ceil(8)
            + self
                .columns
                .iter()
                .map(|c| c.ty.min_row_width())
                .sum::<usize>();
        if row_len > MAX_ROW_LEN {
            return Err(SchemaError::RowTooLong(row_len));
        }

        let position = |name: &str| {
            self.columns
                .iter()
                .position(|c| c.name == name)
                .ok_or_else(|| SchemaError::UnknownColumn(name.to_owned()))
        };
        // A primary key's columns must not be NULL; a secondary index's may be.
        let key_columns = |names: &[String], primary: bool| -> Result<Vec<usize>, SchemaError> {
            let mut positions = Vec::with_capacity(names.len());
            for name in names {
                let p = position(name)?;
                if primary && self.columns[p].nullable {
                    return Err(SchemaError::NullableKeyColumn(name.clone()));
                }
                if positions.contains(&p) {
                    return Err(SchemaError::DuplicateKeyColumn(name.clone()));
                }
                positions.push(p);
            }
            Ok(positions)
        };
        let key_width = |cols: &[usize]| -> usize {
            cols.iter()
                .map(|&c| {
                    self.columns[c].ty.max_key_width() + usize::from(self.columns[c].nullable)
                })
                .sum()
        };

        let primary_key = key_columns(&self.primary_key, true)?;
        let pk_width = if primary_key.is_empty() {
            ColumnType::Int64.max_key_width()
        } else {
            key_width(&primary_key)
        };
        if pk_width > MAX_KEY_LEN {
            return Err(SchemaError::KeyTooLong {
                index: "primary key".into(),
                bytes: pk_width,
            });
        }

        let mut indexes = Vec::with_capacity(self.indexes.len());
        let mut index_names = HashSet::new();
        for (name, columns) in &self.indexes {
            if name.is_empty() {
                return Err(SchemaError::EmptyName);
            }
            if !index_names.insert(name.as_str()) {
                return Err(SchemaError::DuplicateIndex(name.clone()));
            }
            if columns.is_empty() {
                return Err(SchemaError::EmptyIndex(name.clone()));
            }
            let columns = key_columns(columns, false)?;
            let width = key_width(&columns) + pk_width;
            if width > MAX_KEY_LEN {
                return Err(SchemaError::KeyTooLong {
                    index: name.clone(),
                    bytes: width,
                });
            }
            indexes.push(IndexDef {
                name: name.clone(),
                columns,
            });
        }

        Ok(TableSchema {
            name: self.name,
            columns: self.columns,
            primary_key,
            indexes,
        })
    }
}

fn validate_type(column: &str, ty: ColumnType) -> Result<(), SchemaError> {
    let bad = |reason: &str| {
        Err(SchemaError::BadType {
            column: column.to_owned(),
            reason: reason.to_owned(),
        })
    };
    match ty {
        ColumnType::Decimal { precision, scale } => {
            if precision == 0 || precision > MAX_DECIMAL_PRECISION {
                return bad("decimal precision must be between 1 and 18");
            }
            if scale > precision {
                return bad("decimal scale must not exceed its precision");
            }
        }
        ColumnType::Char(0) | ColumnType::VarChar(0) => {
            return bad("string length must be positive");
        }
        ColumnType::Numeric(0) => return bad("a numeric must allow at least one digit"),
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accounts() -> TableSchemaBuilder {
        TableSchema::builder("accounts")
            .column("id", ColumnType::Int64)
            .column("owner", ColumnType::VarChar(32))
            .nullable_column("note", ColumnType::VarChar(100))
            .column(
                "balance",
                ColumnType::Decimal {
                    precision: 12,
                    scale: 2,
                },
            )
    }

    #[test]
    fn valid_schema_builds() {
        let s = accounts()
            .primary_key(&["id"])
            .index("by_owner", &["owner"])
            .build()
            .expect("valid");
        assert_eq!(s.primary_key(), &[0]);
        assert_eq!(s.indexes()[0].columns, vec![1]);
        assert_eq!(s.column_index("balance"), Some(3));
    }

    #[test]
    fn hidden_row_id_when_no_primary_key() {
        let s = accounts().build().expect("valid");
        assert!(s.primary_key().is_empty());
    }

    #[test]
    fn bad_declarations_are_refused_with_reasons() {
        let cases: Vec<(TableSchemaBuilder, SchemaError)> = vec![
            (
                accounts().primary_key(&["missing"]),
                SchemaError::UnknownColumn("missing".into()),
            ),
            (
                accounts().primary_key(&["note"]),
                SchemaError::NullableKeyColumn("note".into()),
            ),
            (
                accounts().primary_key(&["id", "id"]),
                SchemaError::DuplicateKeyColumn("id".into()),
            ),
            (
                accounts().column("id", ColumnType::Int32),
                SchemaError::DuplicateColumn("id".into()),
            ),
            (
                accounts().index("i", &["owner"]).index("i", &["id"]),
                SchemaError::DuplicateIndex("i".into()),
            ),
            (
                accounts().index("i", &[]),
                SchemaError::EmptyIndex("i".into()),
            ),
            (
                TableSchema::builder("t"),
                SchemaError::NoColumns("t".into()),
            ),
        ];
        for (builder, expected) in cases {
            assert_eq!(builder.build(), Err(expected));
        }
        let bad_decimal = TableSchema::builder("t")
            .column(
                "d",
                ColumnType::Decimal {
                    precision: 19,
                    scale: 2,
                },
            )
            .build();
        assert!(matches!(bad_decimal, Err(SchemaError::BadType { .. })));
        let long_key = TableSchema::builder("t")
            .column("s", ColumnType::VarChar(254))
            .primary_key(&["s"])
            .build();
        assert!(matches!(long_key, Err(SchemaError::KeyTooLong { .. })));
        // Variable-length columns may together declare more than a row holds (each row's
        // values are checked when it is written); fixed-width ones may not.
        let wide = TableSchema::builder("t")
            .column("a", ColumnType::VarChar(40_000))
            .column("b", ColumnType::VarChar(40_000))
            .build();
        assert!(wide.is_ok());
        let long_row = TableSchema::builder("t")
            .column("a", ColumnType::Char(40_000))
            .column("b", ColumnType::Char(40_000))
            .build();
        assert!(matches!(long_row, Err(SchemaError::RowTooLong(_))));
    }
}

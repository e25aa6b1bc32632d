//! The row format, and typed and generic access to it.
//!
//! A row is one contiguous byte string:
//!
//! ```text
//! [null bitmap][fixed-width columns at fixed offsets][u16 end offset per VARCHAR][VARCHAR bytes]
//! ```
//!
//! Fixed-width columns (integers, decimals, timestamps, CHAR) sit at offsets computed once from the
//! schema, so a typed read is one bounds-checked load at a known offset and an update of such a column
//! is an in-place write into the new version's copy. Variable-length strings follow, located through a
//! table of end offsets. Reading never allocates: strings are borrowed from the row.
//!
//! Rows are only created by [`RowBuilder`] and [`RowMut`], which validate every value against its
//! column, so the engine can trust the bytes of any stored row. A typed accessor used on a column of
//! another type is a bug in the calling code and panics with the column's name; the generic
//! [`RowRef::get`] works for every column.

use crate::error::{Error, Result};
use crate::schema::{Column, ColumnType, TableSchema};
use crate::value::{Decimal, Value};

/// Identifies which table's layout a row was built for (so a row cannot be inserted into another
/// table by mistake).
pub(crate) type LayoutOwner = u32;

/// Layout owner of layouts not attached to a table (tests, tools).
pub(crate) const DETACHED: LayoutOwner = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Slot {
    ty: ColumnType,
    nullable: bool,
    /// Byte offset in the row for fixed-width columns; ordinal among VARCHAR columns otherwise.
    at: usize,
}

/// Where each column of a table lives inside a row. Computed once per table.
#[derive(Clone, Debug)]
pub struct RowLayout {
    owner: LayoutOwner,
    columns: Box<[Column]>,
    slots: Box<[Slot]>,
    fixed_end: usize,
    var_count: usize,
}

impl RowLayout {
    /// Computes the layout of `schema`'s rows.
    pub fn new(schema: &TableSchema) -> Self {
        Self::for_owner(schema, DETACHED)
    }

    pub(crate) fn for_owner(schema: &TableSchema, owner: LayoutOwner) -> Self {
        let columns: Box<[Column]> = schema.columns().into();
        let null_bytes = if columns.iter().any(|c| c.nullable) {
            columns.len().div_ceil(8)
        } else {
            0
        };
        let mut offset = null_bytes;
        let mut var_count = 0;
        let slots = columns
            .iter()
            .map(|c| {
                let at = match c.ty.fixed_width() {
                    Some(width) => {
                        offset += width;
                        offset - width
                    }
                    None => {
                        var_count += 1;
                        var_count - 1
                    }
                };
                Slot {
                    ty: c.ty,
                    nullable: c.nullable,
                    at,
                }
            })
            .collect();
        RowLayout {
            owner,
            columns,
            slots,
            fixed_end: offset,
            var_count,
        }
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True if the layout has no columns (never the case for a validated schema).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The column declarations.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    pub(crate) fn owner(&self) -> LayoutOwner {
        self.owner
    }

    fn var_base(&self) -> usize {
        self.fixed_end + 2 * self.var_count
    }

    fn name(&self, col: usize) -> &str {
        &self.columns[col].name
    }

    fn invalid(&self, col: usize, reason: impl Into<String>) -> Error {
        Error::InvalidValue {
            column: self.name(col).to_owned(),
            reason: reason.into(),
        }
    }

    #[track_caller]
    fn wrong_type(&self, col: usize, wanted: &str) -> ! {
        panic!(
            "column {} has type {:?}; it cannot be accessed as {wanted}",
            self.name(col),
            self.slots[col].ty
        )
    }

    /// Checks `value` against column `col` and converts it to the stored form.
    fn check<'v>(&self, col: usize, value: Value<'v>) -> Result<Checked<'v>> {
        let slot = self.slots[col];
        let checked = match (slot.ty, value) {
            (_, Value::Null) if slot.nullable => Checked::Null,
            (_, Value::Null) => return Err(self.invalid(col, "NULL in a NOT NULL column")),
            (ColumnType::Int32, Value::Int(v)) => Checked::Int32(
                i32::try_from(v).map_err(|_| self.invalid(col, format!("{v} does not fit INT")))?,
            ),
            (ColumnType::Int64, Value::Int(v)) => Checked::Int64(v),
            (ColumnType::Timestamp, Value::Timestamp(t)) => Checked::Int64(t),
            (ColumnType::Decimal { precision, scale }, Value::Decimal(d)) => {
                let d = d.rescale(scale).ok_or_else(|| {
                    self.invalid(
                        col,
                        format!("{d} cannot be stored exactly with scale {scale}"),
                    )
                })?;
                Checked::Int64(check_precision(self, col, d.units(), precision)?)
            }
            (ColumnType::Decimal { precision, .. }, Value::Int(v)) => {
                // An integer literal is accepted for a decimal column when it is exact.
                let scale = match slot.ty {
                    ColumnType::Decimal { scale, .. } => scale,
                    _ => 0,
                };
                let d = Decimal::new(v, 0)
                    .rescale(scale)
                    .ok_or_else(|| self.invalid(col, format!("{v} is out of range")))?;
                Checked::Int64(check_precision(self, col, d.units(), precision)?)
            }
            (ColumnType::Char(n) | ColumnType::VarChar(n), Value::Str(s)) => {
                if s.len() > usize::from(n) {
                    return Err(self.invalid(
                        col,
                        format!("{} bytes is longer than the declared {n}", s.len()),
                    ));
                }
                Checked::Str(s)
            }
            (ty, v) => return Err(self.invalid(col, format!("{v:?} is not a {ty:?} value"))),
        };
        Ok(checked)
    }
}

fn check_precision(layout: &RowLayout, col: usize, units: i64, precision: u8) -> Result<i64> {
    let limit = 10i64.pow(u32::from(precision));
    if units.unsigned_abs() >= limit.unsigned_abs() {
        return Err(layout.invalid(
            col,
            format!("{units} units exceed the declared precision {precision}"),
        ));
    }
    Ok(units)
}

/// A value that passed its column's checks, in the form it is stored in.
enum Checked<'a> {
    Null,
    Int32(i32),
    Int64(i64),
    Str(&'a str),
}

fn read_array<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

fn read_u16(bytes: &[u8], at: usize) -> usize {
    usize::from(u16::from_le_bytes(read_array(bytes, at)))
}

fn set_null_bit(bytes: &mut [u8], col: usize, null: bool) {
    let mask = 1u8 << (col % 8);
    if null {
        bytes[col / 8] |= mask;
    } else {
        bytes[col / 8] &= !mask;
    }
}

/// Writes a checked fixed-width value (or NULL) into the fixed area `bytes` (which starts with the
/// null bitmap). Shared by [`RowBuilder`] and [`RowMut`].
fn write_fixed(layout: &RowLayout, bytes: &mut [u8], col: usize, value: &Checked<'_>) {
    let slot = layout.slots[col];
    if slot.nullable {
        set_null_bit(bytes, col, matches!(value, Checked::Null));
    }
    match *value {
        Checked::Null => {
            if let Some(width) = slot.ty.fixed_width() {
                bytes[slot.at..slot.at + width].fill(0);
            }
        }
        Checked::Int32(v) => bytes[slot.at..slot.at + 4].copy_from_slice(&v.to_le_bytes()),
        Checked::Int64(v) => bytes[slot.at..slot.at + 8].copy_from_slice(&v.to_le_bytes()),
        Checked::Str(s) => {
            if let ColumnType::Char(n) = slot.ty {
                let field = &mut bytes[slot.at..slot.at + usize::from(n)];
                field[..s.len()].copy_from_slice(s.as_bytes());
                field[s.len()..].fill(b' ');
            }
        }
    }
}

/// A read-only view of one row. Cheap to copy; borrows the stored bytes.
#[derive(Clone, Copy)]
pub struct RowRef<'r> {
    layout: &'r RowLayout,
    bytes: &'r [u8],
}

impl<'r> RowRef<'r> {
    pub(crate) fn new(layout: &'r RowLayout, bytes: &'r [u8]) -> Self {
        RowRef { layout, bytes }
    }

    /// The layout this row follows.
    pub fn layout(&self) -> &'r RowLayout {
        self.layout
    }

    /// The encoded bytes.
    pub fn as_bytes(&self) -> &'r [u8] {
        self.bytes
    }

    /// True if column `col` is NULL.
    #[inline]
    pub fn is_null(&self, col: usize) -> bool {
        self.layout.slots[col].nullable && self.bytes[col / 8] & (1 << (col % 8)) != 0
    }

    #[inline]
    #[track_caller]
    fn fixed_at(&self, col: usize, ok: fn(ColumnType) -> bool, wanted: &str) -> usize {
        let slot = self.layout.slots[col];
        if !ok(slot.ty) {
            self.layout.wrong_type(col, wanted);
        }
        slot.at
    }

    /// An `Int32` column.
    #[inline]
    #[track_caller]
    pub fn i32(&self, col: usize) -> i32 {
        let at = self.fixed_at(col, |t| t == ColumnType::Int32, "i32");
        i32::from_le_bytes(read_array(self.bytes, at))
    }

    /// Any integer column, widened to `i64`.
    #[inline]
    #[track_caller]
    pub fn int(&self, col: usize) -> i64 {
        match self.layout.slots[col].ty {
            ColumnType::Int32 => i64::from(self.i32(col)),
            _ => {
                let at = self.fixed_at(col, |t| t == ColumnType::Int64, "an integer");
                i64::from_le_bytes(read_array(self.bytes, at))
            }
        }
    }

    /// A decimal column as its raw count of `10^-scale` units (the scale is the column's).
    #[inline]
    #[track_caller]
    pub fn decimal_units(&self, col: usize) -> i64 {
        let at = self.fixed_at(
            col,
            |t| matches!(t, ColumnType::Decimal { .. }),
            "a decimal",
        );
        i64::from_le_bytes(read_array(self.bytes, at))
    }

    /// A decimal column.
    #[inline]
    #[track_caller]
    pub fn decimal(&self, col: usize) -> Decimal {
        let units = self.decimal_units(col);
        match self.layout.slots[col].ty {
            ColumnType::Decimal { scale, .. } => Decimal::new(units, scale),
            _ => unreachable!("checked by decimal_units"),
        }
    }

    /// A timestamp column (microseconds since the Unix epoch).
    #[inline]
    #[track_caller]
    pub fn timestamp(&self, col: usize) -> i64 {
        let at = self.fixed_at(col, |t| t == ColumnType::Timestamp, "a timestamp");
        i64::from_le_bytes(read_array(self.bytes, at))
    }

    /// The raw bytes of a string column (a `Char` without its padding).
    #[inline]
    #[track_caller]
    pub fn bytes(&self, col: usize) -> &'r [u8] {
        let slot = self.layout.slots[col];
        match slot.ty {
            ColumnType::Char(n) => {
                let field = &self.bytes[slot.at..slot.at + usize::from(n)];
                let len = field.iter().rposition(|&b| b != b' ').map_or(0, |p| p + 1);
                &field[..len]
            }
            ColumnType::VarChar(_) => {
                let table = self.layout.fixed_end;
                let end = read_u16(self.bytes, table + 2 * slot.at);
                let start = if slot.at == 0 {
                    self.layout.var_base()
                } else {
                    read_u16(self.bytes, table + 2 * (slot.at - 1))
                };
                &self.bytes[start..end]
            }
            _ => self.layout.wrong_type(col, "a string"),
        }
    }

    /// A string column.
    #[inline]
    #[track_caller]
    pub fn str(&self, col: usize) -> &'r str {
        // Stored strings were validated as UTF-8 when written; a failure here means memory corruption.
        std::str::from_utf8(self.bytes(col)).expect("stored strings are valid UTF-8")
    }

    /// Column `col` as a generic [`Value`] (works for every column type, including NULLs).
    pub fn get(&self, col: usize) -> Value<'r> {
        if self.is_null(col) {
            return Value::Null;
        }
        match self.layout.slots[col].ty {
            ColumnType::Int32 | ColumnType::Int64 => Value::Int(self.int(col)),
            ColumnType::Decimal { .. } => Value::Decimal(self.decimal(col)),
            ColumnType::Timestamp => Value::Timestamp(self.timestamp(col)),
            ColumnType::Char(_) | ColumnType::VarChar(_) => Value::Str(self.str(col)),
        }
    }

    /// Copies the row into a mutable buffer (the starting point of an update).
    pub fn to_mut(&self) -> RowMut<'r> {
        RowMut {
            layout: self.layout,
            bytes: self.bytes.to_vec(),
            error: None,
        }
    }
}

impl std::fmt::Debug for RowRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut map = f.debug_map();
        for (col, column) in self.layout.columns.iter().enumerate() {
            map.entry(&column.name, &self.get(col));
        }
        map.finish()
    }
}

/// An encoded row owned by the caller, ready to be inserted into the table it was built for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    owner: LayoutOwner,
    bytes: Box<[u8]>,
}

impl Row {
    /// A view of the row through `layout` (which must be the layout it was built with).
    pub fn view<'r>(&'r self, layout: &'r RowLayout) -> RowRef<'r> {
        debug_assert_eq!(self.owner, layout.owner);
        RowRef::new(layout, &self.bytes)
    }

    pub(crate) fn owner(&self) -> LayoutOwner {
        self.owner
    }

    pub(crate) fn into_bytes(self) -> Box<[u8]> {
        self.bytes
    }
}

/// Builds new rows column by column. Reusable: [`finish`](Self::finish) resets it, so a loader can
/// build millions of rows with one builder and one allocation per row.
///
/// Setters do not return errors one by one: the first invalid value is remembered and returned by
/// `finish`, which keeps loaders and stored procedures readable.
pub struct RowBuilder<'l> {
    layout: &'l RowLayout,
    fixed: Vec<u8>,
    var_data: Vec<u8>,
    /// Per VARCHAR column: (start, len) in `var_data`, if set.
    var_spans: Vec<Option<(usize, usize)>>,
    assigned: Vec<bool>,
    error: Option<Error>,
}

impl<'l> RowBuilder<'l> {
    /// A builder for rows of `layout`.
    pub fn new(layout: &'l RowLayout) -> Self {
        RowBuilder {
            layout,
            fixed: vec![0; layout.fixed_end],
            var_data: Vec::new(),
            var_spans: vec![None; layout.var_count],
            assigned: vec![false; layout.len()],
            error: None,
        }
    }

    /// Sets column `col` to `value` (any type; checked against the column).
    pub fn set(&mut self, col: usize, value: Value<'_>) -> &mut Self {
        if self.error.is_some() {
            return self;
        }
        match self.layout.check(col, value) {
            Ok(checked) => {
                self.assigned[col] = true;
                let slot = self.layout.slots[col];
                match (slot.ty, &checked) {
                    (ColumnType::VarChar(_), Checked::Str(s)) => {
                        self.var_spans[slot.at] = Some((self.var_data.len(), s.len()));
                        self.var_data.extend_from_slice(s.as_bytes());
                        if slot.nullable {
                            set_null_bit(&mut self.fixed, col, false);
                        }
                    }
                    (ColumnType::VarChar(_), Checked::Null) => {
                        self.var_spans[slot.at] = None;
                        set_null_bit(&mut self.fixed, col, true);
                    }
                    _ => write_fixed(self.layout, &mut self.fixed, col, &checked),
                }
            }
            Err(e) => self.error = Some(e),
        }
        self
    }

    /// Sets an integer column.
    pub fn int(&mut self, col: usize, v: i64) -> &mut Self {
        self.set(col, Value::Int(v))
    }

    /// Sets a decimal column from its raw units at the column's own scale.
    pub fn decimal_units(&mut self, col: usize, units: i64) -> &mut Self {
        let scale = match self.layout.slots[col].ty {
            ColumnType::Decimal { scale, .. } => scale,
            _ => 0,
        };
        self.set(col, Value::Decimal(Decimal::new(units, scale)))
    }

    /// Sets a string column.
    pub fn str(&mut self, col: usize, s: &str) -> &mut Self {
        self.set(col, Value::Str(s))
    }

    /// Sets a timestamp column.
    pub fn timestamp(&mut self, col: usize, micros: i64) -> &mut Self {
        self.set(col, Value::Timestamp(micros))
    }

    /// Sets a nullable column to NULL.
    pub fn null(&mut self, col: usize) -> &mut Self {
        self.set(col, Value::Null)
    }

    /// Produces the row and resets the builder. Fails if a value was invalid or a NOT NULL column
    /// was never set; unset nullable columns are NULL.
    pub fn finish(&mut self) -> Result<Row> {
        let result = self.assemble();
        self.fixed.fill(0);
        self.var_data.clear();
        self.var_spans.fill(None);
        self.assigned.fill(false);
        self.error = None;
        result
    }

    fn assemble(&mut self) -> Result<Row> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        for col in 0..self.layout.len() {
            if !self.assigned[col] {
                if !self.layout.slots[col].nullable {
                    return Err(self.layout.invalid(col, "NOT NULL column was not set"));
                }
                set_null_bit(&mut self.fixed, col, true);
            }
        }
        let var_base = self.layout.var_base();
        let total = var_base + self.var_data.len();
        let mut bytes = Vec::with_capacity(total);
        bytes.extend_from_slice(&self.fixed);
        bytes.resize(var_base, 0);
        let mut end = var_base;
        for (k, span) in self.var_spans.iter().enumerate() {
            if let Some((start, len)) = *span {
                bytes.extend_from_slice(&self.var_data[start..start + len]);
                end += len;
            }
            let at = self.layout.fixed_end + 2 * k;
            // Fits: the schema limits rows to u16::MAX bytes.
            bytes[at..at + 2].copy_from_slice(&(end as u16).to_le_bytes());
        }
        Ok(Row {
            owner: self.layout.owner,
            bytes: bytes.into_boxed_slice(),
        })
    }
}

/// A private, mutable copy of a row: what an update closure receives. Like [`RowBuilder`], setters
/// remember the first invalid value, which the update then reports.
pub struct RowMut<'l> {
    layout: &'l RowLayout,
    bytes: Vec<u8>,
    error: Option<Error>,
}

impl<'l> RowMut<'l> {
    /// Read access to the current contents.
    pub fn as_ref(&self) -> RowRef<'_> {
        RowRef::new(self.layout, &self.bytes)
    }

    /// Sets column `col` to `value` (checked against the column).
    pub fn set(&mut self, col: usize, value: Value<'_>) -> &mut Self {
        if self.error.is_some() {
            return self;
        }
        let layout = self.layout;
        match layout.check(col, value) {
            Ok(checked) => {
                let slot = layout.slots[col];
                if let ColumnType::VarChar(_) = slot.ty {
                    let text: &[u8] = match &checked {
                        Checked::Str(s) => s.as_bytes(),
                        _ => &[],
                    };
                    self.replace_var(slot.at, text);
                    if slot.nullable {
                        set_null_bit(&mut self.bytes, col, matches!(checked, Checked::Null));
                    }
                } else {
                    write_fixed(layout, &mut self.bytes, col, &checked);
                }
            }
            Err(e) => self.error = Some(e),
        }
        self
    }

    fn replace_var(&mut self, ordinal: usize, text: &[u8]) {
        let table = self.layout.fixed_end;
        let end = read_u16(&self.bytes, table + 2 * ordinal);
        let start = if ordinal == 0 {
            self.layout.var_base()
        } else {
            read_u16(&self.bytes, table + 2 * (ordinal - 1))
        };
        self.bytes.splice(start..end, text.iter().copied());
        let delta = text.len() as isize - (end - start) as isize;
        for k in ordinal..self.layout.var_count {
            let at = table + 2 * k;
            let moved = read_u16(&self.bytes, at) as isize + delta;
            self.bytes[at..at + 2].copy_from_slice(&(moved as u16).to_le_bytes());
        }
    }

    /// Sets an integer column.
    pub fn int(&mut self, col: usize, v: i64) -> &mut Self {
        self.set(col, Value::Int(v))
    }

    /// Sets a decimal column from raw units at the column's own scale.
    pub fn decimal_units(&mut self, col: usize, units: i64) -> &mut Self {
        let scale = match self.layout.slots[col].ty {
            ColumnType::Decimal { scale, .. } => scale,
            _ => 0,
        };
        self.set(col, Value::Decimal(Decimal::new(units, scale)))
    }

    /// Sets a string column.
    pub fn str(&mut self, col: usize, s: &str) -> &mut Self {
        self.set(col, Value::Str(s))
    }

    /// Sets a timestamp column.
    pub fn timestamp(&mut self, col: usize, micros: i64) -> &mut Self {
        self.set(col, Value::Timestamp(micros))
    }

    /// Sets a nullable column to NULL.
    pub fn null(&mut self, col: usize) -> &mut Self {
        self.set(col, Value::Null)
    }

    pub(crate) fn into_bytes(self) -> Result<Box<[u8]>> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.bytes.into_boxed_slice()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::TableSchema;

    fn layout() -> RowLayout {
        let schema = TableSchema::builder("t")
            .column("id", ColumnType::Int32)
            .column("big", ColumnType::Int64)
            .column("name", ColumnType::VarChar(10))
            .nullable_column("carrier", ColumnType::Int32)
            .column("code", ColumnType::Char(4))
            .nullable_column("note", ColumnType::VarChar(20))
            .column(
                "amount",
                ColumnType::Decimal {
                    precision: 6,
                    scale: 2,
                },
            )
            .column("at", ColumnType::Timestamp)
            .primary_key(&["id"])
            .build()
            .expect("schema");
        RowLayout::new(&schema)
    }

    #[test]
    fn build_and_read_every_type() {
        let layout = layout();
        let mut b = RowBuilder::new(&layout);
        b.int(0, 7)
            .int(1, -5_000_000_000)
            .str(2, "héllo")
            .str(4, "AB")
            .decimal_units(6, 12_345)
            .timestamp(7, 1_700_000_000_000_000);
        let row = b.finish().expect("valid row");
        let r = row.view(&layout);
        assert_eq!(r.i32(0), 7);
        assert_eq!(r.int(1), -5_000_000_000);
        assert_eq!(r.str(2), "héllo");
        assert!(r.is_null(3));
        assert_eq!(r.get(3), Value::Null);
        assert_eq!(r.str(4), "AB");
        assert!(r.is_null(5));
        assert_eq!(r.decimal(6), Decimal::new(12_345, 2));
        assert_eq!(r.timestamp(7), 1_700_000_000_000_000);
        assert_eq!(r.get(2), Value::Str("héllo"));
    }

    #[test]
    fn builder_reports_the_first_invalid_value_and_resets() {
        let layout = layout();
        let mut b = RowBuilder::new(&layout);
        b.int(0, i64::from(i32::MAX) + 1).str(2, "ok");
        let err = b.finish().expect_err("out of range");
        assert!(matches!(err, Error::InvalidValue { ref column, .. } if column == "id"));
        b.int(0, 1).str(2, "this is far too long for ten bytes");
        assert!(b.finish().is_err());
        b.int(0, 1).int(1, 1).str(2, "x").str(4, "y");
        b.decimal_units(6, 1_000_000); // 10000.00 exceeds DECIMAL(6,2)
        assert!(b.finish().is_err());
        b.int(0, 1)
            .int(1, 1)
            .str(2, "x")
            .str(4, "y")
            .timestamp(7, 0);
        let missing = b.finish().expect_err("amount missing");
        assert!(matches!(missing, Error::InvalidValue { ref column, .. } if column == "amount"));
        b.int(0, 1)
            .int(1, 1)
            .str(2, "x")
            .str(4, "y")
            .decimal_units(6, 1)
            .timestamp(7, 0);
        b.null(0);
        assert!(b.finish().is_err(), "NULL in a NOT NULL column");
    }

    #[test]
    fn row_mut_updates_fixed_and_variable_columns() {
        let layout = layout();
        let mut b = RowBuilder::new(&layout);
        b.int(0, 1)
            .int(1, 2)
            .str(2, "abc")
            .str(4, "WXYZ")
            .str(5, "note")
            .decimal_units(6, 100)
            .timestamp(7, 9);
        let row = b.finish().expect("row");
        let mut m = row.view(&layout).to_mut();
        m.str(2, "longer name").int(3, 42).str(5, "n2");
        assert!(m.error.is_some(), "11 bytes exceed VARCHAR(10)");
        let mut m = row.view(&layout).to_mut();
        m.str(2, "longer nam")
            .int(3, 42)
            .str(5, "n2")
            .decimal_units(6, -250);
        let bytes = m.into_bytes().expect("valid");
        let r = RowRef::new(&layout, &bytes);
        assert_eq!(r.str(2), "longer nam");
        assert_eq!(r.i32(3), 42);
        assert_eq!(r.str(5), "n2");
        assert_eq!(r.str(4), "WXYZ");
        assert_eq!(r.decimal(6).to_string(), "-2.50");
        let mut m = r.to_mut();
        m.null(5).null(3).str(2, "");
        let bytes = m.into_bytes().expect("valid");
        let r = RowRef::new(&layout, &bytes);
        assert!(r.is_null(5) && r.is_null(3));
        assert_eq!(r.str(2), "");
    }

    #[test]
    #[should_panic(expected = "column name has type")]
    fn typed_access_to_the_wrong_type_names_the_column() {
        let layout = layout();
        let mut b = RowBuilder::new(&layout);
        b.int(0, 1)
            .int(1, 2)
            .str(2, "abc")
            .str(4, "WXYZ")
            .decimal_units(6, 100)
            .timestamp(7, 9);
        let row = b.finish().expect("row");
        let _ = row.view(&layout).i32(2);
    }
}

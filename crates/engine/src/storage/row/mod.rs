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
//! another type (or a position the table does not have) is a bug in the calling code, like an
//! out-of-bounds slice index, and panics with the column's name; the generic [`RowRef::get`] works
//! for every column type, and [`RowLayout::columns`] says what the positions are.

mod write;

pub use write::{RowBuilder, RowMut};

use crate::error::Error;
use crate::storage::schema::{Column, ColumnType, TableSchema};
use crate::storage::value::{Decimal, Value};

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

    /// The byte offset of column `col` in a row, if it is a fixed-width column.
    pub(crate) fn fixed_offset(&self, col: usize) -> Option<usize> {
        let slot = self.slots.get(col)?;
        slot.ty.fixed_width().map(|_| slot.at)
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
}

/// The `N` bytes at `at` (a stored row always holds its fixed-width fields).
#[inline(always)]
pub(crate) fn read_array<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

fn read_u16(bytes: &[u8], at: usize) -> usize {
    usize::from(u16::from_le_bytes(read_array(bytes, at)))
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
    ///
    /// # Panics
    ///
    /// If the row has no column `col`.
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
    ///
    /// # Panics
    ///
    /// If column `col` does not exist or is not `Int32` (the message names the column). NULL reads
    /// as 0: check [`is_null`](Self::is_null) on nullable columns.
    #[inline]
    #[track_caller]
    pub fn i32(&self, col: usize) -> i32 {
        let at = self.fixed_at(col, |t| t == ColumnType::Int32, "i32");
        i32::from_le_bytes(read_array(self.bytes, at))
    }

    /// Any integer column, widened to `i64`.
    ///
    /// # Panics
    ///
    /// If column `col` does not exist or is not an integer column.
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
    ///
    /// # Panics
    ///
    /// If column `col` does not exist or is not a decimal column.
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
    ///
    /// # Panics
    ///
    /// If column `col` does not exist or is not a decimal column.
    #[inline]
    #[track_caller]
    pub fn decimal(&self, col: usize) -> Decimal {
        let units = self.decimal_units(col);
        match self.layout.slots[col].ty {
            ColumnType::Decimal { scale, .. } => Decimal::from_parts(units, scale),
            _ => unreachable!("checked by decimal_units"),
        }
    }

    /// A timestamp column (microseconds since the Unix epoch).
    ///
    /// # Panics
    ///
    /// If column `col` does not exist or is not a timestamp column.
    #[inline]
    #[track_caller]
    pub fn timestamp(&self, col: usize) -> i64 {
        let at = self.fixed_at(col, |t| t == ColumnType::Timestamp, "a timestamp");
        i64::from_le_bytes(read_array(self.bytes, at))
    }

    /// The raw bytes of a string column (a `Char` without its padding).
    ///
    /// # Panics
    ///
    /// If column `col` does not exist or is not a string column.
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
            ColumnType::VarChar(_) => self.var_bytes(slot),
            _ => self.layout.wrong_type(col, "a string"),
        }
    }

    /// The bytes of a variable-length column.
    fn var_bytes(&self, slot: Slot) -> &'r [u8] {
        let table = self.layout.fixed_end;
        let end = read_u16(self.bytes, table + 2 * slot.at);
        let start = if slot.at == 0 {
            self.layout.var_base()
        } else {
            read_u16(self.bytes, table + 2 * (slot.at - 1))
        };
        &self.bytes[start..end]
    }

    /// The encoded bytes of column `col` (a fixed-width column's field, a variable one's bytes),
    /// without its NULL bit: for comparing a column of two rows of the same layout cheaply.
    pub(crate) fn column_bytes(&self, col: usize) -> &'r [u8] {
        let slot = self.layout.slots[col];
        match slot.ty.fixed_width() {
            Some(width) => &self.bytes[slot.at..slot.at + width],
            None => self.var_bytes(slot),
        }
    }

    /// A string column.
    ///
    /// # Panics
    ///
    /// If column `col` does not exist or is not a string column.
    #[inline]
    #[track_caller]
    pub fn str(&self, col: usize) -> &'r str {
        // Stored strings were validated as UTF-8 when written; a failure here means memory corruption.
        std::str::from_utf8(self.bytes(col)).expect("stored strings are valid UTF-8")
    }

    /// Column `col` as a generic [`Value`] (works for every column type, including NULLs).
    ///
    /// # Panics
    ///
    /// If the row has no column `col`.
    pub fn get(&self, col: usize) -> Value<'r> {
        if self.is_null(col) {
            return Value::Null;
        }
        match self.layout.slots[col].ty {
            ColumnType::Int32 | ColumnType::Int64 => Value::Int(self.int(col)),
            ColumnType::Decimal { .. } => Value::Decimal(self.decimal(col)),
            ColumnType::Timestamp => Value::Timestamp(self.timestamp(col)),
            ColumnType::Char(_) | ColumnType::VarChar(_) => Value::Str(self.str(col)),
            ColumnType::Numeric(_) => Value::Numeric(self.numeric(col)),
        }
    }

    /// A `Numeric` column's stored form (see [`NumericParts`](crate::NumericParts)).
    ///
    /// # Panics
    ///
    /// If column `col` does not exist or is not a `Numeric` column.
    #[inline]
    #[track_caller]
    pub fn numeric(&self, col: usize) -> &'r [u8] {
        let slot = self.layout.slots[col];
        match slot.ty {
            ColumnType::Numeric(_) => self.var_bytes(slot),
            _ => self.layout.wrong_type(col, "a numeric"),
        }
    }

    /// Copies the row into a mutable buffer (the starting point of an update).
    pub fn to_mut(&self) -> RowMut<'r> {
        RowMut::copy_of(self.layout, self.bytes)
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

//! Building and changing rows: value checks against the column types, the builder for new rows,
//! and the mutable copy an update works on.
//!
//! Everything written to a row goes through `RowLayout::check`, so every stored row is valid by
//! construction. Setters remember the first invalid value rather than failing one by one.

use super::{Row, RowLayout, RowRef, read_u16};
use crate::error::{Error, Result};
use crate::limits::{MAX_DECIMAL_PRECISION, MAX_ROW_LEN};
use crate::storage::numeric::{self, NumericParts};
use crate::storage::schema::ColumnType;
use crate::storage::value::{Decimal, Value};

/// `10^i` for every decimal precision.
const POW10: [i64; MAX_DECIMAL_PRECISION as usize + 1] = {
    let mut table = [1i64; MAX_DECIMAL_PRECISION as usize + 1];
    let mut i = 1;
    while i < table.len() {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

impl RowLayout {
    /// The common case of [`check`](Self::check) and [`write_fixed`] in one step: stores a value
    /// that needs no conversion (an integer for an INT or BIGINT column that it fits, a
    /// timestamp, a decimal at its column's scale within its precision, a string that fits its
    /// CHAR column, NULL in a nullable fixed-width column) into the fixed area `bytes`. False if
    /// the value needs the general path, which also reports errors. Always inlined: inside a
    /// typed setter the value's variant is known, and the match shrinks to a check of the
    /// column's type.
    #[inline(always)]
    fn store_plain(&self, bytes: &mut [u8], col: usize, value: &Value<'_>) -> bool {
        let Some(slot) = self.slots.get(col) else {
            return false;
        };
        let at = slot.at;
        match (slot.ty, *value) {
            (ColumnType::Int32, Value::Int(v)) => match i32::try_from(v) {
                Ok(v) => bytes[at..at + 4].copy_from_slice(&v.to_le_bytes()),
                Err(_) => return false,
            },
            (ColumnType::Int64, Value::Int(v)) | (ColumnType::Timestamp, Value::Timestamp(v)) => {
                bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
            (ColumnType::Decimal { precision, scale }, Value::Decimal(d))
                if d.scale() == scale
                    && d.units().unsigned_abs() < POW10[usize::from(precision)].unsigned_abs() =>
            {
                bytes[at..at + 8].copy_from_slice(&d.units().to_le_bytes());
            }
            (ColumnType::Char(n), Value::Str(s))
                if s.len() <= usize::from(n) && !s.as_bytes().contains(&0) =>
            {
                let field = &mut bytes[at..at + usize::from(n)];
                field[..s.len()].copy_from_slice(s.as_bytes());
                field[s.len()..].fill(b' ');
            }
            (ty, Value::Null) if slot.nullable => {
                let Some(width) = ty.fixed_width() else {
                    return false;
                };
                bytes[at..at + width].fill(0);
                set_null_bit(bytes, col, true);
                return true;
            }
            _ => return false,
        }
        if slot.nullable {
            set_null_bit(bytes, col, false);
        }
        true
    }

    /// Checks `value` against column `col` and converts it to the stored form.
    fn check<'v>(&self, col: usize, value: Value<'v>) -> Result<Checked<'v>> {
        let Some(&slot) = self.slots.get(col) else {
            return Err(Error::InvalidValue {
                column: format!("#{col}"),
                reason: format!("the table has {} columns", self.slots.len()),
            });
        };
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
                let d = Decimal::from_parts(v, 0)
                    .rescale(scale)
                    .ok_or_else(|| self.invalid(col, format!("{v} is out of range")))?;
                Checked::Int64(check_precision(self, col, d.units(), precision)?)
            }
            (ColumnType::Char(n) | ColumnType::VarChar(n), Value::Str(s)) => {
                if s.len() > usize::from(n) {
                    return Err(Error::StringTooLong {
                        column: self.name(col).to_owned(),
                        bytes: s.len(),
                        max: n,
                    });
                }
                // No NUL in a string column: a key's string then needs no escapes, so its
                // width is bounded by the declared length (see `max_key_width`).
                if s.as_bytes().contains(&0) {
                    return Err(self.invalid(col, "a string holds a NUL character"));
                }
                Checked::Bytes(s.as_bytes())
            }
            (ColumnType::Numeric(n), Value::Numeric(bytes)) => {
                if NumericParts::decode(bytes).is_none() {
                    return Err(self.invalid(col, "not a numeric's stored form"));
                }
                let digits = numeric::significant_digits(bytes);
                if digits > usize::from(n) {
                    return Err(self.invalid(
                        col,
                        format!("{digits} significant digits, more than the declared {n}"),
                    ));
                }
                Checked::Bytes(bytes)
            }
            (ty, v) => return Err(self.invalid(col, format!("{v:?} is not a {ty:?} value"))),
        };
        Ok(checked)
    }
}

fn check_precision(layout: &RowLayout, col: usize, units: i64, precision: u8) -> Result<i64> {
    let limit = POW10[usize::from(precision)];
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
    /// A string's bytes (valid UTF-8) or a numeric's stored form.
    Bytes(&'a [u8]),
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
        Checked::Bytes(s) => {
            if let ColumnType::Char(n) = slot.ty {
                let field = &mut bytes[slot.at..slot.at + usize::from(n)];
                field[..s.len()].copy_from_slice(s);
                field[s.len()..].fill(b' ');
            }
        }
    }
}

/// The typed setters shared by [`RowBuilder`] and [`RowMut`], all defined in terms of their
/// `set_known`: inlined into a typed setter, whose value's variant is known, the store of a plain
/// value shrinks to a check of the column's type (a New-Order sets ~110 columns).
macro_rules! typed_setters {
    () => {
        /// Sets an integer column.
        #[inline]
        pub fn int(&mut self, col: usize, v: i64) -> &mut Self {
            self.set_known(col, Value::Int(v))
        }

        /// Sets a decimal column from raw units at the column's own scale.
        #[inline]
        pub fn decimal_units(&mut self, col: usize, units: i64) -> &mut Self {
            // A column of another type (or none) is refused with the column's name.
            let scale = match self.layout.slots.get(col).map(|s| s.ty) {
                Some(ColumnType::Decimal { scale, .. }) => scale,
                _ => 0,
            };
            self.set_known(col, Value::Decimal(Decimal::from_parts(units, scale)))
        }

        /// Sets a string column.
        #[inline]
        pub fn str(&mut self, col: usize, s: &str) -> &mut Self {
            self.set_known(col, Value::Str(s))
        }

        /// Sets a timestamp column.
        #[inline]
        pub fn timestamp(&mut self, col: usize, micros: i64) -> &mut Self {
            self.set_known(col, Value::Timestamp(micros))
        }

        /// Sets a nullable column to NULL.
        #[inline]
        pub fn null(&mut self, col: usize) -> &mut Self {
            self.set_known(col, Value::Null)
        }
    };
}

/// Builds new rows column by column. Reusable: [`finish`](Self::finish) resets it, so a loader can
/// build millions of rows with one builder and one allocation per row.
///
/// Setters do not return errors one by one: the first invalid value (wrong type, out of range,
/// too long, NULL in a NOT NULL column, a column position the table does not have) is remembered
/// and returned by `finish`, which keeps loaders and stored procedures readable. Setters never
/// panic.
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
    #[inline]
    pub fn set(&mut self, col: usize, value: Value<'_>) -> &mut Self {
        self.set_known(col, value)
    }

    /// [`set`](Self::set), always inlined (see `typed_setters`).
    #[inline(always)]
    fn set_known(&mut self, col: usize, value: Value<'_>) -> &mut Self {
        // The plain case inline (a stored procedure sets ~100 columns per New-Order); the
        // general one, with its checks and error reporting, out of line.
        if self.error.is_none()
            && let Some(assigned) = self.assigned.get_mut(col)
            && self.layout.store_plain(&mut self.fixed, col, &value)
        {
            *assigned = true;
            return self;
        }
        self.set_checked(col, value)
    }

    #[inline(never)]
    fn set_checked(&mut self, col: usize, value: Value<'_>) -> &mut Self {
        if self.error.is_some() {
            return self;
        }
        match self.layout.check(col, value) {
            Ok(checked) => {
                self.assigned[col] = true;
                let slot = self.layout.slots[col];
                match (slot.ty, &checked) {
                    (ColumnType::VarChar(_) | ColumnType::Numeric(_), Checked::Bytes(s)) => {
                        self.var_spans[slot.at] = Some((self.var_data.len(), s.len()));
                        self.var_data.extend_from_slice(s);
                        if slot.nullable {
                            set_null_bit(&mut self.fixed, col, false);
                        }
                    }
                    (ColumnType::VarChar(_) | ColumnType::Numeric(_), Checked::Null) => {
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

    typed_setters!();

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
        if total > MAX_ROW_LEN {
            return Err(Error::RowTooBig { bytes: total });
        }
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
            // Fits: checked above.
            bytes[at..at + 2].copy_from_slice(&(end as u16).to_le_bytes());
        }
        Ok(Row {
            owner: self.layout.owner,
            bytes: bytes.into_boxed_slice(),
        })
    }
}

/// A private, mutable copy of a row: what an update closure receives. Like [`RowBuilder`], setters
/// remember the first invalid value, which the update then reports, and never panic.
pub struct RowMut<'l> {
    layout: &'l RowLayout,
    bytes: Vec<u8>,
    error: Option<Error>,
    /// Columns a setter was called for: bit `c` for column `c < 64`, the top bit for any column
    /// from 63 on (so "maybe changed" is never missed).
    touched: u64,
}

impl<'l> RowMut<'l> {
    pub(super) fn copy_of(layout: &'l RowLayout, bytes: &[u8]) -> Self {
        RowMut {
            layout,
            bytes: bytes.to_vec(),
            error: None,
            touched: 0,
        }
    }

    /// True if a setter may have changed one of `cols` (false means none of them was set).
    pub(crate) fn may_have_set(&self, cols: &[usize]) -> bool {
        cols.iter()
            .any(|&c| self.touched & (1u64 << c.min(63)) != 0)
    }

    /// Read access to the current contents.
    pub fn as_ref(&self) -> RowRef<'_> {
        RowRef::new(self.layout, &self.bytes)
    }

    /// Sets column `col` to `value` (checked against the column).
    #[inline]
    pub fn set(&mut self, col: usize, value: Value<'_>) -> &mut Self {
        self.set_known(col, value)
    }

    /// [`set`](Self::set), always inlined (see `typed_setters`).
    #[inline(always)]
    fn set_known(&mut self, col: usize, value: Value<'_>) -> &mut Self {
        // As `RowBuilder::set`: the plain case inline, the general one out of line.
        if self.error.is_none() && self.layout.store_plain(&mut self.bytes, col, &value) {
            self.touched |= 1u64 << col.min(63);
            return self;
        }
        self.set_checked(col, value)
    }

    #[inline(never)]
    fn set_checked(&mut self, col: usize, value: Value<'_>) -> &mut Self {
        if self.error.is_some() {
            return self;
        }
        self.touched |= 1u64 << col.min(63);
        let layout = self.layout;
        match layout.check(col, value) {
            Ok(checked) => {
                let slot = layout.slots[col];
                if slot.ty.fixed_width().is_none() {
                    let text: &[u8] = match &checked {
                        Checked::Bytes(s) => s,
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

    typed_setters!();

    fn replace_var(&mut self, ordinal: usize, text: &[u8]) {
        let table = self.layout.fixed_end;
        let end = read_u16(&self.bytes, table + 2 * ordinal);
        let start = if ordinal == 0 {
            self.layout.var_base()
        } else {
            read_u16(&self.bytes, table + 2 * (ordinal - 1))
        };
        let total = self.bytes.len() - (end - start) + text.len();
        if total > MAX_ROW_LEN {
            self.error.get_or_insert(Error::RowTooBig { bytes: total });
            return;
        }
        self.bytes.splice(start..end, text.iter().copied());
        let delta = text.len() as isize - (end - start) as isize;
        for k in ordinal..self.layout.var_count {
            let at = table + 2 * k;
            let moved = read_u16(&self.bytes, at) as isize + delta;
            self.bytes[at..at + 2].copy_from_slice(&(moved as u16).to_le_bytes());
        }
    }

    pub(crate) fn into_bytes(self) -> Result<Box<[u8]>> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.bytes.into_boxed_slice()),
        }
    }
}

#[cfg(test)]
mod tests;

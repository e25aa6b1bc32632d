//! Order-preserving composite keys.
//!
//! Every index maps byte-string keys to records, and byte order must equal the order of the values
//! they encode, column by column:
//!
//! - integers, decimals and timestamps: a length code, then only the significant bytes (big-endian;
//!   one's complement for negatives). The code is `0x80` for zero, `0x80 + n` for a positive value
//!   of `n` bytes and `0x80 - n` for a negative one, so shorter magnitudes sort inside longer ones
//!   the right way round and no encoding is a prefix of another. Small ids, the common case, take
//!   two or three bytes, which keeps index entries small;
//! - strings: the bytes with `0x00` escaped as `0x00 0xFF`, then the terminator `0x00 0x00`, so a
//!   string sorts before any longer string it is a prefix of, and the next column starts cleanly.
//!   `CHAR` values are encoded without their padding, matching how they compare;
//! - a column that may be NULL (secondary indexes only): a marker first, [`NOT_NULL`] then the
//!   value, or [`NULL`] alone, so NULLs sort after every value, as PostgreSQL orders them in an
//!   ascending index.
//!
//! Keys are built on the stack ([`KeyBuf`], no allocation up to 62 bytes) and stored compactly
//! ([`IndexKey`]: 16 bytes, holding keys of up to 14 bytes inline, which covers every TPC-C
//! primary key).

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::ops::Bound;

use crate::error::{Error, Result};
use crate::limits::MAX_KEY_LEN;
use crate::storage::numeric::{self, NumericParts};
use crate::storage::row::RowRef;
use crate::storage::schema::ColumnType;
use crate::storage::value::Value;

/// The marker before a present value of a nullable key column.
pub(crate) const NOT_NULL: u8 = 0x01;
/// A NULL in a nullable key column (sorts after [`NOT_NULL`]: NULLs last).
pub(crate) const NULL: u8 = 0x02;

/// Key bytes a [`KeyBuf`] holds without allocating: every TPC-C and CH-benCHmark key (the
/// longest, a customer's name index entry, takes about 40). Keys up to [`MAX_KEY_LEN`] spill to
/// the heap.
const KEY_INLINE: usize = 62;

/// An encoded key, built on the stack while short (no allocation). Small on purpose: a key is
/// built, returned and moved many times per transaction, and each move copies the whole value
/// (with room for the longest key inline, zeroing and copying 256 bytes per key took a New-Order
/// ~4.4k instructions of memcpy, 3% of all its instructions).
#[derive(Clone)]
pub struct KeyBuf {
    len: u8,
    inline: [u8; KEY_INLINE],
    /// The whole key once it outgrew `inline` (then `inline` is unused).
    spill: Option<Box<[u8; MAX_KEY_LEN]>>,
}

impl KeyBuf {
    /// An empty key (sorts before every other key).
    pub const fn new() -> Self {
        KeyBuf {
            len: 0,
            inline: [0; KEY_INLINE],
            spill: None,
        }
    }

    /// A key holding `bytes` (which must already be an encoded key), if short enough.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let mut k = KeyBuf::new();
        k.push(bytes).then_some(k)
    }

    /// The encoded bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        let len = usize::from(self.len);
        match &self.spill {
            None => &self.inline[..len],
            Some(spill) => &spill[..len],
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// True for the empty key.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Replaces the key with `bytes`. False (and the key left empty) if they are too long.
    #[inline]
    pub(crate) fn set(&mut self, bytes: &[u8]) -> bool {
        self.len = 0;
        self.push(bytes)
    }

    /// Room for the bytes up to `end` (at most `MAX_KEY_LEN`), moving the key to the heap if it
    /// outgrows the inline buffer.
    #[inline]
    fn room(&mut self, end: usize) -> &mut [u8] {
        debug_assert!(end <= MAX_KEY_LEN);
        if self.spill.is_none() && end > KEY_INLINE {
            let mut spill = Box::new([0; MAX_KEY_LEN]);
            spill[..KEY_INLINE].copy_from_slice(&self.inline);
            self.spill = Some(spill);
        }
        match &mut self.spill {
            None => &mut self.inline[..],
            Some(spill) => &mut spill[..],
        }
    }

    #[inline]
    fn push(&mut self, bytes: &[u8]) -> bool {
        let at = usize::from(self.len);
        let Some(end) = at.checked_add(bytes.len()).filter(|e| *e <= MAX_KEY_LEN) else {
            return false;
        };
        self.room(end)[at..end].copy_from_slice(bytes);
        self.len = end as u8;
        true
    }

    /// Appends an integer in the order-preserving variable-length form (see the module comment).
    #[inline(always)]
    pub(crate) fn push_int(&mut self, v: i64) -> bool {
        let IntCode { code, bytes, n } = IntCode::of(v);
        let at = usize::from(self.len);
        if self.spill.is_none() && at + 9 <= KEY_INLINE {
            // Fast path: one fixed-size store of the significant bytes moved to the front (what
            // follows them is beyond the key's length and never read).
            let word = u64::from_be_bytes(bytes)
                .checked_shl(8 * (8 - n as u32))
                .unwrap_or(0);
            self.inline[at] = code;
            self.inline[at + 1..at + 9].copy_from_slice(&word.to_be_bytes());
            self.len = (at + 1 + n) as u8;
            return true;
        }
        self.push(&[code]) && self.push(&bytes[8 - n..])
    }

    /// A stored numeric's sortable part: order-preserving and self-delimiting already.
    fn push_numeric(&mut self, stored: &[u8]) -> bool {
        match numeric::sortable_len(stored) {
            Some(len) => self.push(&stored[..len]),
            None => false,
        }
    }

    fn push_str(&mut self, s: &[u8]) -> bool {
        for chunk in s.split_inclusive(|&b| b == 0) {
            match chunk.split_last() {
                Some((0, head)) => {
                    if !(self.push(head) && self.push(&[0, 0xFF])) {
                        return false;
                    }
                }
                _ => {
                    if !self.push(chunk) {
                        return false;
                    }
                }
            }
        }
        self.push(&[0, 0])
    }

    /// The smallest key greater than every key that starts with `self`, or `None` if there is none
    /// (the prefix is empty or all `0xFF`).
    pub fn prefix_successor(&self) -> Option<KeyBuf> {
        let bytes = self.as_bytes();
        let last = bytes.iter().rposition(|&b| b != 0xFF)?;
        let mut next = KeyBuf::new();
        next.push(&bytes[..=last]);
        next.room(last + 1)[last] += 1;
        Some(next)
    }

    /// Appends the encoding of column `col` of `row` (whose type is `ty`).
    pub(crate) fn push_column(&mut self, row: &RowRef<'_>, col: usize, ty: ColumnType) -> bool {
        match ty {
            ColumnType::Int32 | ColumnType::Int64 => self.push_int(row.int(col)),
            ColumnType::Decimal { .. } => self.push_int(row.decimal_units(col)),
            ColumnType::Timestamp => self.push_int(row.timestamp(col)),
            ColumnType::Char(_) | ColumnType::VarChar(_) => self.push_str(row.bytes(col)),
            ColumnType::Numeric(_) => self.push_numeric(row.numeric(col)),
        }
    }

    /// Appends a nullable key column's marker ([`NOT_NULL`] or [`NULL`]).
    pub(crate) fn push_marker(&mut self, marker: u8) -> bool {
        self.push(&[marker])
    }

    /// Appends a hidden row id (encoded like an `Int64` key column, so key builders agree).
    pub(crate) fn push_row_id(&mut self, id: u64) -> bool {
        self.push_int(id as i64)
    }
}

/// The values of `key`, an encoded key of columns `types`, as text for people: `(1, 'ab')`, each
/// value as SQL would write it. A key shorter than `types` shows the columns it has; bytes that are
/// not such a key give `None`.
pub(crate) fn describe(
    mut key: &[u8],
    types: &[ColumnType],
    nullable: Option<&[bool]>,
) -> Option<String> {
    let mut parts = Vec::with_capacity(types.len());
    for (i, &ty) in types.iter().enumerate() {
        if key.is_empty() {
            break;
        }
        if nullable.is_some_and(|n| n[i]) {
            let (&marker, rest) = key.split_first()?;
            key = rest;
            match marker {
                NULL => {
                    parts.push("NULL".to_owned());
                    continue;
                }
                NOT_NULL => {}
                _ => return None,
            }
        }
        let part = match ty {
            ColumnType::Int32 | ColumnType::Int64 | ColumnType::Timestamp => {
                decode_int(&mut key)?.to_string()
            }
            ColumnType::Decimal { scale, .. } => {
                crate::storage::value::Decimal::new(decode_int(&mut key)?, scale)
                    .ok()?
                    .to_string()
            }
            ColumnType::Char(_) | ColumnType::VarChar(_) => {
                let text = decode_str(&mut key)?;
                format!("'{}'", String::from_utf8_lossy(&text).replace('\'', "''"))
            }
            ColumnType::Numeric(_) => {
                let (parts, len) = numeric::decode_sortable(key)?;
                key = &key[len..];
                parts.to_string()
            }
        };
        parts.push(part);
    }
    key.is_empty().then(|| format!("({})", parts.join(", ")))
}

/// Takes an integer in the order-preserving form off the front of `key`.
fn decode_int(key: &mut &[u8]) -> Option<i64> {
    let (&code, rest) = key.split_first()?;
    let negative = code < 0x80;
    let n = usize::from(if negative { 0x80 - code } else { code - 0x80 });
    if n > 8 || rest.len() < n {
        return None;
    }
    let fill = if negative { 0xFF } else { 0 };
    let mut bytes = [fill; 8];
    bytes[8 - n..].copy_from_slice(&rest[..n]);
    *key = &rest[n..];
    let word = u64::from_be_bytes(bytes);
    Some(if negative {
        (!word as i64).wrapping_neg()
    } else {
        word as i64
    })
}

/// Takes a string (escaped `0x00` as `0x00 0xFF`, ended by `0x00 0x00`) off the front of `key`.
fn decode_str(key: &mut &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        match *key.get(i)? {
            0 => match *key.get(i + 1)? {
                0 => {
                    *key = &key[i + 2..];
                    return Some(out);
                }
                0xFF => {
                    out.push(0);
                    i += 2;
                }
                _ => return None,
            },
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
}

/// An integer's order-preserving form (see the module comment): the length code, then the last
/// `n` of `bytes`.
pub(crate) struct IntCode {
    pub(crate) code: u8,
    pub(crate) bytes: [u8; 8],
    pub(crate) n: usize,
}

impl IntCode {
    #[inline(always)]
    pub(crate) fn of(v: i64) -> Self {
        let magnitude = v.unsigned_abs();
        let n = (8 - magnitude.leading_zeros() / 8) as usize;
        let bytes = if v < 0 { !magnitude } else { magnitude }.to_be_bytes();
        let code = if v < 0 {
            0x80 - n as u8
        } else {
            0x80 + n as u8
        };
        IntCode { code, bytes, n }
    }

    /// `key` without this encoding at its front, or `None` if it does not start with it.
    #[inline(always)]
    pub(crate) fn strip_from<'k>(&self, key: &'k [u8]) -> Option<&'k [u8]> {
        let (&code, rest) = key.split_first()?;
        let (significant, rest) = rest.split_at_checked(self.n)?;
        (code == self.code && significant == &self.bytes[8 - self.n..]).then_some(rest)
    }
}

impl Default for KeyBuf {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for KeyBuf {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for KeyBuf {}

impl std::fmt::Debug for KeyBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeyBuf(")?;
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

/// Builds a key for one index from typed parts, checking each part against the key's column types.
/// Like the row builder, it remembers the first error and reports it from
/// [`finish`](Self::finish) / [`prefix`](Self::prefix). Cloning one that holds a prefix builds
/// keys that share it without encoding the prefix again.
#[derive(Clone)]
pub struct KeyBuilder<'t> {
    index: &'t str,
    columns: &'t [ColumnType],
    /// Which columns may be NULL (each then starts with a marker); `None` if none may.
    nullable: Option<&'t [bool]>,
    next: usize,
    buf: KeyBuf,
    error: Option<&'static str>,
}

impl<'t> KeyBuilder<'t> {
    pub(crate) fn new(
        index: &'t str,
        columns: &'t [ColumnType],
        nullable: Option<&'t [bool]>,
    ) -> Self {
        KeyBuilder {
            index,
            columns,
            nullable,
            next: 0,
            buf: KeyBuf::new(),
            error: None,
        }
    }

    fn part(&mut self, value: Value<'_>) -> &mut Self {
        if self.error.is_some() {
            return self;
        }
        let Some(&ty) = self.columns.get(self.next) else {
            self.error = Some("more parts than key columns");
            return self;
        };
        if self.nullable.is_some_and(|n| n[self.next]) {
            let marker = if matches!(value, Value::Null) {
                NULL
            } else {
                NOT_NULL
            };
            if !self.buf.push_marker(marker) {
                self.error = Some("key too long");
                return self;
            }
            if marker == NULL {
                self.next += 1;
                return self;
            }
        }
        let ok = match (ty, value) {
            (ColumnType::Int32, Value::Int(v)) => match i32::try_from(v) {
                Ok(v) => self.buf.push_int(v.into()),
                Err(_) => {
                    self.error = Some("integer out of range for an INT key column");
                    return self;
                }
            },
            (ColumnType::Int64, Value::Int(v)) | (ColumnType::Timestamp, Value::Timestamp(v)) => {
                self.buf.push_int(v)
            }
            (ColumnType::Decimal { scale, .. }, Value::Decimal(d)) => match d.rescale(scale) {
                Some(d) => self.buf.push_int(d.units()),
                None => {
                    self.error = Some("decimal not exact at the key column's scale");
                    return self;
                }
            },
            (ColumnType::Char(n) | ColumnType::VarChar(n), Value::Str(s)) => {
                if s.len() > usize::from(n) {
                    self.error = Some("string longer than the key column");
                    return self;
                }
                let trimmed = if matches!(ty, ColumnType::Char(_)) {
                    s.trim_end_matches(' ')
                } else {
                    s
                };
                self.buf.push_str(trimmed.as_bytes())
            }
            (ColumnType::Numeric(n), Value::Numeric(bytes)) => {
                if NumericParts::decode(bytes).is_none() {
                    self.error = Some("not a stored numeric");
                    return self;
                }
                if numeric::significant_digits(bytes) > usize::from(n) {
                    self.error = Some("numeric with more digits than the key column");
                    return self;
                }
                self.buf.push_numeric(bytes)
            }
            _ => {
                self.error = Some("value type does not match the key column");
                return self;
            }
        };
        if !ok {
            self.error = Some("key too long");
        }
        self.next += 1;
        self
    }

    /// Appends an integer part.
    #[inline]
    pub fn int(&mut self, v: i64) -> &mut Self {
        // The usual part of the usual key (stored procedures build several per transaction)
        // inline: an integer for an integer column it fits. Anything else, and every error, is
        // `part`'s.
        let fits = match self.columns.get(self.next) {
            _ if self.nullable.is_some() => false,
            Some(ColumnType::Int64) => true,
            Some(ColumnType::Int32) => i32::try_from(v).is_ok(),
            _ => false,
        };
        if !fits || self.error.is_some() {
            return self.part(Value::Int(v));
        }
        if !self.buf.push_int(v) {
            self.error = Some("key too long");
        }
        self.next += 1;
        self
    }

    /// Appends a string part.
    pub fn str(&mut self, s: &str) -> &mut Self {
        self.part(Value::Str(s))
    }

    /// Appends any part.
    pub fn value(&mut self, v: Value<'_>) -> &mut Self {
        self.part(v)
    }

    fn error(&self, reason: &str) -> Error {
        Error::InvalidKey {
            index: self.index.to_owned(),
            reason: reason.to_owned(),
        }
    }

    /// The complete key; fails unless every key column got a part.
    pub fn finish(&self) -> Result<KeyBuf> {
        if let Some(reason) = self.error {
            return Err(self.error(reason));
        }
        if self.next != self.columns.len() {
            return Err(self.error("fewer parts than key columns"));
        }
        Ok(self.buf.clone())
    }

    /// A key prefix (any number of leading parts), for range scans.
    pub fn prefix(&self) -> Result<KeyBuf> {
        match self.error {
            Some(reason) => Err(self.error(reason)),
            None => Ok(self.buf.clone()),
        }
    }
}

/// A range of keys for scans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRange {
    pub(crate) lower: Bound<KeyBuf>,
    pub(crate) upper: Bound<KeyBuf>,
}

impl KeyRange {
    /// Every key.
    pub fn all() -> Self {
        KeyRange {
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
        }
    }

    /// Keys between two bounds.
    pub fn new(lower: Bound<KeyBuf>, upper: Bound<KeyBuf>) -> Self {
        KeyRange { lower, upper }
    }

    /// Keys that start with `prefix` (built with [`KeyBuilder::prefix`]).
    pub fn prefix(prefix: KeyBuf) -> Self {
        let upper = match prefix.prefix_successor() {
            Some(next) => Bound::Excluded(next),
            None => Bound::Unbounded,
        };
        KeyRange {
            lower: Bound::Included(prefix),
            upper,
        }
    }

    /// Exactly one key.
    pub fn point(key: KeyBuf) -> Self {
        KeyRange {
            lower: Bound::Included(key.clone()),
            upper: Bound::Included(key),
        }
    }
}

pub(crate) fn as_slice_bound(b: &Bound<KeyBuf>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_bytes()),
        Bound::Excluded(k) => Bound::Excluded(k.as_bytes()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

const INLINE: usize = 14;

/// A key as stored in an index: 16 bytes, inline when short (no allocation), boxed otherwise (a
/// thin box, so that the enum stays 16 bytes). Orders exactly like its bytes.
#[derive(Clone)]
pub(crate) enum IndexKey {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<Box<[u8]>>),
}

impl IndexKey {
    pub(crate) fn new(key: &[u8]) -> Self {
        if key.len() <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..key.len()].copy_from_slice(key);
            IndexKey::Inline {
                len: key.len() as u8,
                bytes,
            }
        } else {
            IndexKey::Heap(Box::new(key.into()))
        }
    }

    #[inline]
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            IndexKey::Inline { len, bytes } => &bytes[..usize::from(*len)],
            IndexKey::Heap(b) => b,
        }
    }
}

impl Borrow<[u8]> for IndexKey {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

/// The first 8 and the last 6 bytes of an inline key as big-endian integers. Padding bytes are
/// zero, so comparing these (then the lengths) orders inline keys exactly like their bytes: a key
/// sorts before any longer key it is a prefix of, and the first differing byte decides otherwise.
#[inline]
fn inline_words(bytes: &[u8; INLINE]) -> (u64, u64) {
    let mut high = [0u8; 8];
    high.copy_from_slice(&bytes[..8]);
    let mut low = [0u8; 8];
    low[..INLINE - 8].copy_from_slice(&bytes[8..]);
    (u64::from_be_bytes(high), u64::from_be_bytes(low))
}

impl PartialEq for IndexKey {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (IndexKey::Inline { len: a, bytes: x }, IndexKey::Inline { len: b, bytes: y }) => {
                a == b && x == y
            }
            _ => self.as_slice() == other.as_slice(),
        }
    }
}

impl Eq for IndexKey {}

impl std::hash::Hash for IndexKey {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl PartialOrd for IndexKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for IndexKey {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (IndexKey::Inline { len: a, bytes: x }, IndexKey::Inline { len: b, bytes: y }) => {
                inline_words(x).cmp(&inline_words(y)).then_with(|| a.cmp(b))
            }
            _ => self.as_slice().cmp(other.as_slice()),
        }
    }
}

impl std::fmt::Debug for IndexKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match KeyBuf::from_bytes(self.as_slice()) {
            Some(k) => k.fmt(f),
            None => write!(f, "IndexKey(..)"),
        }
    }
}

#[cfg(test)]
mod tests;

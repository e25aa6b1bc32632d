//! The engine's fixed limits: sizes a schema, a key, a row or a decimal may not exceed. A leaf:
//! schemas and values check against these, errors name them, and nothing here depends on either.

/// Largest encoded key, in bytes (a schema whose keys could be longer is refused).
pub const MAX_KEY_LEN: usize = 255;

/// Largest encoded row, in bytes (row offsets are 16-bit).
pub const MAX_ROW_LEN: usize = u16::MAX as usize;

/// Largest number of columns in a table.
pub const MAX_COLUMNS: usize = 1024;

/// Largest precision (and so scale) a decimal may have; `10^18` still fits an `i64`, and a
/// comparison across scales (`units * 10^18` in an `i128`) cannot overflow.
pub const MAX_DECIMAL_PRECISION: u8 = 18;

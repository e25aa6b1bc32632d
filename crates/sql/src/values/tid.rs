//! `tid`, where a row is kept: PostgreSQL's `(block,offset)`, the type of every table's `ctid`.
//!
//! A value is held as `block << 16 | offset`, which orders as PostgreSQL orders tids. A row's
//! tid here is its engine record id (see `overtake_engine::RecordId`) written as a block of 256
//! rows and a 1-based offset in it, so tids look like PostgreSQL's. Every id below 2^40 (a
//! trillion records, far beyond what memory holds) has one.

use overtake_engine::RecordId;

use crate::error::{Result, SqlError, sqlstate};

/// Rows per block in a tid made from a record id.
const BLOCK_ROWS: u64 = 256;

/// A tid's value from its block and offset.
fn pack(block: u32, offset: u16) -> u64 {
    u64::from(block) << 16 | u64::from(offset)
}

/// The block and offset of a tid's value.
fn unpack(tid: u64) -> (u32, u16) {
    ((tid >> 16) as u32, tid as u16)
}

/// The tid of record `id`.
pub fn of_record(id: RecordId) -> u64 {
    let id = id.get();
    pack((id / BLOCK_ROWS) as u32, (id % BLOCK_ROWS + 1) as u16)
}

/// The record a tid names, if any record id has that tid.
pub fn record(tid: u64) -> Option<RecordId> {
    let (block, offset) = unpack(tid);
    let offset = u64::from(offset).checked_sub(1)?;
    (offset < BLOCK_ROWS).then(|| RecordId::new(u64::from(block) * BLOCK_ROWS + offset))
}

/// A tid's text: `(block,offset)`.
pub fn text(tid: u64) -> String {
    let (block, offset) = unpack(tid);
    format!("({block},{offset})")
}

/// Reads a tid as PostgreSQL's input does: `(block,offset)`, spaces before each number but not
/// after, a negative block read as the unsigned number it wraps to, anything after the `)`
/// ignored.
pub fn parse(input: &str) -> Result<u64> {
    parts(input).map(|(b, o)| pack(b, o)).ok_or_else(|| {
        SqlError::new(
            sqlstate::INVALID_TEXT_REPRESENTATION,
            format!("invalid input syntax for type tid: \"{input}\""),
        )
    })
}

/// The block and offset `text` gives.
fn parts(text: &str) -> Option<(u32, u16)> {
    let inner = text.trim_start().strip_prefix('(')?;
    let (block, rest) = inner.split_once(',')?;
    let (offset, _) = rest.split_once(')')?;
    let number = |s: &str| -> Option<i64> {
        let s = s.trim_start();
        let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let block = number(block)?;
    let block = match block {
        0..=0xFFFF_FFFF => block as u32,
        -0xFFFF_FFFF..0 => (block + (1 << 32)) as u32,
        _ => return None,
    };
    let offset = u16::try_from(number(offset)?).ok()?;
    Some((block, offset))
}

/// The six bytes of PostgreSQL's binary tid (block, then offset, big-endian).
pub fn to_binary(tid: u64) -> [u8; 6] {
    let (block, offset) = unpack(tid);
    let mut out = [0; 6];
    out[..4].copy_from_slice(&block.to_be_bytes());
    out[4..].copy_from_slice(&offset.to_be_bytes());
    out
}

/// A binary tid's value.
pub fn from_binary(b: [u8; 6]) -> u64 {
    pack(
        u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        u16::from_be_bytes([b[4], b[5]]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_ids_and_tids_name_each_other() {
        for id in [0, 1, 255, 256, 257, 1 << 32, (1 << 40) - 1] {
            let tid = of_record(RecordId::new(id));
            assert_eq!(record(tid), Some(RecordId::new(id)), "{}", text(tid));
            assert_eq!(parse(&text(tid)).unwrap(), tid);
        }
        assert_eq!(text(of_record(RecordId::new(0))), "(0,1)");
        assert_eq!(text(of_record(RecordId::new(256))), "(1,1)");
        // Offsets no record id has name no record.
        assert_eq!(record(parse("(0,0)").unwrap()), None);
        assert_eq!(record(parse("(0,257)").unwrap()), None);
    }

    #[test]
    fn tids_order_by_block_then_offset() {
        let order: Vec<u64> = ["(0,2)", "(0,10)", "(1,1)", "(10,0)"]
            .iter()
            .map(|t| parse(t).unwrap())
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn input_is_read_as_postgresql_reads_it() {
        let shown = |t: &str| text(parse(t).unwrap());
        assert_eq!(shown(" ( 0, 1) "), "(0,1)");
        assert_eq!(shown("(01,002)"), "(1,2)");
        assert_eq!(shown("(-1,1)"), "(4294967295,1)");
        assert_eq!(shown("(1,1)x"), "(1,1)");
        for bad in [
            "0,1",
            "(0 ,1)",
            "(0,1 )",
            "(1,65536)",
            "(4294967296,1)",
            "(1,-1)",
            "(a,1)",
            "(1,1",
            "",
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.code, sqlstate::INVALID_TEXT_REPRESENTATION, "{bad}");
        }
    }

    #[test]
    fn binary_form_is_block_then_offset() {
        let tid = parse("(258,3)").unwrap();
        let b = to_binary(tid);
        assert_eq!(b, [0, 0, 1, 2, 0, 3]);
        assert_eq!(from_binary(b), tid);
    }
}

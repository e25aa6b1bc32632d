//! Rows of one width kept as their values, in chunks of a few thousand values: what a scan
//! found before passing it on, or a hash table's rows. One allocation per chunk rather than
//! one per row; and never one large vector, which would grow by copying itself and take
//! fresh memory from the kernel each time (perf: the kernel's page clearing under a
//! 300k-row scan's doubling vector made CH Q1 twice as slow), where chunks reuse the
//! allocator's free blocks of one size.
//!
//! Must never hand out a row of another width than it was made with.

use crate::values::datum::Datum;

/// Values per chunk: 128 KiB of values, within the allocator's reused block sizes.
const CHUNK_VALUES: usize = 4096;

pub(super) struct RowStore {
    width: usize,
    /// Rows per chunk (at least one).
    per_chunk: usize,
    chunks: Vec<Vec<Datum>>,
    rows: usize,
}

impl RowStore {
    pub(super) fn new(width: usize) -> RowStore {
        RowStore {
            width,
            per_chunk: (CHUNK_VALUES / width.max(1)).max(1),
            chunks: Vec::new(),
            rows: 0,
        }
    }

    /// How many rows it holds.
    pub(super) fn len(&self) -> usize {
        self.rows
    }

    /// Adds a row: the first `width` values of `values` (NULL for any missing); returns its
    /// position.
    pub(super) fn push(&mut self, values: impl Iterator<Item = Datum>) -> usize {
        if self.rows.is_multiple_of(self.per_chunk) {
            self.chunks
                .push(Vec::with_capacity(self.per_chunk * self.width));
        }
        let chunk = self.chunks.last_mut().expect("a chunk was just made");
        let start = chunk.len();
        chunk.extend(values.take(self.width));
        chunk.resize(start + self.width, Datum::Null);
        self.rows += 1;
        self.rows - 1
    }

    /// Row `at`'s values.
    pub(super) fn row(&self, at: usize) -> &[Datum] {
        let (chunk, within) = (at / self.per_chunk, at % self.per_chunk);
        &self.chunks[chunk][within * self.width..(within + 1) * self.width]
    }

    /// Every row's values, one row after another, handed over (moved, so that nothing is
    /// left behind to drop).
    pub(super) fn into_values(self) -> impl Iterator<Item = Datum> {
        self.chunks.into_iter().flatten()
    }
}

/// Puts a found row's values of `columns` (of a source `width` wide) into the joined row `row`
/// after its first `outer` values, the source's other columns NULL. Only those columns are
/// written: the others stay NULL from the row before, unless a sink took the row's values,
/// which leaves it to be made again.
pub(super) fn place(
    row: &mut Vec<Datum>,
    (outer, width): (usize, usize),
    columns: &[usize],
    values: impl Iterator<Item = Datum>,
) {
    if row.len() != outer + width {
        row.truncate(outer);
        row.resize(outer + width, Datum::Null);
    }
    for (&c, v) in columns.iter().zip(values) {
        row[outer + c] = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_across_chunks_keep_their_values_and_width() {
        let mut store = RowStore::new(3);
        for i in 0..5000 {
            let at = store.push([Datum::Int(i), Datum::Int(-i)].into_iter());
            assert_eq!(at, i as usize);
        }
        assert_eq!(store.len(), 5000);
        assert!(store.chunks.len() > 1);
        for i in [0usize, 1364, 1365, 4999] {
            let n = i as i64;
            assert_eq!(store.row(i), [Datum::Int(n), Datum::Int(-n), Datum::Null]);
        }
        let values: Vec<Datum> = store.into_values().collect();
        assert_eq!(values.len(), 15_000);
        assert_eq!(
            values[3 * 1365..3 * 1366],
            [Datum::Int(1365), Datum::Int(-1365), Datum::Null]
        );
        // Rows of no columns are counted all the same.
        let mut none = RowStore::new(0);
        none.push(std::iter::empty());
        none.push([Datum::Int(1)].into_iter());
        assert_eq!((none.len(), none.row(1).len()), (2, 0));
    }
}

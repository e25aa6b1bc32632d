//! Index keys packed into one `u128` whose integer order is the byte order of the keys.
//!
//! The first 15 bytes of a key fill the high bytes (zero-padded); the low byte is the key's length,
//! or [`LONG`] for keys of more than 15 bytes. Two keys of up to 15 bytes compare exactly as their
//! packed forms do: equal padded bytes mean one key is the other plus trailing zeros, and the
//! shorter one sorts first, as its length byte says. A long key sorts after every key of up to 15
//! bytes sharing its first 15 bytes, which is also byte order; two long keys with the same first
//! 15 bytes tie and are told apart by their full bytes, which the tree keeps beside the packed form.
//!
//! Every key of TPC-C's primary indexes is under 15 bytes, so most comparisons are one integer
//! comparison.

use std::cmp::Ordering;

/// Bytes of a key held in its packed form.
pub(super) const INLINE_BYTES: usize = 15;
/// Length byte of a key longer than [`INLINE_BYTES`].
pub(super) const LONG: u8 = 0xFF;

/// The packed form of `key`.
#[inline]
pub(super) fn pack(key: &[u8]) -> u128 {
    let n = key.len().min(INLINE_BYTES);
    let mut buf = [0u8; 16];
    buf[..n].copy_from_slice(&key[..n]);
    buf[15] = if key.len() <= INLINE_BYTES {
        key.len() as u8
    } else {
        LONG
    };
    u128::from_be_bytes(buf)
}

/// True if `packed` stands for a key longer than [`INLINE_BYTES`].
#[inline]
pub(super) fn is_long(packed: u128) -> bool {
    packed as u8 == LONG
}

/// The bytes of a short key's packed form (`None` for a long key).
#[inline]
pub(super) fn unpack(packed: u128) -> Option<([u8; 16], usize)> {
    let bytes = packed.to_be_bytes();
    let len = usize::from(bytes[15]);
    (len <= INLINE_BYTES).then_some((bytes, len))
}

/// A key being searched for: its packed form and its bytes.
#[derive(Clone, Copy, Debug)]
pub(super) struct SearchKey<'k> {
    pub(super) packed: u128,
    pub(super) bytes: &'k [u8],
}

impl<'k> SearchKey<'k> {
    #[inline]
    pub(super) fn new(bytes: &'k [u8]) -> Self {
        SearchKey {
            packed: pack(bytes),
            bytes,
        }
    }

    /// Compares a stored key (its packed form, and its full bytes if it is long) with this one.
    /// `long_bytes` is only called when the packed forms tie on a long key.
    #[inline]
    pub(super) fn compare_stored<'b>(
        &self,
        stored: u128,
        long_bytes: impl FnOnce() -> Option<&'b [u8]>,
    ) -> Ordering {
        match stored.cmp(&self.packed) {
            Ordering::Equal if is_long(stored) => match long_bytes() {
                Some(bytes) => bytes.cmp(self.bytes),
                // Only seen by a reader racing a writer; its validation fails and it retries.
                None => Ordering::Less,
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn order(a: &[u8], b: &[u8]) -> Ordering {
        SearchKey::new(b).compare_stored(pack(a), || Some(a))
    }

    #[test]
    fn lengths_and_trailing_zeros_order_like_bytes() {
        let cases: [&[u8]; 8] = [
            b"",
            b"\0",
            b"\0\0",
            b"a",
            b"a\0",
            b"abcdefghijklmno",
            b"abcdefghijklmno\0",
            b"abcdefghijklmnop",
        ];
        for a in cases {
            for b in cases {
                assert_eq!(order(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
        assert!(unpack(pack(b"abcdefghijklmnop")).is_none());
        let (bytes, len) = unpack(pack(b"key")).expect("short");
        assert_eq!(&bytes[..len], b"key");
    }

    proptest! {
        #[test]
        fn packed_order_is_byte_order(
            a in proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(255u8), any::<u8>()], 0..24),
            b in proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(255u8), any::<u8>()], 0..24),
        ) {
            prop_assert_eq!(order(&a, &b), a.cmp(&b));
        }
    }
}

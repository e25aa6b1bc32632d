//! Random values as the TPC-C specification (clause 4.3.2, 2.1.6) defines them.
//!
//! Each worker owns its generator (never a thread-local one: contexts share threads). Strings are
//! appended into caller-owned buffers so loaders and transactions do not allocate per field.

/// Characters of TPC-C's "a-strings" (random alphanumeric strings).
const ALPHANUMERIC: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// The syllables of customer last names (clause 4.3.2.3).
pub const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// The constants `C` of NURand for one run (clause 2.1.6). The loader and the run use different
/// constants for last names, related by the rule of clause 2.1.6.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NuRandConstants {
    /// C for `NURand(255, 0, 999)` (customer last names).
    pub c_last: u32,
    /// C for `NURand(1023, 1, 3000)` (customer ids).
    pub c_id: u32,
    /// C for `NURand(8191, 1, 100000)` (item ids).
    pub ol_i_id: u32,
}

impl NuRandConstants {
    /// Constants for loading the database.
    pub fn for_load(rng: &mut TpccRng) -> Self {
        NuRandConstants {
            c_last: rng.uniform(0, 255) as u32,
            c_id: rng.uniform(0, 1023) as u32,
            ol_i_id: rng.uniform(0, 8191) as u32,
        }
    }

    /// Constants for a run against a database loaded with `load`: the same C for ids, and a C for
    /// last names whose distance to the load's is in 65..=119 but not 96 or 112.
    pub fn for_run(load: &NuRandConstants, rng: &mut TpccRng) -> Self {
        loop {
            let c_last = rng.uniform(0, 255) as u32;
            let delta = c_last.abs_diff(load.c_last);
            if (65..=119).contains(&delta) && delta != 96 && delta != 112 {
                return NuRandConstants {
                    c_last,
                    c_id: load.c_id,
                    ol_i_id: load.ol_i_id,
                };
            }
        }
    }
}

/// A seeded generator with TPC-C's distributions.
#[derive(Clone, Debug)]
pub struct TpccRng {
    inner: fastrand::Rng,
}

impl TpccRng {
    /// A generator with a fixed seed (runs are reproducible).
    pub fn new(seed: u64) -> Self {
        TpccRng {
            inner: fastrand::Rng::with_seed(seed),
        }
    }

    /// Uniform integer in `lo..=hi`.
    #[inline]
    pub fn uniform(&mut self, lo: i64, hi: i64) -> i64 {
        self.inner.i64(lo..=hi)
    }

    /// Uniform in `0..n`.
    #[inline]
    pub fn below(&mut self, n: usize) -> usize {
        self.inner.usize(0..n)
    }

    /// `NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x`.
    #[inline]
    pub fn nurand(&mut self, a: i64, x: i64, y: i64, c: u32) -> i64 {
        (((self.uniform(0, a) | self.uniform(x, y)) + i64::from(c)) % (y - x + 1)) + x
    }

    /// Appends a random a-string of length `min..=max`.
    pub fn astring(&mut self, out: &mut String, min: usize, max: usize) {
        let len = self.inner.usize(min..=max);
        out.extend(
            (0..len).map(|_| char::from(ALPHANUMERIC[self.inner.usize(..ALPHANUMERIC.len())])),
        );
    }

    /// Appends a random n-string (digits) of length `min..=max`.
    pub fn nstring(&mut self, out: &mut String, min: usize, max: usize) {
        let len = self.inner.usize(min..=max);
        out.extend((0..len).map(|_| char::from(b'0' + self.inner.u8(0..10))));
    }

    /// Appends a zip code: 4 random digits and "11111" (clause 4.3.2.7).
    pub fn zip(&mut self, out: &mut String) {
        self.nstring(out, 4, 4);
        out.push_str("11111");
    }

    /// Appends an a-string of `min..=max` characters of which 10% contain "ORIGINAL" at a random
    /// position (item and stock data, clause 4.3.3.1).
    pub fn data_with_original(&mut self, out: &mut String, min: usize, max: usize) {
        let start = out.len();
        self.astring(out, min, max);
        if self.uniform(1, 10) == 1 {
            let len = out.len() - start;
            let at = start + self.below(len - 8 + 1);
            out.replace_range(at..at + 8, "ORIGINAL");
        }
    }

    /// A random non-uniform last-name number for the run, `NURand(255, 0, 999)`.
    pub fn last_name_number(&mut self, c: &NuRandConstants) -> i64 {
        self.nurand(255, 0, 999, c.c_last)
    }

    /// A random customer id, `NURand(1023, 1, 3000)` (for the full 3,000 customers per district).
    pub fn customer_id(&mut self, c: &NuRandConstants, customers: i64) -> i64 {
        if customers == 3_000 {
            self.nurand(1023, 1, 3_000, c.c_id)
        } else {
            // Reduced scales (tests) keep the skew but stay in range.
            self.nurand(1023, 1, 3_000, c.c_id) % customers + 1
        }
    }

    /// A random item id, `NURand(8191, 1, 100000)` (for the full 100,000 items).
    pub fn item_id(&mut self, c: &NuRandConstants, items: i64) -> i64 {
        if items == 100_000 {
            self.nurand(8191, 1, 100_000, c.ol_i_id)
        } else {
            self.nurand(8191, 1, 100_000, c.ol_i_id) % items + 1
        }
    }
}

/// Appends the last name for `number` (0..=999): the syllables of its three digits.
pub fn last_name(number: i64, out: &mut String) {
    for digit in [number / 100, (number / 10) % 10, number % 10] {
        out.push_str(SYLLABLES[digit as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_names_follow_the_syllable_rule() {
        let mut s = String::new();
        last_name(371, &mut s);
        assert_eq!(s, "PRICALLYOUGHT");
        s.clear();
        last_name(0, &mut s);
        assert_eq!(s, "BARBARBAR");
        s.clear();
        last_name(999, &mut s);
        assert_eq!(s, "EINGEINGEING");
    }

    #[test]
    fn nurand_stays_in_range_and_is_skewed() {
        let mut rng = TpccRng::new(1);
        let c = NuRandConstants::for_load(&mut rng);
        let mut counts = vec![0u32; 1000];
        for _ in 0..200_000 {
            let v = rng.nurand(255, 0, 999, c.c_last);
            assert!((0..=999).contains(&v));
            counts[v as usize] += 1;
        }
        let max = *counts.iter().max().expect("non-empty");
        let min = *counts.iter().min().expect("non-empty");
        assert!(max > 4 * min.max(1), "NURand is non-uniform ({min}..{max})");
    }

    #[test]
    fn run_constant_obeys_the_delta_rule() {
        let mut rng = TpccRng::new(7);
        for _ in 0..100 {
            let load = NuRandConstants::for_load(&mut rng);
            let run = NuRandConstants::for_run(&load, &mut rng);
            let delta = run.c_last.abs_diff(load.c_last);
            assert!((65..=119).contains(&delta) && delta != 96 && delta != 112);
            assert_eq!((run.c_id, run.ol_i_id), (load.c_id, load.ol_i_id));
        }
    }

    #[test]
    fn strings_have_the_requested_shapes() {
        let mut rng = TpccRng::new(3);
        let mut originals = 0;
        for _ in 0..2_000 {
            let mut s = String::new();
            rng.data_with_original(&mut s, 26, 50);
            assert!((26..=50).contains(&s.len()));
            assert!(s.bytes().all(|b| b.is_ascii_alphanumeric()));
            originals += usize::from(s.contains("ORIGINAL"));
            let mut z = String::new();
            rng.zip(&mut z);
            assert_eq!(z.len(), 9);
            assert!(z.ends_with("11111") && z.bytes().all(|b| b.is_ascii_digit()));
        }
        assert!(
            (120..=280).contains(&originals),
            "about 10% ORIGINAL: {originals}"
        );
    }
}

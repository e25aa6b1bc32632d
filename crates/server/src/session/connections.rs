//! Admission of connections against `max_connections`, the last places
//! (`superuser_reserved_connections`) kept for superusers. Lock-free: a refused connection never
//! waits for a place.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Connections admitted, against a limit (`max_connections`) of which the last places
/// (`superuser_reserved_connections`) are kept for superusers.
pub struct Connections {
    open: AtomicUsize,
    limit: usize,
    reserved: usize,
}

/// Why a connection was not admitted.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Every place is taken.
    Full,
    /// Only places kept for superusers are left.
    Reserved,
}

impl Connections {
    /// None open yet, at most `limit`, the last `reserved` of them for superusers.
    pub fn new(limit: usize, reserved: usize) -> Self {
        Connections {
            open: AtomicUsize::new(0),
            limit,
            reserved,
        }
    }

    /// Takes a place for one more connection, of a `superuser` or not.
    pub fn admit(&self, superuser: bool) -> Result<(), Refusal> {
        let free_for = if superuser {
            self.limit
        } else {
            self.limit.saturating_sub(self.reserved)
        };
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < free_for).then_some(n + 1)
            })
            .map(|_| ())
            .map_err(|n| {
                if n >= self.limit {
                    Refusal::Full
                } else {
                    Refusal::Reserved
                }
            })
    }

    /// Gives a place back.
    pub fn leave(&self) {
        self.open.fetch_sub(1, Ordering::AcqRel);
    }
}

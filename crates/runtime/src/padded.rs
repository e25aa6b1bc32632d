//! Cache-line padding for data written by one thread and read by others.

/// Aligns a value to 128 bytes (two cache lines: adjacent-line prefetching pairs lines), so that
/// values written by different threads never share a line.
#[repr(align(128))]
#[derive(Debug, Default)]
pub struct CachePadded<T>(pub T);

impl<T> std::ops::Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

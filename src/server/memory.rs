//! Giving freed memory back to the system.
//!
//! When many clients come and go, their state is dropped (sessions on `DELETE`, stateless
//! clients after the idle expiry), but glibc's malloc keeps freed pages in its arenas for
//! reuse, so the process's resident memory stays at its peak and an operator watching it
//! sees what looks like a leak. `malloc_trim(0)` returns the free pages at the top of each
//! arena and the free whole pages inside them; it is cheap next to a sweep interval.

/// Returns free allocator memory to the system, where the allocator allows it (glibc on
/// Linux); a no-op elsewhere.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers and only walks the allocator's own free lists
    // under its locks; it is safe to call at any time from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn can_be_called_any_time() {
        let v: Vec<Vec<u8>> = (0..1000).map(|_| vec![1u8; 4096]).collect();
        drop(v);
        super::release_free_memory();
        super::release_free_memory();
    }
}

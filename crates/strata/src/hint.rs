//! Hints to the CPU that change no result.

/// Starts loading the cache line at `p` (no-op elsewhere than x86-64). Never faults:
/// an address that is not mapped in is ignored.
#[inline(always)]
pub(crate) fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and reads into nothing, whatever the address; SSE
    // (which has the instruction) is part of every x86_64 target.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

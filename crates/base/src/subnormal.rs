//! Flushing subnormal floating-point numbers to zero while a hot loop runs.
//!
//! Explicit wave propagation from a point source spreads ever smaller values ahead of the
//! wavefront; once they fall below the normal range (about 1e-38 in `f32`), every arithmetic
//! instruction that meets one takes a slow microcode path, and a time step can run at a
//! fraction of its speed. Codes of the field set the processor to flush such numbers to zero
//! (SPECFEM does it at start-up); here a guard sets the flush for the duration of a
//! computation on the current thread and restores the previous mode when dropped, so no
//! caller outside that computation sees a changed floating-point environment.

/// While alive, subnormal results are flushed to zero and subnormal inputs read as zero on
/// the current thread (x86-64: the `FTZ` and `DAZ` bits of `MXCSR`; other targets: no
/// effect).
pub struct FlushSubnormals {
    #[cfg(target_arch = "x86_64")]
    saved: u32,
}

#[cfg(target_arch = "x86_64")]
const FTZ_DAZ: u32 = (1 << 15) | (1 << 6);

impl FlushSubnormals {
    /// Sets the flush on the current thread.
    #[inline]
    pub fn new() -> FlushSubnormals {
        #[cfg(target_arch = "x86_64")]
        {
            let saved = read_csr();
            write_csr(saved | FTZ_DAZ);
            FlushSubnormals { saved }
        }
        #[cfg(not(target_arch = "x86_64"))]
        FlushSubnormals {}
    }
}

impl Default for FlushSubnormals {
    fn default() -> FlushSubnormals {
        FlushSubnormals::new()
    }
}

impl Drop for FlushSubnormals {
    #[inline]
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        write_csr(self.saved);
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn read_csr() -> u32 {
    let mut csr = 0u32;
    // SAFETY: `stmxcsr` stores the 32-bit control register into the given location, a
    // valid, writable `u32`.
    unsafe {
        std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack, preserves_flags));
    }
    csr
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn write_csr(csr: u32) {
    // SAFETY: `ldmxcsr` loads the control register from a valid `u32`; only rounding, flush
    // and exception-mask bits are set, all from a value read from the register itself plus
    // the two flush bits, which every x86-64 processor with SSE2 supports.
    unsafe {
        std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, preserves_flags, readonly));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnormals_flush_only_while_the_guard_lives() {
        let tiny = std::hint::black_box(f32::MIN_POSITIVE);
        let half = std::hint::black_box(0.5f32);
        assert!(tiny * half > 0.0, "subnormal result without the guard");
        {
            let _flush = FlushSubnormals::new();
            let r = std::hint::black_box(tiny) * std::hint::black_box(half);
            if cfg!(target_arch = "x86_64") {
                assert_eq!(r, 0.0, "flushed under the guard");
            }
        }
        assert!(tiny * half > 0.0, "mode restored");
    }
}

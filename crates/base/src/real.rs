//! The scalar type of vectors, operators and kernels (`f32` or `f64`).

use std::fmt::{Debug, Display, LowerExp};
use std::iter::Sum;
use std::ops::{AddAssign, DivAssign, MulAssign, SubAssign};

/// A floating-point scalar that operators, solvers and kernels are generic over.
///
/// Implemented for `f32` and `f64` only: the papers ferrofem follows report both, and the
/// GPU kernels are specialised for exactly these two.
pub trait Real:
    num_traits::Float
    + num_traits::FromPrimitive
    + Copy
    + Send
    + Sync
    + Debug
    + Display
    + LowerExp
    + Default
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
    + Sum
    + 'static
{
    /// The type's name as users write it (`"f32"` or `"f64"`).
    const NAME: &'static str;
    /// Size in bytes, used by the bandwidth models.
    const BYTES: usize;
    /// Machine epsilon as an `f64`, for tolerances that scale with precision.
    const EPS: f64;

    /// Converts from `f64`, rounding to nearest for `f32`.
    fn of(x: f64) -> Self;
    /// Widens (or passes through) to `f64`.
    fn as_f64(self) -> f64;
}

impl Real for f64 {
    const NAME: &'static str = "f64";
    const BYTES: usize = 8;
    const EPS: f64 = f64::EPSILON;
    #[inline(always)]
    fn of(x: f64) -> Self {
        x
    }
    #[inline(always)]
    fn as_f64(self) -> f64 {
        self
    }
}

impl Real for f32 {
    const NAME: &'static str = "f32";
    const BYTES: usize = 4;
    const EPS: f64 = f32::EPSILON as f64;
    #[inline(always)]
    fn of(x: f64) -> Self {
        x as f32
    }
    #[inline(always)]
    fn as_f64(self) -> f64 {
        self as f64
    }
}

/// Converts a slice of `f64` into the scalar type `T`.
pub fn convert_slice<T: Real>(x: &[f64]) -> Vec<T> {
    x.iter().map(|&v| T::of(v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip<T: Real>() {
        let x = T::of(0.1);
        assert!((x.as_f64() - 0.1).abs() <= 0.1 * T::EPS);
        assert_eq!(T::BYTES, std::mem::size_of::<T>());
    }

    #[test]
    fn both_precisions_roundtrip() {
        roundtrip::<f32>();
        roundtrip::<f64>();
        assert_eq!(f32::NAME, "f32");
        assert_eq!(f64::NAME, "f64");
    }
}

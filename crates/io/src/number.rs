//! Text formatting of floating-point numbers that reads back bit-for-bit.

use std::fmt::Write as _;

/// Appends `x` to `out` with the fewest digits that parse back to exactly `x`.
///
/// Rust's `Display` and `LowerExp` for `f64` both print the shortest round-trip digit
/// string; plain notation is used for moderate magnitudes (readable in tables) and
/// exponent notation otherwise (so `1e-300` does not become 300 zeros). NaN and the
/// infinities print as `NaN`, `inf` and `-inf`, which Python, NumPy and Rust read back.
pub(crate) fn push_shortest(out: &mut String, x: f64) {
    let a = x.abs();
    // Writing into a String cannot fail.
    let _ = if a == 0.0 || (1e-5..1e16).contains(&a) || !a.is_finite() {
        write!(out, "{x}")
    } else {
        write!(out, "{x:e}")
    };
}

/// [`push_shortest`] into a fresh string.
pub(crate) fn shortest(x: f64) -> String {
    let mut s = String::new();
    push_shortest(&mut s, x);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortest_round_trips_exactly() {
        let values = [
            0.0,
            -0.0,
            0.1,
            1.0 / 3.0,
            -2.5e-7,
            6.02214076e23,
            f64::MIN_POSITIVE,
            f64::MAX,
            5e-324,
            123456789.125,
            1e16,
            f64::from_bits(1e16f64.to_bits() - 1),
        ];
        for x in values {
            let s = shortest(x);
            let back: f64 = s.parse().expect("parses");
            assert_eq!(back.to_bits(), x.to_bits(), "{x} -> {s}");
            assert!(s.len() <= 24, "{s} is not short");
        }
        assert_eq!(shortest(0.5), "0.5");
        assert_eq!(shortest(1e-300), "1e-300");
        assert!(shortest(f64::NAN).parse::<f64>().expect("nan").is_nan());
        assert_eq!(
            shortest(f64::NEG_INFINITY).parse::<f64>(),
            Ok(f64::NEG_INFINITY)
        );
    }
}

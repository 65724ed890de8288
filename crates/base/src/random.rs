//! Deterministic pseudo-random numbers for test data and benchmark inputs: one 64-bit linear
//! congruential generator (Knuth's MMIX constants) that every crate draws from, so that
//! data are reproducible across runs and machines. Not for statistics or sampling quality.

/// A 64-bit linear congruential generator; its state starts at the value given.
#[derive(Clone, Debug)]
pub struct Lcg(u64);

impl Lcg {
    /// A generator whose state is `state` (callers mix their seed as they need).
    pub fn new(state: u64) -> Lcg {
        Lcg(state)
    }

    /// The next state's top 53 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 11
    }

    /// The next state's top 53 bits as a uniform number in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        self.next_u64() as f64 / (1u64 << 53) as f64
    }

    /// A uniform number in `[-1, 1)`.
    pub fn symmetric(&mut self) -> f64 {
        2.0 * self.next_f64() - 1.0
    }
}

/// `n` numbers in `[-0.5, 0.5)` from `seed`: benchmark and test inputs (never zeros, which
/// hide unwritten outputs and can run faster than real data).
pub fn random_vector(n: usize, seed: u64) -> Vec<f64> {
    let mut g = Lcg::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    (0..n).map(|_| g.next_f64() - 0.5).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_vectors_are_reproducible_bounded_and_seed_dependent() {
        let a = random_vector(10_000, 3);
        assert_eq!(a, random_vector(10_000, 3));
        assert_ne!(a, random_vector(10_000, 4));
        assert!(a.iter().all(|x| (-0.5..0.5).contains(x)));
        let mean = a.iter().sum::<f64>() / a.len() as f64;
        assert!(mean.abs() < 0.02, "mean {mean}");
        let mut g = Lcg::new(7);
        assert!((0..1000)
            .map(|_| g.symmetric())
            .all(|x| (-1.0..1.0).contains(&x)));
    }
}

//! The host backend: `Vec<T>` vectors, any [`LinearOperator`], optional Jacobi
//! preconditioning, and rayon-parallel BLAS-1 kernels with deterministic reductions.

use ferrofem_base::{LinearOperator, Real};
use rayon::prelude::*;

use crate::{KrylovSpace, SolverError};

/// Length of the fixed chunks that reductions sum separately before adding the partial sums
/// in chunk order. Because the chunking does not depend on the number of threads, a dot
/// product gives the same bits on one thread or many.
pub const REDUCTION_CHUNK: usize = 4096;

/// Below this length the BLAS-1 kernels run on one thread (same chunking, same result).
const PARALLEL_THRESHOLD: usize = 8 * REDUCTION_CHUNK;

fn check_len(what: &'static str, expected: usize, found: usize) -> Result<(), SolverError> {
    if expected == found {
        Ok(())
    } else {
        Err(SolverError::DimensionMismatch {
            what,
            expected,
            found,
        })
    }
}

/// Dot product of one chunk in `f64`, with four interleaved accumulators.
fn chunk_dot<T: Real>(a: &[T], b: &[T]) -> f64 {
    let mut acc = [0.0f64; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..4 {
            acc[k] += x[k].as_f64() * y[k].as_f64();
        }
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (x, y) in ra.iter().zip(rb) {
        s += x.as_f64() * y.as_f64();
    }
    s
}

/// `aᵀb` accumulated in `f64`: partial sums over [`REDUCTION_CHUNK`]-long chunks (in
/// parallel for long vectors), added in chunk order, so the result is deterministic.
pub fn dot<T: Real>(a: &[T], b: &[T]) -> Result<f64, SolverError> {
    check_len("dot product operand", a.len(), b.len())?;
    let partial: Vec<f64> = if a.len() >= PARALLEL_THRESHOLD {
        a.par_chunks(REDUCTION_CHUNK)
            .zip(b.par_chunks(REDUCTION_CHUNK))
            .map(|(x, y)| chunk_dot(x, y))
            .collect()
    } else {
        a.chunks(REDUCTION_CHUNK)
            .zip(b.chunks(REDUCTION_CHUNK))
            .map(|(x, y)| chunk_dot(x, y))
            .collect()
    };
    Ok(partial.iter().sum())
}

/// `‖a‖₂` in `f64`, from [`dot`].
pub fn norm<T: Real>(a: &[T]) -> f64 {
    // Lengths agree by construction, so `dot` cannot fail here.
    dot(a, a).map_or(f64::NAN, f64::sqrt)
}

/// Applies `f(x_i, y_i)` element-wise to two equally long slices, in parallel when long.
fn zip_apply<T: Real>(x: &[T], y: &mut [T], f: impl Fn(T, &mut T) + Sync) {
    if y.len() >= PARALLEL_THRESHOLD {
        y.par_chunks_mut(REDUCTION_CHUNK)
            .zip(x.par_chunks(REDUCTION_CHUNK))
            .for_each(|(ys, xs)| ys.iter_mut().zip(xs).for_each(|(yi, &xi)| f(xi, yi)));
    } else {
        y.iter_mut().zip(x).for_each(|(yi, &xi)| f(xi, yi));
    }
}

/// `y ← y + αx`.
pub fn axpy<T: Real>(alpha: T, x: &[T], y: &mut [T]) -> Result<(), SolverError> {
    check_len("axpy operand", y.len(), x.len())?;
    zip_apply(x, y, |xi, yi| *yi += alpha * xi);
    Ok(())
}

/// `y ← x + βy`.
pub fn xpby<T: Real>(x: &[T], beta: T, y: &mut [T]) -> Result<(), SolverError> {
    check_len("xpby operand", y.len(), x.len())?;
    zip_apply(x, y, |xi, yi| *yi = xi + beta * *yi);
    Ok(())
}

/// The inverse of a Jacobi preconditioner's diagonal; fails with
/// [`SolverError::InvalidPreconditioner`] where an entry is not positive and finite (an SPD
/// operator's diagonal is).
pub fn jacobi_inverse<T: Real>(diagonal: &[T]) -> Result<Vec<T>, SolverError> {
    diagonal
        .iter()
        .enumerate()
        .map(|(index, &d)| {
            let value = d.as_f64();
            if value.is_finite() && value > 0.0 {
                Ok(T::one() / d)
            } else {
                Err(SolverError::InvalidPreconditioner { index, value })
            }
        })
        .collect()
}

/// The host Krylov space: vectors are `Vec<T>`, `A` is any [`LinearOperator`] (assembled
/// [`ferrofem_base::CsrMatrix`] or matrix-free), and `M⁻¹` is the identity or Jacobi.
///
/// Pass the operator by reference (`&matrix`) to keep ownership with the caller.
#[derive(Debug, Clone)]
pub struct CpuSpace<T, A> {
    op: A,
    n: usize,
    inv_diag: Option<Vec<T>>,
}

impl<T: Real, A: LinearOperator<T>> CpuSpace<T, A> {
    /// A space over a square operator, with the identity as preconditioner.
    pub fn new(op: A) -> Result<Self, SolverError> {
        let (nrows, ncols) = (op.nrows(), op.ncols());
        if nrows != ncols {
            return Err(SolverError::NotSquare { nrows, ncols });
        }
        Ok(CpuSpace {
            op,
            n: nrows,
            inv_diag: None,
        })
    }

    /// A space with the Jacobi preconditioner `M = diag(d)`.
    ///
    /// The diagonal may come from an assembled matrix or be computed matrix-free by the
    /// caller; every entry must be positive and finite (an SPD operator's diagonal is).
    pub fn with_jacobi(op: A, diagonal: &[T]) -> Result<Self, SolverError> {
        let mut space = Self::new(op)?;
        check_len("Jacobi diagonal", space.n, diagonal.len())?;
        space.inv_diag = Some(jacobi_inverse(diagonal)?);
        Ok(space)
    }

    /// A space with the Jacobi preconditioner built from the operator's own diagonal
    /// ([`LinearOperator::diagonal`]); fails with [`SolverError::NoDiagonal`] when the
    /// operator cannot give it.
    pub fn with_operator_jacobi(op: A) -> Result<Self, SolverError> {
        let diagonal = op.diagonal().ok_or(SolverError::NoDiagonal)?;
        Self::with_jacobi(op, &diagonal)
    }

    /// The operator.
    pub fn operator(&self) -> &A {
        &self.op
    }

    /// Whether a Jacobi preconditioner is set (otherwise `M⁻¹` is the identity).
    pub fn is_preconditioned(&self) -> bool {
        self.inv_diag.is_some()
    }
}

impl<T: Real, A: LinearOperator<T>> KrylovSpace<T> for CpuSpace<T, A> {
    type Vector = Vec<T>;

    fn dim(&self) -> usize {
        self.n
    }

    fn zeros(&self) -> Result<Vec<T>, SolverError> {
        Ok(vec![T::zero(); self.n])
    }

    fn dot(&self, a: &Vec<T>, b: &Vec<T>) -> Result<f64, SolverError> {
        check_len("vector", self.n, a.len())?;
        dot(a, b)
    }

    fn axpy(&self, alpha: T, x: &Vec<T>, y: &mut Vec<T>) -> Result<(), SolverError> {
        check_len("vector", self.n, y.len())?;
        axpy(alpha, x, y)
    }

    fn xpby(&self, x: &Vec<T>, beta: T, y: &mut Vec<T>) -> Result<(), SolverError> {
        check_len("vector", self.n, y.len())?;
        xpby(x, beta, y)
    }

    fn copy(&self, x: &Vec<T>, y: &mut Vec<T>) -> Result<(), SolverError> {
        check_len("vector", self.n, x.len())?;
        check_len("vector", self.n, y.len())?;
        y.copy_from_slice(x);
        Ok(())
    }

    fn apply(&self, x: &Vec<T>, y: &mut Vec<T>) -> Result<(), SolverError> {
        check_len("operator input", self.n, x.len())?;
        check_len("operator output", self.n, y.len())?;
        self.op.apply(x, y);
        Ok(())
    }

    fn precondition(&self, r: &Vec<T>, z: &mut Vec<T>) -> Result<(), SolverError> {
        check_len("preconditioner input", self.n, r.len())?;
        check_len("preconditioner output", self.n, z.len())?;
        match &self.inv_diag {
            None => z.copy_from_slice(r),
            Some(inv) => {
                let apply = |(zs, (rs, ds)): (&mut [T], (&[T], &[T]))| {
                    for ((zi, &ri), &di) in zs.iter_mut().zip(rs).zip(ds) {
                        *zi = ri * di;
                    }
                };
                if self.n >= PARALLEL_THRESHOLD {
                    z.par_chunks_mut(REDUCTION_CHUNK)
                        .zip(
                            r.par_chunks(REDUCTION_CHUNK)
                                .zip(inv.par_chunks(REDUCTION_CHUNK)),
                        )
                        .for_each(apply);
                } else {
                    apply((z.as_mut_slice(), (r.as_slice(), inv.as_slice())));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_is_deterministic_and_accurate() {
        // Long enough for the parallel path; compare against a plain f64 sum within rounding.
        let n = 3 * PARALLEL_THRESHOLD + 17;
        let a: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 * 1e-3).collect();
        let b: Vec<f32> = (0..n).map(|i| ((i * 104729) % 997) as f32 * 1e-3).collect();
        let exact: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
        let d1 = dot(&a, &b).unwrap();
        assert!((d1 - exact).abs() <= 1e-12 * exact.abs());
        // Same bits from a one-thread pool and from the global pool.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let d2 = pool.install(|| dot(&a, &b).unwrap());
        assert_eq!(d1.to_bits(), d2.to_bits());
        assert!(dot(&a, &b[1..]).is_err());
    }

    #[test]
    fn blas1_kernels() {
        let n = PARALLEL_THRESHOLD + 3;
        let x: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let mut y = vec![1.0; n];
        axpy(2.0, &x, &mut y).unwrap();
        assert!(y
            .iter()
            .enumerate()
            .all(|(i, &v)| v == 1.0 + 2.0 * i as f64));
        xpby(&x, 0.5, &mut y).unwrap();
        assert!(y
            .iter()
            .enumerate()
            .all(|(i, &v)| v == i as f64 + 0.5 * (1.0 + 2.0 * i as f64)));
        assert!(axpy(1.0, &x[1..], &mut y).is_err());
    }

    struct Diag(Vec<f64>);
    impl LinearOperator<f64> for Diag {
        fn nrows(&self) -> usize {
            self.0.len()
        }
        fn ncols(&self) -> usize {
            self.0.len()
        }
        fn apply(&self, x: &[f64], y: &mut [f64]) {
            for ((yi, xi), di) in y.iter_mut().zip(x).zip(&self.0) {
                *yi = di * xi;
            }
        }
    }

    #[test]
    fn jacobi_space_checks_and_applies_the_diagonal() {
        let op = Diag(vec![2.0, 4.0, 8.0]);
        assert!(matches!(
            CpuSpace::with_operator_jacobi(&op),
            Err(SolverError::NoDiagonal)
        ));
        assert!(matches!(
            CpuSpace::with_jacobi(&op, &[1.0, 0.0, 1.0]),
            Err(SolverError::InvalidPreconditioner { index: 1, .. })
        ));
        assert!(matches!(
            CpuSpace::with_jacobi(&op, &[1.0, 1.0]),
            Err(SolverError::DimensionMismatch { .. })
        ));
        let space = CpuSpace::with_jacobi(&op, &op.0).unwrap();
        let mut z = space.zeros().unwrap();
        space.precondition(&vec![2.0, 4.0, 8.0], &mut z).unwrap();
        assert_eq!(z, vec![1.0, 1.0, 1.0]);
        assert!(space.apply(&vec![1.0; 2], &mut z).is_err());
    }
}

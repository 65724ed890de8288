//! The device backend of the solvers' Krylov methods: the same CG/PCG code as on the CPU
//! (`ferrofem_solver::{cg, pcg}`), with every vector in device memory.

use crate::blas::GpuBlas;
use crate::bp::GpuBp;
use crate::{DeviceVec, GpuDevice, GpuError, GpuReal};
use ferrofem_solver::{KrylovSpace, SolverError};
use std::sync::Arc;

/// A linear operator whose vectors live on the device.
pub trait GpuLinearOperator<T: GpuReal> {
    /// Number of rows (= columns).
    fn dim(&self) -> usize;
    /// `y = A x`.
    fn apply_device(&self, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), GpuError>;
    /// A zero vector of length [`GpuLinearOperator::dim`] in the memory the operator's
    /// output is fastest in (plain device memory unless the operator says otherwise).
    fn output_vector(&self, dev: &Arc<GpuDevice>, what: &str) -> Result<DeviceVec<T>, GpuError> {
        DeviceVec::zeros(dev, self.dim(), what)
    }
}

impl<T: GpuReal> GpuLinearOperator<T> for GpuBp<T> {
    fn dim(&self) -> usize {
        self.ndofs()
    }
    fn apply_device(&self, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), GpuError> {
        self.apply(x, y)
    }
    /// [`GpuBp::output_vector`] (compressible memory where configured).
    fn output_vector(&self, _dev: &Arc<GpuDevice>, what: &str) -> Result<DeviceVec<T>, GpuError> {
        GpuBp::output_vector(self, what)
    }
}

impl<T: GpuReal> GpuLinearOperator<T> for crate::residual::GpuResidual<T> {
    fn dim(&self) -> usize {
        self.vector_len()
    }
    /// The residual of a physics without forcing is linear in its argument for linear
    /// physics: this is the operator's action.
    fn apply_device(&self, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), GpuError> {
        self.apply(x, y)
    }
}

/// The Jacobian action `w ↦ J(u) w` of a residual operator (built with its Jacobian kernel)
/// at a fixed state `u`: for a linear physics whose `f0` holds a source, the operator's
/// action without the source (the residual kernel would add it).
pub struct JacobianAt<T: GpuReal> {
    res: crate::residual::GpuResidual<T>,
    state: DeviceVec<T>,
}

impl<T: GpuReal> JacobianAt<T> {
    /// `res`'s Jacobian at `state` (fails when `res` was built without its Jacobian kernel
    /// or `state` has the wrong length).
    pub fn new(
        res: crate::residual::GpuResidual<T>,
        state: DeviceVec<T>,
    ) -> Result<Self, GpuError> {
        if state.len() != res.vector_len() {
            return Err(GpuError::Size {
                what: "Jacobian state",
                expected: res.vector_len(),
                got: state.len(),
            });
        }
        Ok(JacobianAt { res, state })
    }
}

impl<T: GpuReal> GpuLinearOperator<T> for JacobianAt<T> {
    fn dim(&self) -> usize {
        self.state.len()
    }
    fn apply_device(&self, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), GpuError> {
        self.res.jacobian_apply(&self.state, x, y)
    }
}

/// An operator with identity rows on constrained (Dirichlet) dofs: `y = A x` on the free
/// rows, `y_c = x_c`. Inputs are expected to vanish on the constrained dofs (solve for the
/// correction to a lifted boundary value), as in every Krylov iterate started from zero.
///
/// On a rank's part of a distributed mesh ([`Constrained::on_part`]) a constrained dof
/// that another rank owns gets `y_c = 0` instead, so that once the holders' outputs are
/// summed at the shared dofs the row is the identity exactly once.
pub struct Constrained<'a, T: GpuReal, A: GpuLinearOperator<T>> {
    op: &'a A,
    blas: &'a GpuBlas<T>,
    dofs: Option<DeviceVec<u32>>,
    zeroed: Option<DeviceVec<u32>>,
    scale: T,
}

impl<'a, T: GpuReal, A: GpuLinearOperator<T>> Constrained<'a, T, A> {
    /// `scale · A` with identity rows on `dofs` (sorted or not).
    pub fn new(op: &'a A, blas: &'a GpuBlas<T>, dofs: &[u32], scale: T) -> Result<Self, GpuError> {
        Self::on_part(op, blas, dofs, &[], scale)
    }

    /// `scale · A` with identity rows on `dofs` and zero rows on `zeroed` (the constrained
    /// dofs of a part that other ranks own).
    pub fn on_part(
        op: &'a A,
        blas: &'a GpuBlas<T>,
        dofs: &[u32],
        zeroed: &[u32],
        scale: T,
    ) -> Result<Self, GpuError> {
        let list = |v: &[u32], what| -> Result<Option<DeviceVec<u32>>, GpuError> {
            if v.is_empty() {
                Ok(None)
            } else {
                DeviceVec::from_host(blas.device(), v, what).map(Some)
            }
        };
        Ok(Constrained {
            op,
            blas,
            dofs: list(dofs, "Dirichlet dofs")?,
            zeroed: list(zeroed, "Dirichlet dofs owned elsewhere")?,
            scale,
        })
    }
}

impl<T: GpuReal, A: GpuLinearOperator<T>> GpuLinearOperator<T> for Constrained<'_, T, A> {
    fn dim(&self) -> usize {
        self.op.dim()
    }
    fn apply_device(&self, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), GpuError> {
        self.op.apply_device(x, y)?;
        if self.scale != T::one() {
            // in place: one pass over y, no buffer per application
            self.blas.scale(self.scale, y)?;
        }
        if let Some(z) = &self.zeroed {
            self.blas.set_indices(y, z, T::zero())?;
        }
        if let Some(d) = &self.dofs {
            self.blas.copy_indices(x, y, d)?;
        }
        Ok(())
    }
    fn output_vector(&self, dev: &Arc<GpuDevice>, what: &str) -> Result<DeviceVec<T>, GpuError> {
        self.op.output_vector(dev, what)
    }
}

/// Krylov space on the device: an operator, the vector kernels and an optional Jacobi
/// preconditioner (inverse diagonal, on the device).
pub struct GpuKrylov<'a, T: GpuReal, A: GpuLinearOperator<T>> {
    op: &'a A,
    blas: &'a GpuBlas<T>,
    inv_diag: Option<DeviceVec<T>>,
}

impl<'a, T: GpuReal, A: GpuLinearOperator<T>> GpuKrylov<'a, T, A> {
    /// Unpreconditioned space.
    pub fn new(op: &'a A, blas: &'a GpuBlas<T>) -> Self {
        GpuKrylov {
            op,
            blas,
            inv_diag: None,
        }
    }

    /// Jacobi-preconditioned space from the operator's diagonal (host values; every entry
    /// must be positive and finite).
    pub fn with_jacobi(op: &'a A, blas: &'a GpuBlas<T>, diag: &[T]) -> Result<Self, GpuError> {
        if diag.len() != op.dim() {
            return Err(GpuError::Size {
                what: "Jacobi diagonal",
                expected: op.dim(),
                got: diag.len(),
            });
        }
        if let Some(i) = diag
            .iter()
            .position(|d| !(d.as_f64() > 0.0 && d.as_f64().is_finite()))
        {
            return Err(GpuError::Unsupported(format!(
                "Jacobi preconditioner needs a positive diagonal; entry {i} is {}",
                diag[i]
            )));
        }
        let inv: Vec<T> = diag.iter().map(|&d| T::one() / d).collect();
        let dev = blas.device();
        Ok(GpuKrylov {
            op,
            blas,
            inv_diag: Some(DeviceVec::from_host(dev, &inv, "inverse diagonal")?),
        })
    }
}

impl<'a, T: GpuReal, A: GpuLinearOperator<T>> GpuKrylov<'a, T, A> {
    /// Jacobi-preconditioned space from the operator's diagonal already on the device (e.g.
    /// [`GpuBp::diagonal`]), inverted there in place: no host pass, no transfer but one
    /// 8-byte check. Every entry must be positive and finite.
    pub fn with_jacobi_device(
        op: &'a A,
        blas: &'a GpuBlas<T>,
        mut diag: DeviceVec<T>,
    ) -> Result<Self, GpuError> {
        if diag.len() != op.dim() {
            return Err(GpuError::Size {
                what: "Jacobi diagonal",
                expected: op.dim(),
                got: diag.len(),
            });
        }
        if let Some(i) = blas.reciprocal(&mut diag)? {
            // the offending entry was left as it was: fetch it for the message
            let v = diag.to_host()?[i];
            return Err(GpuError::Unsupported(format!(
                "Jacobi preconditioner needs a positive diagonal; entry {i} is {v}"
            )));
        }
        Ok(GpuKrylov {
            op,
            blas,
            inv_diag: Some(diag),
        })
    }
}

fn be(e: GpuError) -> SolverError {
    SolverError::backend(e)
}

impl<T: GpuReal, A: GpuLinearOperator<T>> KrylovSpace<T> for GpuKrylov<'_, T, A> {
    type Vector = DeviceVec<T>;

    fn dim(&self) -> usize {
        self.op.dim()
    }
    fn zeros(&self) -> Result<DeviceVec<T>, SolverError> {
        // any of them may receive the operator's output: the operator's kind of memory
        self.op
            .output_vector(self.blas.device(), "Krylov vector")
            .map_err(be)
    }
    fn dot(&self, a: &DeviceVec<T>, b: &DeviceVec<T>) -> Result<f64, SolverError> {
        self.blas.dot(a, b).map_err(be)
    }
    fn axpy(&self, alpha: T, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), SolverError> {
        self.blas.axpy(alpha, x, y).map_err(be)
    }
    fn xpby(&self, x: &DeviceVec<T>, beta: T, y: &mut DeviceVec<T>) -> Result<(), SolverError> {
        self.blas.xpby(x, beta, y).map_err(be)
    }
    fn copy(&self, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), SolverError> {
        y.copy_from(x).map_err(be)
    }
    fn apply(&self, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), SolverError> {
        self.op.apply_device(x, y).map_err(be)
    }
    fn precondition(&self, r: &DeviceVec<T>, z: &mut DeviceVec<T>) -> Result<(), SolverError> {
        match &self.inv_diag {
            None => z.copy_from(r).map_err(be),
            Some(d) => self.blas.pointwise_mult(d, r, z).map_err(be),
        }
    }
}

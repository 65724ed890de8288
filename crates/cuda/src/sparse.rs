//! CSR matrices on the device (`kernels/sparse.cu`): the pattern uploaded once, the values
//! wherever they were assembled; `y = A x` with a group of lanes per row, the diagonal for
//! Jacobi, and the right-hand side of an eliminated system gathered from a full residual.

use crate::compile::KernelSpec;
use crate::krylov::GpuLinearOperator;
use crate::{sources, DeviceVec, GpuDevice, GpuError, GpuReal};
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// Threads per block of the sparse kernels.
const THREADS: usize = 256;

/// A CSR pattern on the device with its SpMV, diagonal and gather kernels for `T`.
pub struct GpuCsr<T: GpuReal> {
    dev: Arc<GpuDevice>,
    nrows: usize,
    nnz: usize,
    row_ptr: DeviceVec<u32>,
    col_idx: DeviceVec<u32>,
    diag_pos: Option<DeviceVec<u32>>,
    /// SpMV with the group width for this pattern's rows.
    spmv: (CudaFunction, usize),
    diagonal: CudaFunction,
    gather: CudaFunction,
    _t: std::marker::PhantomData<T>,
}

/// Lanes per row for rows of `avg` entries on average: about two entries per lane.
fn group_width(avg: f64) -> usize {
    match avg {
        a if a <= 8.0 => 4,
        a if a <= 16.0 => 8,
        a if a <= 48.0 => 16,
        _ => 32,
    }
}

impl<T: GpuReal> GpuCsr<T> {
    /// Uploads a square pattern (`row_ptr`, `col_idx`: sorted columns per row) and compiles
    /// its kernels. Fails on more than `u32::MAX` entries or columns out of range.
    pub fn new(
        dev: &Arc<GpuDevice>,
        row_ptr: &[usize],
        col_idx: &[u32],
    ) -> Result<GpuCsr<T>, GpuError> {
        let nrows = row_ptr.len().saturating_sub(1);
        let nnz = col_idx.len();
        if row_ptr.last().copied().unwrap_or(0) != nnz || row_ptr.first().copied().unwrap_or(0) != 0
        {
            return Err(GpuError::Unsupported(
                "CSR row offsets must run from 0 to the number of entries".into(),
            ));
        }
        if nnz > u32::MAX as usize || nrows >= u32::MAX as usize {
            return Err(GpuError::Unsupported(format!(
                "{nnz} entries in {nrows} rows: the device CSR kernels address 2^32"
            )));
        }
        if let Some(&c) = col_idx.iter().find(|&&c| c as usize >= nrows) {
            return Err(GpuError::Unsupported(format!(
                "column {c} of a square matrix of {nrows} rows"
            )));
        }
        // the diagonal's positions when every row has one
        let diag: Option<Vec<u32>> = (0..nrows)
            .map(|r| {
                let cols = &col_idx[row_ptr[r]..row_ptr[r + 1]];
                cols.binary_search(&(r as u32))
                    .ok()
                    .map(|k| (row_ptr[r] + k) as u32)
            })
            .collect();
        let spec = KernelSpec::new(
            format!("sparse_{}", T::NAME),
            sources::with_prelude(sources::SPARSE),
        )
        .define("REAL", T::CTYPE);
        let g = group_width(nnz as f64 / nrows.max(1) as f64);
        let rows: Vec<u32> = row_ptr.iter().map(|&x| x as u32).collect();
        Ok(GpuCsr {
            dev: dev.clone(),
            nrows,
            nnz,
            row_ptr: DeviceVec::from_host(dev, &rows, "CSR row offsets")?,
            col_idx: DeviceVec::from_host(dev, col_idx, "CSR columns")?,
            diag_pos: match diag {
                Some(d) => Some(DeviceVec::from_host(dev, &d, "CSR diagonal positions")?),
                None => None,
            },
            spmv: (dev.function(&spec, &format!("ff_csr_spmv_{g}"))?, g),
            diagonal: dev.function(&spec, "ff_csr_diagonal")?,
            gather: dev.function(&spec, "ff_gather_negated")?,
            _t: std::marker::PhantomData,
        })
    }

    /// Rows (= columns).
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.nnz
    }

    fn config(&self, threads: usize) -> LaunchConfig {
        let blocks = threads
            .div_ceil(THREADS)
            .clamp(1, self.dev.sm_count().max(1) * 32);
        LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (THREADS as u32, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    fn check(expected: usize, got: usize, what: &'static str) -> Result<(), GpuError> {
        if expected != got {
            return Err(GpuError::Size {
                what,
                expected,
                got,
            });
        }
        Ok(())
    }

    /// `y = A x` for the values `values` of this pattern.
    pub fn spmv(
        &self,
        values: &DeviceVec<T>,
        x: &DeviceVec<T>,
        y: &mut DeviceVec<T>,
    ) -> Result<(), GpuError> {
        if values.len() < self.nnz {
            return Err(GpuError::Size {
                what: "CSR values",
                expected: self.nnz,
                got: values.len(),
            });
        }
        Self::check(self.nrows, x.len(), "SpMV input")?;
        Self::check(self.nrows, y.len(), "SpMV output")?;
        if self.nrows == 0 {
            return Ok(());
        }
        let (f, g) = &self.spmv;
        let n = self.nrows as u32;
        let stream = self.dev.stream();
        let mut b = stream.launch_builder(f);
        b.arg(&n)
            .arg(self.row_ptr.slice())
            .arg(self.col_idx.slice())
            .arg(values.slice())
            .arg(x.slice())
            .arg(y.slice_mut());
        // SAFETY: `ff_csr_spmv_G` in kernels/sparse.cu: nrows + 1 offsets, columns < nrows
        // (checked at upload), values of nnz entries, x and y of nrows (checked above).
        unsafe { b.launch(self.config(self.nrows * g)) }.map_err(|e| GpuError::Launch {
            kernel: format!("ff_csr_spmv_{g}"),
            source: e,
        })?;
        Ok(())
    }

    /// `out = diag(A)`; fails when a row has no diagonal entry in the pattern.
    pub fn diagonal(&self, values: &DeviceVec<T>, out: &mut DeviceVec<T>) -> Result<(), GpuError> {
        let Some(pos) = &self.diag_pos else {
            return Err(GpuError::Unsupported(
                "a row of the pattern has no diagonal entry".into(),
            ));
        };
        Self::check(self.nrows, out.len(), "diagonal")?;
        if self.nrows == 0 {
            return Ok(());
        }
        let n = self.nrows as u32;
        let stream = self.dev.stream();
        let mut b = stream.launch_builder(&self.diagonal);
        b.arg(&n)
            .arg(pos.slice())
            .arg(values.slice())
            .arg(out.slice_mut());
        // SAFETY: `ff_csr_diagonal`: nrows positions < nnz into values, out of nrows.
        unsafe { b.launch(self.config(self.nrows)) }.map_err(|e| GpuError::Launch {
            kernel: "ff_csr_diagonal".into(),
            source: e,
        })?;
        Ok(())
    }

    /// `out[i] = -r[rows[i]]`: the right-hand side `b_f - A_fc g_c` of the system on the
    /// rows `rows` (the free dofs) from the full residual `r = r(g)` of the lifted
    /// boundary values.
    pub fn gather_negated(
        &self,
        rows: &DeviceVec<u32>,
        r: &DeviceVec<T>,
        out: &mut DeviceVec<T>,
    ) -> Result<(), GpuError> {
        Self::check(rows.len(), out.len(), "gathered right-hand side")?;
        if rows.is_empty() {
            return Ok(());
        }
        let n = rows.len() as u32;
        let stream = self.dev.stream();
        let mut b = stream.launch_builder(&self.gather);
        b.arg(&n)
            .arg(rows.slice())
            .arg(r.slice())
            .arg(out.slice_mut());
        // SAFETY: `ff_gather_negated`: the caller's rows index r (a full residual over the
        // dofs the rows were taken from).
        unsafe { b.launch(self.config(rows.len())) }.map_err(|e| GpuError::Launch {
            kernel: "ff_gather_negated".into(),
            source: e,
        })?;
        Ok(())
    }
}

/// A device CSR matrix as a linear operator: a pattern and values of it.
pub struct CsrOperator<'a, T: GpuReal> {
    /// The pattern.
    pub csr: &'a GpuCsr<T>,
    /// The values.
    pub values: &'a DeviceVec<T>,
}

impl<T: GpuReal> GpuLinearOperator<T> for CsrOperator<'_, T> {
    fn dim(&self) -> usize {
        self.csr.nrows()
    }
    fn apply_device(&self, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), GpuError> {
        self.csr.spmv(self.values, x, y)
    }
}

#[cfg(test)]
mod tests {
    use super::group_width;

    #[test]
    fn rows_get_about_two_entries_per_lane() {
        assert_eq!(group_width(7.0), 4);
        assert_eq!(group_width(15.0), 8);
        assert_eq!(group_width(27.0), 16);
        assert_eq!(group_width(81.0), 32);
    }
}

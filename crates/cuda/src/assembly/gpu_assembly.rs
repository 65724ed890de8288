//! [`GpuAssembly`]: the device copy of an [`AssemblyPlan`]'s index maps and the CSR values
//! assembled into, re-assembled in place for every linearisation.

use super::block_sums::element_sets;
use super::kernel::{
    assembly_kernel, AssemblyKernel, AuxKind, Output, BLOCK_SUMS_BATCH, BLOCK_SUMS_BYTES,
    SHARED_NZ_BATCH, SHARED_NZ_BYTES, SHARED_SUMS_POINT_BYTES, THREADS,
};
use super::shared_nz::row_sets;
use super::shared_sums::{SharedSums, ONLY_HERE};
use super::GpuStrategy;
use crate::residual::Aux;
use crate::{DeviceVec, GpuDevice, GpuError, GpuReal, GpuTimer};
use cudarc::driver::{CudaFunction, LaunchArgs, LaunchConfig, PushKernelArg};
use ferrofem_assembly::{AssemblyPlan, SparsityPattern};
use ferrofem_base::CsrMatrix;
use ferrofem_fe::QuadratureRule;
use ferrofem_physics::CudaPhysics;
use ferrofem_space::H1Space;
use std::sync::Arc;

/// What a strategy keeps on the device besides the values.
enum Maps<T: GpuReal> {
    /// The element → nonzero map (all elements in one launch).
    Scatter { targets: DeviceVec<u32> },
    /// The element → nonzero map and the elements grouped by colour with each colour's
    /// (start, count).
    Colored {
        targets: DeviceVec<u32>,
        cells: DeviceVec<u32>,
        colors: Vec<(u32, u32)>,
    },
    /// By row: the full dof of every row (`None` without elimination), the row offsets, the
    /// node → element transpose and the element → nonzero map.
    Rows {
        rowdof: Option<DeviceVec<u32>>,
        row_ptr: DeviceVec<u64>,
        node_ptr: DeviceVec<u32>,
        node_pos: DeviceVec<u32>,
        targets: DeviceVec<u32>,
    },
    /// Sums in shared memory (SharedNZ, block sums): the elements and nonzeros of every
    /// block, each nonzero's entries and their places in the block's shared buffer; the
    /// nonzeros stored and added atomically (when some are, the values are zeroed first),
    /// and the elements computed by more than one block.
    Shared {
        eptr: DeviceVec<u32>,
        elems: DeviceVec<u32>,
        zptr: DeviceVec<u32>,
        nzs: DeviceVec<u32>,
        lptr: DeviceVec<u32>,
        lists: DeviceVec<u16>,
        stored: usize,
        added: usize,
        repeated: usize,
    },
    /// The nonzero → element-entries map and the element-data buffer it reads.
    Gather {
        ptr: DeviceVec<u32>,
        src: DeviceVec<u32>,
        data: DeviceVec<T>,
        gather: CudaFunction,
    },
}

/// The global matrix of a pointwise form on a simplex mesh, assembled on the GPU with one
/// of the strategies of Cecka, Lew & Darve (2011) into the pattern of an [`AssemblyPlan`]
/// (with its Dirichlet elimination: constrained rows and columns are never assembled).
///
/// Built once per mesh and physics; [`GpuAssembly::assemble`] refills the device values for
/// each linearisation. Owns its device buffers and a copy of the pattern (for
/// [`GpuAssembly::to_csr`]).
pub struct GpuAssembly<T: GpuReal> {
    dev: Arc<GpuDevice>,
    strategy: GpuStrategy,
    kernel: (CudaFunction, AssemblyKernel),
    nonlinear: bool,
    ncells: usize,
    ndofs: usize,
    pattern: SparsityPattern,
    /// Nodes per element, element-matrix rows, nodes, dimension: the byte model's sizes.
    sizes: (usize, usize, usize, usize),
    offsets: DeviceVec<u32>,
    coords: DeviceVec<T>,
    aux: DeviceVec<T>,
    maps: Maps<T>,
    values: DeviceVec<T>,
    bad: DeviceVec<u32>,
}

impl<T: GpuReal> GpuAssembly<T> {
    /// Uploads the mesh data and `plan`'s index maps that `strategy` needs, and compiles the
    /// kernel for `physics` (its CUDA half) integrated with `rule` on `space` (the space
    /// the plan was built on). A nonlinear physics (`!physics.linear`) is linearised about
    /// the state given to [`GpuAssembly::assemble`].
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        dev: &Arc<GpuDevice>,
        space: &H1Space,
        plan: &AssemblyPlan,
        physics: &CudaPhysics,
        rule: &QuadratureRule,
        aux: Aux<'_>,
        strategy: GpuStrategy,
    ) -> Result<GpuAssembly<T>, GpuError> {
        let r = space.restriction();
        let pr = plan.restriction();
        if physics.ncomp != space.ncomp()
            || (pr.num_elem(), pr.elem_size(), pr.ncomp(), pr.num_nodes())
                != (r.num_elem(), r.elem_size(), r.ncomp(), r.num_nodes())
            || pr.offsets() != r.offsets()
        {
            return Err(GpuError::Unsupported(
                "the assembly plan, the space and the physics must share the restriction and its components".into(),
            ));
        }
        let ncells = r.num_elem();
        let (aux_kind, aux_host): (AuxKind, Vec<T>) = match aux {
            Aux::None => (AuxKind::None, vec![T::zero()]),
            Aux::Nodal(a) => {
                if a.len() != space.num_nodes() {
                    return Err(GpuError::Size {
                        what: "nodal auxiliary field",
                        expected: space.num_nodes(),
                        got: a.len(),
                    });
                }
                (AuxKind::Nodal, a.iter().map(|&x| T::of(x)).collect())
            }
            Aux::Cellwise(a) => {
                if a.len() != ncells {
                    return Err(GpuError::Size {
                        what: "cellwise auxiliary field",
                        expected: ncells,
                        got: a.len(),
                    });
                }
                (AuxKind::Cellwise, a.iter().map(|&x| T::of(x)).collect())
            }
        };
        let n = plan.element_matrix_size();
        let stride = n * n + n;
        let row_ptr = plan.pattern().row_ptr();
        let shared = match strategy {
            GpuStrategy::SharedNz | GpuStrategy::BlockSums => {
                let per_element = n * n * T::BYTES;
                let most = (dev
                    .max_shared_per_block()
                    .saturating_sub(SHARED_SUMS_POINT_BYTES)
                    / per_element)
                    .min((u16::MAX as usize + 1) / (n * n))
                    .max(1);
                let (coords, d) = (space.node_coords(), space.element().dim());
                Some(if strategy == GpuStrategy::SharedNz {
                    // the target, raised to the elements of the busiest node (a row must
                    // fit), within the most a block can hold beside its point blocks
                    let busiest = plan
                        .transpose()
                        .node_offsets
                        .windows(2)
                        .map(|w| (w[1] - w[0]) as usize)
                        .max()
                        .unwrap_or(0);
                    let cap = (SHARED_NZ_BYTES / per_element).max(busiest).min(most);
                    row_sets(plan, coords, d, cap)?
                } else {
                    let cap = (BLOCK_SUMS_BYTES / per_element).clamp(1, most);
                    element_sets(plan, coords, d, cap)?
                })
            }
            _ => None,
        };
        let out = match strategy {
            GpuStrategy::Atomic => Output::Atomic,
            GpuStrategy::ElemColor => Output::Colored,
            GpuStrategy::GlobalNz => Output::ElementData,
            GpuStrategy::SharedNz => Output::SharedSums {
                emax: shared.as_ref().map_or(1, |p| p.emax),
                batch: SHARED_NZ_BATCH,
            },
            GpuStrategy::BlockSums => Output::SharedSums {
                emax: shared.as_ref().map_or(1, |p| p.emax),
                batch: BLOCK_SUMS_BATCH,
            },
            GpuStrategy::LocalRow => Output::Rows {
                max_row: row_ptr.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0),
            },
        };
        let k = assembly_kernel::<T>(physics, space.element(), rule, aux_kind, out, stride)?;
        let entry = match out {
            Output::Rows { .. } => "row_matrices",
            Output::SharedSums { .. } => "shared_sums",
            _ => "element_matrices",
        };
        let f = dev.function(&k.spec, entry)?;
        if k.shared_bytes > dev.max_shared_per_block() {
            return Err(GpuError::Unsupported(format!(
                "{} bytes of shared memory per block, the device allows {}",
                k.shared_bytes,
                dev.max_shared_per_block()
            )));
        }
        // raised for any size: harmless below the default 48 KiB
        {
            f.set_attribute(
                cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                k.shared_bytes as i32,
            )
            .map_err(|e| GpuError::driver("raising the element kernel's shared memory", e))?;
        }
        let maps = match strategy {
            GpuStrategy::Atomic => Maps::Scatter {
                targets: DeviceVec::from_host(dev, plan.targets(), "element -> nonzero map")?,
            },
            GpuStrategy::ElemColor => {
                let col = plan.coloring();
                let mut cells = Vec::with_capacity(ncells);
                let mut colors = Vec::with_capacity(col.num_colors());
                for c in 0..col.num_colors() {
                    colors.push((cells.len() as u32, col.color(c).len() as u32));
                    cells.extend_from_slice(col.color(c));
                }
                Maps::Colored {
                    targets: DeviceVec::from_host(dev, plan.targets(), "element -> nonzero map")?,
                    cells: DeviceVec::from_host(dev, &cells, "elements by colour")?,
                    colors,
                }
            }
            GpuStrategy::SharedNz | GpuStrategy::BlockSums => {
                let p: SharedSums = shared.expect("built above for sums in shared memory");
                let stored = p.nzs.iter().filter(|&&k| k & ONLY_HERE != 0).count();
                Maps::Shared {
                    eptr: DeviceVec::from_host(dev, &p.eptr, "shared-sum element offsets")?,
                    elems: DeviceVec::from_host(dev, &p.elems, "shared-sum elements")?,
                    zptr: DeviceVec::from_host(dev, &p.zptr, "shared-sum nonzero offsets")?,
                    nzs: DeviceVec::from_host(dev, &p.nzs, "shared-sum nonzeros")?,
                    lptr: DeviceVec::from_host(dev, &p.lptr, "shared-sum entry offsets")?,
                    lists: DeviceVec::from_host(dev, &p.lists, "shared-sum entry places")?,
                    stored,
                    added: p.nzs.len() - stored,
                    repeated: p.elems.len() - ncells,
                }
            }
            GpuStrategy::LocalRow => {
                let t = plan.transpose();
                let rows: Vec<u64> = row_ptr.iter().map(|&x| x as u64).collect();
                Maps::Rows {
                    rowdof: match plan.dof_map() {
                        Some(m) if !m.is_unconstrained() => {
                            Some(DeviceVec::from_host(dev, m.free(), "full dof of each row")?)
                        }
                        _ => None,
                    },
                    row_ptr: DeviceVec::from_host(dev, &rows, "CSR row offsets")?,
                    node_ptr: DeviceVec::from_host(
                        dev,
                        &t.node_offsets,
                        "node -> element offsets",
                    )?,
                    node_pos: DeviceVec::from_host(dev, &t.entries, "node -> element positions")?,
                    targets: DeviceVec::from_host(dev, plan.targets(), "element -> nonzero map")?,
                }
            }
            GpuStrategy::GlobalNz => {
                let (ptr, src) = plan
                    .nonzero_sources()
                    .map_err(|e| GpuError::Unsupported(e.to_string()))?;
                Maps::Gather {
                    ptr: DeviceVec::from_host(dev, ptr, "nonzero -> element-entries offsets")?,
                    src: DeviceVec::from_host(dev, src, "nonzero -> element-entries map")?,
                    data: DeviceVec::zeros(dev, ncells * stride, "element matrices")?,
                    gather: dev.function(&k.spec, "gather_nonzeros")?,
                }
            }
        };
        let coords: Vec<T> = space.node_coords().iter().map(|&x| T::of(x)).collect();
        let pattern = plan.pattern().clone();
        Ok(GpuAssembly {
            dev: dev.clone(),
            strategy,
            kernel: (f, k),
            nonlinear: !physics.linear,
            ncells,
            ndofs: space.num_dofs(),
            sizes: (r.elem_size(), n, space.num_nodes(), space.element().dim()),
            offsets: DeviceVec::from_host(dev, r.offsets(), "restriction offsets")?,
            coords: DeviceVec::from_host(dev, &coords, "node coordinates")?,
            aux: DeviceVec::from_host(dev, &aux_host, "auxiliary field")?,
            maps,
            values: DeviceVec::zeros(dev, pattern.nnz().max(1), "CSR values")?,
            bad: DeviceVec::zeros(dev, 2, "element checks")?,
            pattern,
        })
    }

    /// The strategy.
    pub fn strategy(&self) -> GpuStrategy {
        self.strategy
    }

    /// The CSR pattern the values belong to.
    pub fn pattern(&self) -> &SparsityPattern {
        &self.pattern
    }

    /// The assembled CSR values on the device (`pattern().nnz()` entries, or one unused
    /// entry for an empty pattern).
    pub fn values(&self) -> &DeviceVec<T> {
        &self.values
    }

    /// Assembles the matrix into [`GpuAssembly::values`], linearised about the L-vector `u`
    /// for a nonlinear physics (required then, ignored otherwise). Fails on an inverted or
    /// degenerate element or a non-finite element-matrix entry (the lowest such element).
    pub fn assemble(&mut self, u: Option<&DeviceVec<T>>) -> Result<(), GpuError> {
        self.enqueue(u, true)?;
        self.check()
    }

    /// Waits for the enqueued assemblies and reports the lowest element their checks
    /// flagged (the kernels record each element's complement with `atomicMax`, 0 for none).
    fn check(&self) -> Result<(), GpuError> {
        let bad = self.bad.to_host()?;
        if bad[1] != 0 {
            return Err(GpuError::BadElement {
                element: !bad[1] as usize,
                what: "inverted or degenerate (det J <= 0)",
            });
        }
        if bad[0] != 0 {
            return Err(GpuError::BadElement {
                element: !bad[0] as usize,
                what: "its element matrix has a non-finite entry",
            });
        }
        Ok(())
    }

    /// Enqueues the assembly on the device's stream without waiting for its checks (for
    /// the by-nonzero strategy without its gather unless `gather`).
    fn enqueue(&mut self, u: Option<&DeviceVec<T>>, gather_too: bool) -> Result<(), GpuError> {
        let GpuAssembly {
            dev,
            kernel,
            nonlinear,
            ncells,
            ndofs,
            pattern,
            offsets,
            coords,
            aux,
            maps,
            values,
            bad,
            ..
        } = self;
        let u = match (*nonlinear, u) {
            (true, Some(u)) if u.len() != *ndofs => {
                return Err(GpuError::Size {
                    what: "linearisation state",
                    expected: *ndofs,
                    got: u.len(),
                })
            }
            (true, Some(u)) => u,
            (true, None) => {
                return Err(GpuError::Unsupported(
                    "a nonlinear physics is assembled about a state u; none given".into(),
                ))
            }
            // not read by a linear physics' kernel
            (false, _) => &*aux,
        };
        let launch = ElementLaunch {
            dev,
            kernel,
            offsets,
            coords,
            aux,
            u,
        };
        bad.fill_zero()?;
        let n = *ncells as u32;
        match maps {
            Maps::Scatter { targets } => {
                values.fill_zero()?;
                launch.run(0, n, None, Some(targets), values, bad)?;
            }
            Maps::Colored {
                targets,
                cells,
                colors,
            } => {
                values.fill_zero()?;
                for &(start, count) in colors.iter() {
                    launch.run(start, count, Some(cells), Some(targets), values, bad)?;
                }
            }
            Maps::Rows {
                rowdof,
                row_ptr,
                node_ptr,
                node_pos,
                targets,
            } => {
                let nrows = (row_ptr.len() - 1) as u32;
                launch.rows(
                    nrows,
                    rowdof.as_ref(),
                    row_ptr,
                    node_ptr,
                    node_pos,
                    targets,
                    values,
                    bad,
                )?;
            }
            Maps::Shared {
                eptr,
                elems,
                zptr,
                nzs,
                lptr,
                lists,
                added,
                ..
            } => {
                if *added > 0 {
                    values.fill_zero()?;
                }
                launch.shared(eptr, elems, zptr, nzs, lptr, lists, values, bad)?;
            }
            Maps::Gather {
                ptr,
                src,
                data,
                gather,
            } => {
                launch.run(0, n, None, None, data, bad)?;
                if gather_too {
                    launch_gather(dev, gather, pattern.nnz() as u32, ptr, src, data, values)?;
                }
            }
        }
        Ok(())
    }

    /// The assembled matrix, downloaded into a host CSR matrix with the plan's pattern.
    pub fn to_csr(&self) -> Result<CsrMatrix<T>, GpuError> {
        let mut a = self.pattern.zeros();
        let v = self.values.to_host()?;
        let nnz = a.values_mut().len();
        a.values_mut().copy_from_slice(&v[..nnz]);
        Ok(a)
    }

    /// Median seconds of `reps` re-assemblies after `warmup`: the kernels with their
    /// element checks, which are read once after the last (an error if any failed).
    pub fn time(
        &mut self,
        u: Option<&DeviceVec<T>>,
        warmup: usize,
        reps: usize,
    ) -> Result<f64, GpuError> {
        let dev = self.dev.clone();
        let times = GpuTimer::new(&dev).time(warmup, reps, || self.enqueue(u, true))?;
        self.check()?;
        Ok(crate::median(&times))
    }

    /// For [`GpuStrategy::GlobalNz`]: median seconds of the element kernel alone (element
    /// matrices written to global memory) and of the gather alone; `None` for the strategies
    /// that fuse the two.
    pub fn time_stages(
        &mut self,
        u: Option<&DeviceVec<T>>,
        warmup: usize,
        reps: usize,
    ) -> Result<Option<(f64, f64)>, GpuError> {
        if self.strategy != GpuStrategy::GlobalNz {
            return Ok(None);
        }
        let dev = self.dev.clone();
        let timer = GpuTimer::new(&dev);
        let elements = timer.time(warmup, reps, || self.enqueue_stage(u, true))?;
        let gather = timer.time(warmup, reps, || self.enqueue_stage(u, false))?;
        Ok(Some((crate::median(&elements), crate::median(&gather))))
    }

    /// Bytes one assembly moves by this strategy's model (`s` bytes per scalar, `E`
    /// elements of `m` nodes, element matrices of `n` rows, `N` nodes in `d` dimensions):
    ///
    /// - every strategy reads the element → node map, `4 m E`, and the node coordinates
    ///   once, `s d N` (the auxiliary field once, when there is one);
    /// - atomic and coloured: the element → nonzero map, `4 n² E`, and the CSR values
    ///   zeroed, then read and written once by the additions: `3 s nnz`;
    /// - by row: the element → nonzero map, `4 n² E`, the node → element transpose,
    ///   `4 (m E + N)`, the row offsets (and the full dof of each row with elimination),
    ///   and the CSR values written once, `s nnz`;
    /// - sums in shared memory (SharedNZ, block sums): the elements of every block (`4`
    ///   each, and the connectivity again for elements computed by several blocks), the
    ///   blocks' nonzeros and their entry offsets (`4` each), the shared places (`2` per
    ///   entry), and the CSR values: each stored nonzero written once, each atomically added
    ///   one read and written, and all zeroed first when any is added;
    /// - by nonzero: the element matrices written and read, `2 s n² E`, the
    ///   nonzero → element-entries map, `4` per entry plus `4 nnz` offsets, and the CSR
    ///   values written once, `s nnz`.
    pub fn model_bytes(&self) -> f64 {
        let (m, n, nodes, d) = self.sizes;
        let (e, s, nnz) = (
            self.ncells as f64,
            T::BYTES as f64,
            self.pattern.nnz() as f64,
        );
        let aux = if self.aux.len() > 1 {
            s * self.aux.len() as f64
        } else {
            0.0
        };
        let input = 4.0 * m as f64 * e + s * (d * nodes) as f64 + aux;
        let n2 = (n * n) as f64;
        input
            + match &self.maps {
                Maps::Scatter { .. } | Maps::Colored { .. } => 4.0 * n2 * e + 3.0 * s * nnz,
                Maps::Rows {
                    row_ptr, rowdof, ..
                } => {
                    let rows = (row_ptr.len() - 1) as f64;
                    let rowdof = if rowdof.is_some() { 4.0 * rows } else { 0.0 };
                    4.0 * n2 * e
                        + 4.0 * (m as f64 * e + nodes as f64)
                        + 8.0 * rows
                        + rowdof
                        + s * nnz
                }
                Maps::Shared {
                    elems,
                    nzs,
                    lptr,
                    lists,
                    stored,
                    added,
                    repeated,
                    ..
                } => {
                    let zero = if *added > 0 { s * nnz } else { 0.0 };
                    4.0 * elems.len() as f64
                        + 4.0 * m as f64 * *repeated as f64
                        + 4.0 * (nzs.len() + lptr.len()) as f64
                        + 2.0 * lists.len() as f64
                        + s * (*stored as f64 + 2.0 * *added as f64)
                        + zero
                }
                Maps::Gather { src, .. } => {
                    2.0 * s * n2 * e + 4.0 * src.len() as f64 + 4.0 * nnz + s * nnz
                }
            }
    }

    /// Enqueues the element kernel (`elements`) or the gather of a by-nonzero assembly.
    fn enqueue_stage(&mut self, u: Option<&DeviceVec<T>>, elements: bool) -> Result<(), GpuError> {
        if elements {
            self.enqueue(u, false)
        } else {
            let Maps::Gather {
                ptr,
                src,
                data,
                gather,
            } = &self.maps
            else {
                return Ok(());
            };
            launch_gather(
                &self.dev,
                gather,
                self.pattern.nnz() as u32,
                ptr,
                src,
                data,
                &mut self.values,
            )
        }
    }
}

/// Launches `f` (`name` in errors) on `grid` blocks of `threads` with `shared` bytes of
/// dynamic shared memory, its arguments pushed by `args`.
///
/// # Safety
/// `args` must push the kernel's parameter list in order, with device buffers as large as
/// the kernel reads and writes for this grid.
unsafe fn launch<'a>(
    dev: &'a Arc<GpuDevice>,
    f: &'a CudaFunction,
    name: &str,
    (grid, threads, shared): (usize, usize, usize),
    args: impl FnOnce(&mut LaunchArgs<'a>),
) -> Result<(), GpuError> {
    let cfg = LaunchConfig {
        grid_dim: (grid.max(1) as u32, 1, 1),
        block_dim: (threads as u32, 1, 1),
        shared_mem_bytes: shared as u32,
    };
    let mut b = dev.stream().launch_builder(f);
    args(&mut b);
    // SAFETY: the caller's contract
    unsafe { b.launch(cfg) }.map_err(|e| GpuError::Launch {
        kernel: name.to_string(),
        source: e,
    })?;
    Ok(())
}

/// Launches `gather_nonzeros` over `nnz` nonzeros.
fn launch_gather<T: GpuReal>(
    dev: &Arc<GpuDevice>,
    gather: &CudaFunction,
    nnz: u32,
    ptr: &DeviceVec<u32>,
    src: &DeviceVec<u32>,
    data: &DeviceVec<T>,
    values: &mut DeviceVec<T>,
) -> Result<(), GpuError> {
    if nnz == 0 {
        return Ok(());
    }
    let grid = (nnz as usize).div_ceil(256).min(dev.sm_count() * 32);
    // SAFETY: `gather_nonzeros` in kernels/assembly.cu; ptr has nnz + 1 entries, src
    // indexes the element data (the plan keeps it < 2^32), values has nnz entries.
    unsafe {
        launch(dev, gather, "gather_nonzeros", (grid, 256, 0), |b| {
            b.arg(&nnz)
                .arg(ptr.slice())
                .arg(src.slice())
                .arg(data.slice())
                .arg(values.slice_mut());
        })
    }
}

/// What every launch of the element kernel reads.
struct ElementLaunch<'a, T: GpuReal> {
    dev: &'a Arc<GpuDevice>,
    kernel: &'a (CudaFunction, AssemblyKernel),
    offsets: &'a DeviceVec<u32>,
    coords: &'a DeviceVec<T>,
    aux: &'a DeviceVec<T>,
    u: &'a DeviceVec<T>,
}

impl<T: GpuReal> ElementLaunch<'_, T> {
    /// Launches the kernel of sums in shared memory over its blocks.
    #[allow(clippy::too_many_arguments)]
    fn shared(
        &self,
        eptr: &DeviceVec<u32>,
        elems: &DeviceVec<u32>,
        zptr: &DeviceVec<u32>,
        nzs: &DeviceVec<u32>,
        lptr: &DeviceVec<u32>,
        lists: &DeviceVec<u16>,
        values: &mut DeviceVec<T>,
        bad: &mut DeviceVec<u32>,
    ) -> Result<(), GpuError> {
        let nblocks = (eptr.len() - 1) as u32;
        if nblocks == 0 {
            return Ok(());
        }
        let (f, k) = self.kernel;
        let grid = (nblocks as usize).min(self.dev.sm_count() * 64);
        // SAFETY: argument list of `shared_sums` in kernels/assembly.cu: every block's
        // elements (at most EMAX, the specialisation's) and nonzeros (< nnz, with the
        // ONLY_HERE flag), entry offsets one past the nonzeros, places below EMAX * n^2.
        unsafe {
            launch(
                self.dev,
                f,
                &k.spec.name,
                (grid, THREADS, k.shared_bytes),
                |b| {
                    b.arg(&nblocks)
                        .arg(eptr.slice())
                        .arg(elems.slice())
                        .arg(zptr.slice())
                        .arg(nzs.slice())
                        .arg(lptr.slice())
                        .arg(lists.slice())
                        .arg(self.offsets.slice())
                        .arg(self.coords.slice())
                        .arg(self.u.slice())
                        .arg(self.aux.slice())
                        .arg(values.slice_mut())
                        .arg(bad.slice_mut());
                },
            )
        }
    }

    /// Launches the row kernel over `nrows` rows.
    #[allow(clippy::too_many_arguments)]
    fn rows(
        &self,
        nrows: u32,
        rowdof: Option<&DeviceVec<u32>>,
        row_ptr: &DeviceVec<u64>,
        node_ptr: &DeviceVec<u32>,
        node_pos: &DeviceVec<u32>,
        targets: &DeviceVec<u32>,
        values: &mut DeviceVec<T>,
        bad: &mut DeviceVec<u32>,
    ) -> Result<(), GpuError> {
        if nrows == 0 {
            return Ok(());
        }
        let (f, k) = self.kernel;
        let grid = (nrows as usize)
            .div_ceil(THREADS)
            .min(self.dev.sm_count() * 64);
        let null: u64 = 0;
        // SAFETY: argument list of `row_matrices` in kernels/assembly.cu: nrows + 1 row
        // offsets, rows of at most MAXROW entries (the kernel's specialisation), the
        // restriction's transpose and the plan's element -> nonzero map.
        unsafe {
            launch(self.dev, f, &k.spec.name, (grid, THREADS, 0), |b| {
                b.arg(&nrows);
                match rowdof {
                    Some(r) => b.arg(r.slice()),
                    None => b.arg(&null),
                };
                b.arg(row_ptr.slice())
                    .arg(node_ptr.slice())
                    .arg(node_pos.slice())
                    .arg(self.offsets.slice())
                    .arg(self.coords.slice())
                    .arg(self.u.slice())
                    .arg(self.aux.slice())
                    .arg(targets.slice())
                    .arg(values.slice_mut())
                    .arg(bad.slice_mut());
            })
        }
    }

    /// Launches the element kernel over `count` cells from `cell0` (of the colour list when
    /// `cells` is given), writing into `out` (through `targets` when given).
    fn run(
        &self,
        cell0: u32,
        count: u32,
        cells: Option<&DeviceVec<u32>>,
        targets: Option<&DeviceVec<u32>>,
        out: &mut DeviceVec<T>,
        bad: &mut DeviceVec<u32>,
    ) -> Result<(), GpuError> {
        if count == 0 {
            return Ok(());
        }
        let (f, k) = self.kernel;
        let grid = (count as usize)
            .div_ceil(k.cells_per_block)
            .min(self.dev.sm_count() * 16);
        let null: u64 = 0;
        // SAFETY: argument list of `element_matrices` in kernels/assembly.cu; the cells of a
        // launch are < ncells, targets < nnz or NO_TARGET (the plan's map for this
        // restriction), element data sized ncells * stride.
        unsafe {
            launch(
                self.dev,
                f,
                &k.spec.name,
                (grid, THREADS, k.shared_bytes),
                |b| {
                    b.arg(&count).arg(&cell0);
                    match cells {
                        Some(c) => b.arg(c.slice()),
                        None => b.arg(&null),
                    };
                    b.arg(self.offsets.slice())
                        .arg(self.coords.slice())
                        .arg(self.u.slice())
                        .arg(self.aux.slice());
                    match targets {
                        Some(t) => b.arg(t.slice()),
                        None => b.arg(&null),
                    };
                    b.arg(out.slice_mut()).arg(bad.slice_mut());
                },
            )
        }
    }
}

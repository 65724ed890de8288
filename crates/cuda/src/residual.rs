//! Residual evaluation and Jacobian action of pointwise weak forms on triangles and
//! tetrahedra (`kernels/residual.cu`): the thread-transposition kernel of Knepley, Rupp &
//! Terrel (2016) and the two strategies it improves on, with element-vector output (the
//! paper's setting) or the assembled global residual (atomics or colouring).

use crate::compile::KernelSpec;
use crate::{sources, DeviceVec, GpuDevice, GpuError, GpuReal, GpuTimer};
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use ferrofem_fe::{LagrangeElement, QuadratureRule};
use ferrofem_geometry::GeometrySource;
use ferrofem_mesh::Mesh;
use ferrofem_physics::CudaPhysics;
use ferrofem_space::H1Space;
use std::sync::Arc;

/// How work is mapped to threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Thread transposition: quadrature phase over (cell, point), basis phase over (cell,
    /// basis function, component), through shared memory.
    Transposition,
    /// One thread per cell (baseline).
    ThreadPerCell,
    /// One thread per basis function and component, fields recomputed from global memory
    /// at every point (baseline).
    ThreadPerBasis,
}

/// What the kernel writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Output {
    /// Element vectors `[cell][comp][basis]` from element coefficients in the same layout.
    ElementVectors,
    /// The global residual, accumulated with atomics.
    GlobalAtomic,
    /// The global residual, one launch per colour of cells (no two share a node).
    GlobalColored,
}

/// The auxiliary (coefficient) field of the physics.
#[derive(Clone, Copy, Debug)]
pub enum Aux<'a> {
    /// No auxiliary field.
    None,
    /// Nodal values in the solution's scalar space (one per node).
    Nodal(&'a [f64]),
    /// One value per cell (P0).
    Cellwise(&'a [f64]),
}

/// Launch parameters and variants of a residual kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ResidualConfig {
    /// Thread mapping.
    pub strategy: Strategy,
    /// Output.
    pub output: Output,
    /// Where cell geometry comes from: `J⁻¹` and `det J` stored per cell (`d² + 1`
    /// values, the paper's layout; the maps are affine), or computed in the kernel from
    /// the coordinates of the cell's vertex nodes.
    pub geometry: GeometrySource,
    /// Cell blocks per batch (transposition only; a block is `lcm(NB, NQ)` cells, capped).
    pub blocks_per_batch: usize,
    /// Batches a thread block processes in sequence (transposition only).
    pub batches: usize,
    /// Threads per cell of a batch (transposition only; 0: one per solution component, the
    /// paper's shape). Fewer threads per cell put more cells, and so more bytes, in flight
    /// per multiprocessor at the same register budget, which single precision needs.
    pub threads_per_cell: usize,
}

impl ResidualConfig {
    /// Thread transposition writing the global residual with atomics, stored geometry.
    pub fn new() -> ResidualConfig {
        ResidualConfig {
            strategy: Strategy::Transposition,
            output: Output::GlobalAtomic,
            geometry: GeometrySource::Stored,
            blocks_per_batch: 4,
            batches: 2,
            threads_per_cell: 0,
        }
    }
}

impl ResidualConfig {
    /// The configuration in effect for `physics`: a physics that reads the physical point
    /// gets it from the cell's vertices, so its geometry comes from them too.
    pub fn for_physics(self, physics: &CudaPhysics) -> ResidualConfig {
        if physics.reads_x {
            ResidualConfig {
                geometry: GeometrySource::OnTheFly,
                ..self
            }
        } else {
            self
        }
    }
}

impl Default for ResidualConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// The dimension of `element`'s simplex, checked to be the physics' (`what` names the
/// kernels in the error).
pub(crate) fn simplex_dim(
    physics: &CudaPhysics,
    element: &LagrangeElement,
    what: &str,
) -> Result<usize, GpuError> {
    let ct = element.cell_type();
    if !ct.is_simplex() {
        return Err(GpuError::Unsupported(format!(
            "{what} are for simplices, got {ct}"
        )));
    }
    let d = ct.dim();
    if physics.dim != d {
        return Err(GpuError::Unsupported(format!(
            "physics is {}-D, mesh is {d}-D",
            physics.dim
        )));
    }
    Ok(d)
}

/// The CUDA C definition `<qualifier> real name[] = {...};` of a table (at least one entry;
/// every value printed so that it reads back exactly).
pub(crate) fn table_source(qualifier: &str, name: &str, v: &[f64]) -> String {
    let body: Vec<String> = v.iter().map(|x| format!("{x:e}")).collect();
    format!(
        "{qualifier} real {name}[{}] = {{{}}};\n",
        v.len().max(1),
        if body.is_empty() {
            "0".to_string()
        } else {
            body.join(", ")
        }
    )
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Cells per cell block: `lcm(NB, NQ)` (the paper), or 32 when that is larger (rules with
/// many points; the kernel's strided loops need no exact division).
pub fn cells_per_block(nb: usize, nq: usize) -> usize {
    let l = nb / gcd(nb, nq) * nq;
    if l <= 32 {
        l
    } else {
        32
    }
}

/// A kernel specialisation and its launch shape.
#[derive(Clone, Debug)]
pub struct ResidualKernel {
    /// The NVRTC specialisation.
    pub spec: KernelSpec,
    /// Threads per block.
    pub threads: usize,
    /// Cells per batch (transposition) or per block (baselines: cells or items).
    pub cells_per_batch: usize,
    /// Blocks per batch actually used (reduced to fit shared memory).
    pub blocks_per_batch: usize,
}

/// The kernel for `physics` with `element` and `rule`, without a device (for CI).
pub fn residual_kernel<T: GpuReal>(
    physics: &CudaPhysics,
    element: &LagrangeElement,
    rule: &QuadratureRule,
    aux: u32,
    jacobian: bool,
    cfg: ResidualConfig,
) -> Result<ResidualKernel, GpuError> {
    let d = simplex_dim(physics, element, "the residual kernels")?;
    let nb = element.num_nodes();
    let nq = rule.len();
    let nc = physics.ncomp;
    let tab = element
        .tabulate(&rule.points)
        .map_err(|e| GpuError::Unsupported(e.to_string()))?;
    let arr = |name: &str, v: &[f64]| table_source("__constant__", name, v);
    let cfg = cfg.for_physics(physics);
    let tables = format!(
        "{}{}{}{}",
        arr("cPhi", &tab.values),
        arr("cDphi", &tab.grads),
        arr("cWq", &rule.weights),
        if physics.reads_x {
            arr("cXq", &rule.points)
        } else {
            String::new()
        }
    );
    let mut nbs = cells_per_block(nb, nq);
    let nf = nc + nc * d;
    // flux records at an odd stride (NFS in the kernel)
    let nfs = nf | 1;
    // mirrors the transposition kernel's shared arrays (stage buffers doubled when a block
    // takes several batches)
    let from_vertices = cfg.geometry == GeometrySource::OnTheFly;
    let nae = match aux {
        0 => 0,
        2 => 1,
        _ => nb,
    };
    let ngl = if from_vertices {
        (d + 1) * d
    } else {
        d * d + 1
    };
    let nstage = if cfg.batches > 1 { 2 } else { 1 };
    let index_bytes = if cfg.output == Output::ElementVectors {
        0
    } else {
        4 * nb * nstage
    };
    let smem_of = |nbc: usize| {
        T::BYTES * nbc * (nstage * (nb * nc * (1 + jacobian as usize) + nae + ngl) + nq * nfs)
            + index_bytes * nbc
    };
    // blocks per batch as asked, halved until the batch fits 48 KB of shared memory and
    // 1024 threads (the effective value is part of the kernel name)
    let mut cfg = cfg;
    let tpc = if cfg.threads_per_cell == 0 {
        nc
    } else {
        cfg.threads_per_cell
    };
    if cfg.strategy == Strategy::Transposition {
        // rules with many points (P2 tetrahedra): fewer cells per block until one block fits
        while nbs > 4 && smem_of(nbs) > 48 * 1024 {
            nbs /= 2;
        }
        cfg.blocks_per_batch = cfg.blocks_per_batch.max(1);
        while cfg.blocks_per_batch > 1
            && (smem_of(nbs * cfg.blocks_per_batch) > 48 * 1024
                || nbs * cfg.blocks_per_batch * tpc > 1024)
        {
            cfg.blocks_per_batch /= 2;
        }
    }
    let (threads, nbc) = match cfg.strategy {
        Strategy::Transposition => {
            let nbc = nbs * cfg.blocks_per_batch;
            (nbc * tpc, nbc)
        }
        _ => (128, 128),
    };
    if threads > 1024 {
        return Err(GpuError::Unsupported(format!(
            "{threads} threads per block"
        )));
    }
    let smem = smem_of(nbc);
    if cfg.strategy == Strategy::Transposition && smem > 48 * 1024 {
        return Err(GpuError::Unsupported(format!(
            "{smem} bytes of shared memory per block"
        )));
    }
    let t = physics.terms;
    let j = physics.jacobian;
    let source = format!(
        "{}\n{}\n{}\n{}\n{}",
        sources::PRELUDE,
        sources::SIMPLEX,
        physics.source,
        tables,
        sources::RESIDUAL
    );
    let spec = KernelSpec::new(
        format!(
            "res_{}_{}_p{}_q{nq}_{}_{:?}_{:?}_{:?}_b{}_n{}_t{tpc}",
            physics.name,
            T::NAME,
            element.order(),
            if jacobian { "jac" } else { "res" },
            cfg.strategy,
            cfg.output,
            cfg.geometry,
            cfg.blocks_per_batch,
            cfg.batches
        ),
        source,
    )
    .define("REAL", T::CTYPE)
    .define("DIM", d)
    .define("NB", nb)
    .define("NQ", nq)
    .define("NC", nc)
    .define("NBS", nbs)
    .define("NBL", cfg.blocks_per_batch.max(1))
    .define("NBATCH", cfg.batches.max(1))
    .define("TPC", tpc)
    .define(
        "STRATEGY",
        match cfg.strategy {
            Strategy::Transposition => 0,
            Strategy::ThreadPerCell => 1,
            Strategy::ThreadPerBasis => 2,
        },
    )
    .define(
        "OUT",
        match cfg.output {
            Output::ElementVectors => 0,
            Output::GlobalAtomic => 1,
            Output::GlobalColored => 2,
        },
    )
    .define("GEO", (cfg.geometry == GeometrySource::OnTheFly) as u32)
    .define("AUX", aux)
    .define("JAC", jacobian as u32)
    .define("NEED_X", physics.reads_x as u32)
    .define("HAS_F0", t.f0 as u32)
    .define("HAS_F1", t.f1 as u32)
    .define("HAS_G0", j.g0 as u32)
    .define("HAS_G1", j.g1 as u32)
    .define("HAS_G2", j.g2 as u32)
    .define("HAS_G3", j.g3 as u32);
    Ok(ResidualKernel {
        spec,
        threads,
        cells_per_batch: nbc,
        blocks_per_batch: cfg.blocks_per_batch,
    })
}

/// Cells grouped by colour on the device, and each colour's (start, count).
type ColorLaunches = (DeviceVec<u32>, Vec<(u32, u32)>);

/// A test physics: its CPU half, its CUDA half and its auxiliary-field kind (0 none, 1
/// nodal, 2 per cell).
pub type CasePhysics = (Box<dyn ferrofem_physics::Physics<f64>>, CudaPhysics, u32);

/// A residual (and Jacobian-action) operator on the GPU for one mesh, space and physics.
pub struct GpuResidual<T: GpuReal> {
    dev: Arc<GpuDevice>,
    cfg: ResidualConfig,
    residual: (CudaFunction, ResidualKernel),
    jacobian: Option<(CudaFunction, ResidualKernel)>,
    ncells: usize,
    ndofs: usize,
    evec_len: usize,
    offsets: DeviceVec<u32>,
    geo: DeviceVec<T>,
    coords: DeviceVec<T>,
    aux: DeviceVec<T>,
    colors: Option<ColorLaunches>,
}

impl<T: GpuReal> GpuResidual<T> {
    /// Builds the operator: uploads the restriction, geometry (or node coordinates) and
    /// auxiliary field, and compiles the residual kernel (and, when `with_jacobian`, the
    /// Jacobian-action kernel) for `physics` (its CUDA half, with the forcing when the half
    /// has one: a source in `f0` evaluated at the physical point; give physics without
    /// forcing for the operator alone).
    pub fn new(
        dev: &Arc<GpuDevice>,
        mesh: &Mesh,
        space: &H1Space,
        physics: &CudaPhysics,
        rule: &QuadratureRule,
        aux: Aux<'_>,
        cfg: ResidualConfig,
        with_jacobian: bool,
    ) -> Result<GpuResidual<T>, GpuError> {
        if physics.ncomp != space.ncomp() {
            return Err(GpuError::Unsupported(format!(
                "physics has {} components, the space {}",
                physics.ncomp,
                space.ncomp()
            )));
        }
        let el = space.element();
        let d = el.dim();
        let ncells = mesh.num_cells();
        let (aux_code, aux_host): (u32, Vec<T>) = match aux {
            Aux::None => (0, vec![T::zero()]),
            Aux::Nodal(a) => {
                if a.len() != space.num_nodes() {
                    return Err(GpuError::Size {
                        what: "nodal auxiliary field",
                        expected: space.num_nodes(),
                        got: a.len(),
                    });
                }
                if cfg.output == Output::ElementVectors {
                    // per-cell blocks, like the coefficients in this setting
                    let offsets = space.restriction().offsets();
                    (1, offsets.iter().map(|&n| T::of(a[n as usize])).collect())
                } else {
                    (1, a.iter().map(|&x| T::of(x)).collect())
                }
            }
            Aux::Cellwise(a) => {
                if a.len() != ncells {
                    return Err(GpuError::Size {
                        what: "cellwise auxiliary field",
                        expected: ncells,
                        got: a.len(),
                    });
                }
                (2, a.iter().map(|&x| T::of(x)).collect())
            }
        };
        if (physics.naux > 0) != (aux_code > 0) {
            return Err(GpuError::Unsupported(format!(
                "physics reads {} auxiliary fields but {} given",
                physics.naux,
                if aux_code > 0 { 1 } else { 0 }
            )));
        }
        let cfg = cfg.for_physics(physics);
        let rk = residual_kernel::<T>(physics, el, rule, aux_code, false, cfg)?;
        let residual = (dev.function(&rk.spec, "residual")?, rk);
        let jacobian = if with_jacobian {
            let jk = residual_kernel::<T>(physics, el, rule, aux_code, true, cfg)?;
            Some((dev.function(&jk.spec, "residual")?, jk))
        } else {
            None
        };
        // geometry: J^{-1} (row-major dxi_k/dx_i) and det J per cell from the vertex nodes
        let r = space.restriction();
        let xs = space.node_coords();
        let geo_host: Vec<T> = if cfg.geometry == GeometrySource::Stored {
            let mut g = Vec::with_capacity(ncells * (d * d + 1));
            for c in 0..ncells {
                let en = r.elem(c);
                let x0 = &xs[en[0] as usize * d..en[0] as usize * d + d];
                let mut j = [[0.0f64; 3]; 3];
                for k in 0..d {
                    let xk = &xs[en[k + 1] as usize * d..en[k + 1] as usize * d + d];
                    for i in 0..d {
                        j[i][k] = xk[i] - x0[i];
                    }
                }
                let jac = ferrofem_geometry::Jacobian::from_matrix(d, j);
                let inv = jac.inverse();
                for k in 0..d {
                    for i in 0..d {
                        g.push(T::of(inv[k][i]));
                    }
                }
                g.push(T::of(jac.det));
            }
            g
        } else {
            vec![T::zero()]
        };
        let coords_host: Vec<T> = if cfg.geometry == GeometrySource::OnTheFly {
            xs.iter().map(|&x| T::of(x)).collect()
        } else {
            vec![T::zero()]
        };
        let colors = if cfg.output == Output::GlobalColored {
            let col = mesh.color_cells();
            let ranges: Vec<(u32, u32)> = (0..col.num_colors)
                .map(|k| (col.offsets[k], col.offsets[k + 1] - col.offsets[k]))
                .collect();
            Some((
                DeviceVec::from_host(dev, &col.cells, "cells by colour")?,
                ranges,
            ))
        } else {
            None
        };
        Ok(GpuResidual {
            dev: dev.clone(),
            cfg,
            residual,
            jacobian,
            ncells,
            ndofs: space.num_dofs(),
            evec_len: r.evec_len(),
            offsets: DeviceVec::from_host(dev, r.offsets(), "restriction offsets")?,
            geo: DeviceVec::from_host(dev, &geo_host, "cell geometry")?,
            coords: DeviceVec::from_host(dev, &coords_host, "node coordinates")?,
            aux: DeviceVec::from_host(dev, &aux_host, "auxiliary field")?,
            colors,
        })
    }

    /// Length of the vectors `apply` takes: the E-vector for element-vector output, else
    /// the L-vector.
    pub fn vector_len(&self) -> usize {
        if self.cfg.output == Output::ElementVectors {
            self.evec_len
        } else {
            self.ndofs
        }
    }
    /// Number of cells.
    pub fn ncells(&self) -> usize {
        self.ncells
    }
    /// The configuration.
    pub fn config(&self) -> ResidualConfig {
        self.cfg
    }
    /// Threads per block and cells per batch of the residual kernel.
    pub fn shape(&self) -> (usize, usize) {
        (self.residual.1.threads, self.residual.1.cells_per_batch)
    }

    fn launch(
        &self,
        f: &CudaFunction,
        k: &ResidualKernel,
        u: &DeviceVec<T>,
        w: &DeviceVec<T>,
        out: &mut DeviceVec<T>,
    ) -> Result<(), GpuError> {
        let len = self.vector_len();
        if u.len() != len || out.len() != len || w.len() != len {
            return Err(GpuError::Size {
                what: "residual vectors",
                expected: len,
                got: u.len().min(out.len()),
            });
        }
        if self.cfg.output != Output::ElementVectors {
            out.fill_zero()?;
        }
        let per_block = match self.cfg.strategy {
            Strategy::Transposition => k.cells_per_batch * self.cfg.batches.max(1),
            Strategy::ThreadPerCell => k.threads,
            Strategy::ThreadPerBasis => k.threads,
        };
        let items_per_cell = if self.cfg.strategy == Strategy::ThreadPerBasis {
            self.evec_len / self.ncells.max(1)
        } else {
            1
        };
        let ranges: Vec<(u32, u32, bool)> = match &self.colors {
            Some((_, r)) => r.iter().map(|&(s, n)| (s, n, true)).collect(),
            None => vec![(0, self.ncells as u32, false)],
        };
        let stream = self.dev.stream();
        for (cell0, n, colored) in ranges {
            if n == 0 {
                continue;
            }
            let grid = (n as usize * items_per_cell).div_ceil(per_block) as u32;
            let cfg = LaunchConfig {
                grid_dim: (grid, 1, 1),
                block_dim: (k.threads as u32, 1, 1),
                shared_mem_bytes: 0,
            };
            let null: u64 = 0;
            let mut b = stream.launch_builder(f);
            b.arg(&n).arg(&cell0);
            match (&self.colors, colored) {
                (Some((cells, _)), true) => b.arg(cells.slice()),
                _ => b.arg(&null),
            };
            b.arg(self.offsets.slice())
                .arg(self.geo.slice())
                .arg(self.coords.slice())
                .arg(self.aux.slice())
                .arg(u.slice())
                .arg(w.slice())
                .arg(out.slice_mut());
            // SAFETY: argument list of `residual` in kernels/residual.cu; sizes checked above.
            unsafe { b.launch(cfg) }.map_err(|e| GpuError::Launch {
                kernel: k.spec.name.clone(),
                source: e,
            })?;
        }
        Ok(())
    }

    /// `out = r(u)`: the residual of the physics (overwrites `out`).
    pub fn apply(&self, u: &DeviceVec<T>, out: &mut DeviceVec<T>) -> Result<(), GpuError> {
        let (f, k) = &self.residual;
        self.launch(f, k, u, u, out)
    }

    /// `out = J(u) w`: the Jacobian of the residual at `u` applied to `w`.
    pub fn jacobian_apply(
        &self,
        u: &DeviceVec<T>,
        w: &DeviceVec<T>,
        out: &mut DeviceVec<T>,
    ) -> Result<(), GpuError> {
        let Some((f, k)) = &self.jacobian else {
            return Err(GpuError::Unsupported(
                "operator built without the Jacobian kernel".into(),
            ));
        };
        self.launch(f, k, u, w, out)
    }

    /// Median seconds of `reps` residual evaluations after `warmup`.
    pub fn time(
        &self,
        u: &DeviceVec<T>,
        out: &mut DeviceVec<T>,
        warmup: usize,
        reps: usize,
    ) -> Result<f64, GpuError> {
        let times = GpuTimer::new(&self.dev).time(warmup, reps, || self.apply(u, out))?;
        Ok(crate::median(&times))
    }
}

/// A physics of the residual tests and benchmarks, without forcing (the load vector is
/// assembled apart), with its CPU half for the twin.
pub fn case_physics(name: &str, dim: usize) -> Result<CasePhysics, GpuError> {
    use ferrofem_physics::{
        Elasticity, Manufactured, NonlinearDiffusion, Physics, Poisson, PoissonVarCoef,
    };
    let err = |e: ferrofem_physics::PhysicsError| GpuError::Unsupported(e.to_string());
    Ok(match name {
        "poisson" => {
            let p = Poisson::new(dim, 1.0, None).map_err(err)?;
            let c = Physics::<f64>::cuda(&p);
            (Box::new(p), c, 0)
        }
        "poisson-varcoef" | "poisson-varcoef-p1" => {
            let p = PoissonVarCoef::new(dim, None).map_err(err)?;
            let c = Physics::<f64>::cuda(&p);
            (Box::new(p), c, 1)
        }
        "poisson-varcoef-p0" => {
            let p = PoissonVarCoef::new(dim, None).map_err(err)?;
            let c = Physics::<f64>::cuda(&p);
            (Box::new(p), c, 2)
        }
        "elasticity" => {
            let p = Elasticity::new(dim, 1.0, 1.0, None).map_err(err)?;
            let c = Physics::<f64>::cuda(&p);
            (Box::new(p), c, 0)
        }
        // with their manufactured forcings: physics that read the physical point
        "poisson-forced" => {
            let p = Poisson::new(
                dim,
                1.5,
                Some(Manufactured::poisson(dim, 1.5).map_err(err)?),
            )
            .map_err(err)?;
            let c = Physics::<f64>::cuda(&p);
            (Box::new(p), c, 0)
        }
        "elasticity-forced" => {
            let m = Manufactured::elasticity(dim, 1.2, 0.7).map_err(err)?;
            let p = Elasticity::new(dim, 1.2, 0.7, Some(m)).map_err(err)?;
            let c = Physics::<f64>::cuda(&p);
            (Box::new(p), c, 0)
        }
        "mass" => {
            let p = ferrofem_physics::Mass::new(dim, 1).map_err(err)?;
            let c = Physics::<f64>::cuda(&p);
            (Box::new(p), c, 0)
        }
        "screened-poisson" => {
            let p = ferrofem_physics::ScreenedPoisson::new(dim, 2.5, None).map_err(err)?;
            let c = Physics::<f64>::cuda(&p);
            (Box::new(p), c, 0)
        }
        "nonlinear" => {
            let p = NonlinearDiffusion::new(dim, None).map_err(err)?;
            let c = Physics::<f64>::cuda(&p);
            (Box::new(p), c, 0)
        }
        other => {
            return Err(GpuError::Unsupported(format!(
                "unknown residual physics '{other}'"
            )))
        }
    })
}

/// One residual configuration of the GPU tests and benchmarks.
#[derive(Clone, Debug)]
pub struct ResidualCase {
    /// Physics name for [`case_physics`].
    pub physics: &'static str,
    /// Dimension.
    pub dim: usize,
    /// Polynomial order.
    pub order: usize,
    /// Quadrature degree.
    pub qdegree: usize,
    /// Single precision.
    pub f32: bool,
    /// Jacobian action instead of residual.
    pub jacobian: bool,
    /// Kernel configuration.
    pub cfg: ResidualConfig,
}

/// The benchmark's default quadrature degree: `2(p - 1)` plus the coefficient's order.
pub fn bench_qdegree(physics: &str, order: usize) -> usize {
    2 * (order - 1) + usize::from(physics == "poisson-varcoef" || physics == "poisson-varcoef-p1")
}

/// Candidates of the launch-parameter autotuner: (blocks per batch, batches, threads per
/// cell, 0 meaning one per component). The one-thread-per-cell shapes are for
/// vector-valued physics only (for scalar physics they equal the default).
pub const AUTOTUNE_CANDIDATES: [(usize, usize, usize); 13] = [
    (1, 4, 0),
    (4, 4, 0),
    (8, 1, 0),
    (8, 4, 0),
    (16, 4, 0),
    (32, 1, 0),
    (32, 4, 0),
    (64, 4, 0),
    (8, 4, 1),
    (16, 4, 1),
    (32, 1, 1),
    (32, 4, 1),
    (64, 4, 1),
];

/// Every configuration the GPU tests and benchmarks use (the CI compile list).
pub fn tested_cases() -> Vec<ResidualCase> {
    let mut v = Vec::new();
    let base = ResidualConfig::new();
    for physics in [
        "poisson",
        "poisson-varcoef-p1",
        "poisson-varcoef-p0",
        "elasticity",
        "poisson-forced",
        "elasticity-forced",
    ] {
        for dim in [2, 3] {
            for order in [1, 2] {
                let mut qs = vec![bench_qdegree(physics, order), 2 * order];
                qs.dedup();
                for qdegree in qs {
                    let mut push = |f32: bool, jacobian: bool, cfg: ResidualConfig| {
                        v.push(ResidualCase {
                            physics,
                            dim,
                            order,
                            qdegree,
                            f32,
                            jacobian,
                            cfg,
                        })
                    };
                    for f32 in [false, true] {
                        for output in [
                            Output::ElementVectors,
                            Output::GlobalAtomic,
                            Output::GlobalColored,
                        ] {
                            for geometry in [GeometrySource::Stored, GeometrySource::OnTheFly] {
                                push(
                                    f32,
                                    false,
                                    ResidualConfig {
                                        output,
                                        geometry,
                                        ..base
                                    },
                                );
                            }
                        }
                        for strategy in [Strategy::ThreadPerCell, Strategy::ThreadPerBasis] {
                            for output in [Output::ElementVectors, Output::GlobalAtomic] {
                                push(
                                    f32,
                                    false,
                                    ResidualConfig {
                                        strategy,
                                        output,
                                        ..base
                                    },
                                );
                            }
                        }
                    }
                    push(false, true, base);
                }
            }
        }
    }
    for dim in [2, 3] {
        for order in [1, 2] {
            for jacobian in [false, true] {
                v.push(ResidualCase {
                    physics: "nonlinear",
                    dim,
                    order,
                    qdegree: 2 * order,
                    f32: false,
                    jacobian,
                    cfg: base,
                });
            }
        }
    }
    // autotuner candidates for the headline benchmark classes (P1, bench quadrature)
    for physics in ["poisson-varcoef-p1", "elasticity"] {
        for dim in [2, 3] {
            for f32 in [false, true] {
                for output in [Output::ElementVectors, Output::GlobalAtomic] {
                    for (blocks_per_batch, batches, threads_per_cell) in AUTOTUNE_CANDIDATES {
                        if threads_per_cell != 0 && physics != "elasticity" {
                            continue;
                        }
                        v.push(ResidualCase {
                            physics,
                            dim,
                            order: 1,
                            qdegree: bench_qdegree(physics, 1),
                            f32,
                            jacobian: false,
                            cfg: ResidualConfig {
                                output,
                                blocks_per_batch,
                                batches,
                                threads_per_cell,
                                ..base
                            },
                        });
                    }
                }
            }
        }
    }
    v
}

impl ResidualCase {
    /// The kernel specialisation of this case.
    pub fn kernel(&self) -> Result<ResidualKernel, GpuError> {
        let (_, cuda, aux) = case_physics(self.physics, self.dim)?;
        let ct = if self.dim == 2 {
            ferrofem_base::CellType::Triangle
        } else {
            ferrofem_base::CellType::Tetrahedron
        };
        let el = LagrangeElement::new(ct, self.order)
            .map_err(|e| GpuError::Unsupported(e.to_string()))?;
        let rule = QuadratureRule::for_degree(ct, self.qdegree)
            .map_err(|e| GpuError::Unsupported(e.to_string()))?;
        if self.f32 {
            residual_kernel::<f32>(&cuda, &el, &rule, aux, self.jacobian, self.cfg)
        } else {
            residual_kernel::<f64>(&cuda, &el, &rule, aux, self.jacobian, self.cfg)
        }
    }
}

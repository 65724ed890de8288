//! A problem file solved over several ranks (`mpirun -np N ferrofem solve FILE.toml`):
//! rank 0 loads the mesh, partitions it and hands every rank its part
//! ([`ferrofem_dist::scatter_parts`]); every rank reads the same file and sets the problem
//! up on its own cells; the Krylov solver of the serial command runs on the distributed
//! space ([`DistSpace`]: the operator's sums exchanged at shared nodes, dot products over
//! the owned ones); the derived fields, integrals and probes are combined across the
//! ranks, every rank writes its piece of the solution's `.pvtu` and rank 0 the rest.
//!
//! The matrix-free Krylov solves of linear problems (CG, PCG, GMRES with Jacobi or
//! Chebyshev–Jacobi) run on CPU ranks, or on one GPU per rank where the serial GPU solve
//! has a matrix-free kernel for the case (the interface sums through the device halo); a
//! direct or assembled solve and the nonlinear problem are refused with what to use
//! instead.

use crate::backend::{select_for_rank, Backend, BackendArg};
use crate::cpu::WithRobin;
use crate::file::ProblemFile;
use crate::krylov::{krylov_name, krylov_options, run_krylov};
use crate::pipeline_error::PipelineError;
use crate::policy::{accept_accuracy_limit, tolerance_warning};
use crate::post::{
    boundary_integrals_with, derived_fields_with, locate_probes_with, probe_values_with,
    region_integrals_with, write_probes_csv, BoundaryIntegral, DerivedField, Reduction,
    RegionIntegral,
};
use crate::problem::{FormVisitor, Problem};
use crate::report::{ResidualReport, SolveReport, Timings};
use crate::settings::{OperatorKind, Precision, Preconditioner, SolverKind};
use ferrofem_base::Real;
use ferrofem_dist::{scatter_parts, Communicator, DistSpace, LocalPart, NodeInterface};
use ferrofem_io::{write_space_pvtu, write_space_vtu_piece, Encoding};
use ferrofem_operator::FormOperator;
use ferrofem_physics::{ModelKind, Physics};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// What the command line sets over the file's `[solver]` and `[output]`.
#[derive(Clone, Debug, Default)]
pub struct SolveOverrides {
    /// `--solver`.
    pub solver: Option<SolverKind>,
    /// `--rtol`.
    pub rtol: Option<f64>,
    /// `--max-iter`.
    pub max_iter: Option<usize>,
    /// `--operator`.
    pub operator: Option<OperatorKind>,
    /// `--preconditioner`.
    pub preconditioner: Option<Preconditioner>,
    /// `--backend`.
    pub backend: Option<BackendArg>,
    /// `--output` (the solution's file; on ranks a `.pvtu` of that stem).
    pub vtu: Option<PathBuf>,
}

/// A problem file solved over the ranks: what every rank returns (the same on all).
#[derive(Clone, Debug)]
pub struct RanksSolution {
    /// The whole run's report: the whole mesh's counts, the slowest rank's times.
    pub report: SolveReport,
    /// The mesh's dimension.
    pub dim: usize,
    /// Where the mesh came from.
    pub origin: String,
    /// Where the ranks solved: `cpu` or `cuda` (one GPU per rank).
    pub backend: &'static str,
    /// Why the run is where it is (`auto` fell back to the CPU).
    pub backend_note: Option<String>,
    /// The regions' measures and `∫u`.
    pub regions: Vec<RegionIntegral>,
    /// The facet groups' measures, fluxes and reactions.
    pub boundaries: Vec<BoundaryIntegral>,
    /// Every probe point: name, point, values of `probe_columns`.
    pub probes: Vec<(String, [f64; 3], Vec<f64>)>,
    /// The probes' columns (`u`, then the derived fields' components).
    pub probe_columns: Vec<String>,
    /// The names of the fields written (the solution, then the derived ones).
    pub fields: Vec<&'static str>,
    /// The `.pvtu` of the solution, if written.
    pub vtu: Option<PathBuf>,
    /// The probes' CSV, if written.
    pub probes_file: Option<PathBuf>,
}

/// Solves the problem of `file` with its cells split over the ranks of `shared`, with
/// `overrides` over the file's settings. Collective: every rank calls it.
///
/// `cuda` solves on every rank's GPU (its machine's GPU number `node rank mod GPUs`);
/// `auto` solves on the CPU ranks and says so (the GPU ranks' solves converge, to the
/// serial solution, in more iterations than the serial GPU solve: docs/distribution.md).
pub fn solve_file_on_ranks<C: Communicator + Send + Sync + 'static>(
    shared: &Arc<C>,
    file: &ProblemFile,
    overrides: &SolveOverrides,
) -> Result<RanksSolution, PipelineError> {
    let comm: &C = shared;
    let start = Instant::now();
    let def = file.definition()?;
    let mut settings = def.settings.clone();
    settings.solver = overrides.solver.or(settings.solver);
    settings.rtol = overrides.rtol.or(settings.rtol);
    settings.max_iter = overrides.max_iter.unwrap_or(settings.max_iter);
    settings.operator = overrides.operator.unwrap_or(settings.operator);
    settings.preconditioner = overrides.preconditioner.unwrap_or(settings.preconditioner);
    // `auto` solves on the CPU ranks while the GPU ranks take more iterations than the
    // serial GPU solve (docs/distribution.md); `cuda` asks for them
    let (requested, mut backend_note) = match overrides.backend.unwrap_or(def.backend) {
        BackendArg::Auto => (
            BackendArg::Cpu,
            Some(
                "on several ranks `auto` solves on the CPU; --backend cuda solves on the \
                 ranks' GPUs"
                    .to_string(),
            ),
        ),
        b => (b, None),
    };
    if def.kind == ModelKind::NonlinearDiffusion {
        return Err(PipelineError::Unsupported(format!(
            "the {} problem is solved on one rank (its Newton solve is not distributed)",
            def.kind_name
        )));
    }
    let solver = settings.solver.unwrap_or(SolverKind::Pcg);
    if solver == SolverKind::Direct {
        return Err(PipelineError::Unsupported(
            "--solver direct factors the whole matrix on one rank; on several ranks use \
             pcg, cg or gmres"
                .into(),
        ));
    }
    if settings.operator == OperatorKind::Assembled {
        return Err(PipelineError::Unsupported(
            "on several ranks the operator is matrix-free (--operator assembled needs the \
             whole matrix on one rank)"
                .into(),
        ));
    }
    // every rank opens its machine's GPU of its place there (or fails saying why)
    let backend = select_for_rank(requested, comm.node_rank())?;
    let mut outputs = def.outputs.clone();
    if overrides.vtu.is_some() {
        outputs.vtu = overrides.vtu.clone();
    }
    let pvtu = outputs.vtu.as_ref().map(|p| p.with_extension("pvtu"));
    if comm.rank() == 0 {
        // the output directories exist before any rank writes its piece (the others wait
        // for their part meanwhile)
        for path in [&pvtu, &outputs.probes].into_iter().flatten() {
            create_parent(path)?;
        }
    }

    let (part, origin, cells) = if comm.rank() == 0 {
        let loaded = def.mesh.load()?;
        let part = scatter_parts(comm, Some(&loaded.mesh))?;
        (part, loaded.origin, loaded.mesh.num_cells())
    } else {
        (scatter_parts(comm, None)?, String::new(), 0)
    };
    let part = Arc::new(part);
    let mesh = &part.mesh;
    let (problem, pending) = file.setup_on_part(mesh, &def)?;
    // an error a part raises alone may be another part's business (a group only other
    // ranks' cells touch); it stands where every rank raises it
    for error in pending {
        let everywhere = comm
            .gather_all(u32::from(error.is_some()))?
            .iter()
            .all(|&f| f != 0);
        if let (true, Some(e)) = (everywhere, error) {
            return Err(e);
        }
    }
    let interface = NodeInterface::new(comm, &part, &problem.space)?;
    let setup = start.elapsed().as_secs_f64();

    let visitor = PartSolve {
        shared,
        part: &part,
        interface: &interface,
        problem: &problem,
        solver,
        settings: &settings,
        backend: &backend,
    };
    let solved = match settings.precision {
        Precision::F64 => problem.visit_form::<f64, _>(mesh, visitor)?,
        Precision::F32 => problem.visit_form::<f32, _>(mesh, visitor)?,
    };
    let u = &solved.u;
    if let Some(why) = backend.fallback_note() {
        backend_note = Some(why);
    }

    let t = Instant::now();
    let reduction = PartReduction {
        comm,
        interface: &interface,
    };
    let model = problem.model().ok_or_else(|| {
        PipelineError::Unsupported("a problem file's problem without its model".into())
    })?;
    let fields = derived_fields_with(mesh, &problem.space, model, u, &reduction)?;
    let regions = region_integrals_with(mesh, &problem, u, &reduction)?;
    let boundaries = boundary_integrals_with(mesh, &problem, u, &reduction)?;
    let specs = file.probes(mesh.dim())?;
    let located = locate_probes_with(mesh, &specs, &reduction)?;
    let (probe_columns, rows) =
        probe_values_with(&problem.space, u, &fields, &located, &reduction)?;
    if let (0, Some(path)) = (comm.rank(), &outputs.probes) {
        write_probes_csv(path, mesh.dim(), &located, &probe_columns, &rows)?;
    }
    let probes: Vec<(String, [f64; 3], Vec<f64>)> = located
        .iter()
        .zip(rows)
        .map(|(p, row)| (p.name.clone(), p.x, row))
        .collect();
    if let Some(pvtu) = &pvtu {
        write_pieces(comm, &part, &problem, u, &fields, pvtu)?;
    }
    let output = t.elapsed().as_secs_f64();

    // the whole mesh's counts (each vertex and dof counted on its owner) and the slowest
    // rank's times
    let owned_nodes = (0..problem.space.num_nodes())
        .filter(|&n| interface.is_owned(n))
        .count();
    let ncomp = problem.space.ncomp();
    let constrained = solved
        .constrained
        .iter()
        .filter(|&&d| interface.is_owned(d as usize / ncomp))
        .count();
    // the part's natural facets on the boundary of the whole mesh (not its interfaces)
    let natural_facets = {
        let mut outer = part.boundary_facets.clone();
        outer.sort_unstable();
        problem
            .natural_facets
            .iter()
            .filter(|f| outer.binary_search(f).is_ok())
            .count()
    };
    let total = |v: usize| comm.sum(v as f64).map(|s| s as usize);
    let slowest = |s: f64| comm.min(-s).map(|m| -m);
    let dofs = total(owned_nodes * ncomp)?;
    let report = SolveReport {
        problem: problem.name().to_string(),
        order: problem.order(),
        precision: settings.precision.name(),
        cell_type: mesh.cell_type().name(),
        cells: total(cells)?,
        vertices: total(part.owned_vertices())?,
        dofs,
        free_dofs: dofs - total(constrained)?,
        dirichlet: problem.dirichlet_description(),
        natural_facets: total(natural_facets)?,
        solver: solver.name(),
        method: solved.method,
        iterations: solved.iterations,
        newton: None,
        residual: solved.residual,
        timings: Timings {
            setup: slowest(setup + solved.setup)?,
            assembly: slowest(solved.assembly)?,
            solve: slowest(solved.solve)?,
            output: slowest(output)?,
            total: slowest(start.elapsed().as_secs_f64())?,
            ..Timings::default()
        },
        errors: None,
        warnings: solved.warnings,
    };
    Ok(RanksSolution {
        report,
        dim: mesh.dim(),
        origin,
        backend: if backend.is_gpu() { "cuda" } else { "cpu" },
        backend_note,
        regions,
        boundaries,
        probes,
        probe_columns,
        fields: std::iter::once("u")
            .chain(fields.iter().map(|f| f.name))
            .collect(),
        vtu: pvtu,
        probes_file: outputs.probes.clone(),
    })
}

/// Makes the directory `path` is to be written in.
fn create_parent(path: &Path) -> Result<(), PipelineError> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => std::fs::create_dir_all(dir).map_err(|e| {
            PipelineError::Unsupported(format!("cannot create {}: {e}", dir.display()))
        }),
        None => Ok(()),
    }
}

/// Writes this rank's piece `<stem>_p<rank>.vtu` of the solution and its derived fields
/// beside `pvtu`, and on rank 0 the `.pvtu` over the pieces.
fn write_pieces<C: Communicator>(
    comm: &C,
    part: &LocalPart,
    problem: &Problem,
    u: &[f64],
    fields: &[DerivedField],
    pvtu: &Path,
) -> Result<(), PipelineError> {
    let stem = pvtu
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let piece = |r: usize| pvtu.with_file_name(format!("{stem}_p{r}.vtu"));
    let mut data: Vec<(&str, &[f64])> = vec![("u", u)];
    data.extend(fields.iter().map(|f| (f.name, &f.values[..])));
    write_space_vtu_piece(
        piece(comm.rank()),
        &part.mesh,
        &problem.space,
        &data,
        &part.cell_global,
        Encoding::Binary,
    )?;
    if comm.rank() == 0 {
        let pieces: Vec<String> = (0..comm.size())
            .map(|r| {
                piece(r)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            })
            .collect();
        let mut names: Vec<(&str, usize)> = vec![("u", problem.space.ncomp())];
        names.extend(fields.iter().map(|f| (f.name, f.ncomp)));
        write_space_pvtu(pvtu, &pieces, &names)?;
    }
    Ok(())
}

/// The post-processing's sums over the ranks of a part: shared nodes through the node
/// interface, one value per rank through the communicator, each added in rank order.
struct PartReduction<'a, C> {
    comm: &'a C,
    interface: &'a NodeInterface,
}

impl<C: Communicator> Reduction for PartReduction<'_, C> {
    fn sum_shared(&self, values: &mut [f64], ncomp: usize) -> Result<(), PipelineError> {
        Ok(self.interface.sum_shared(self.comm, values, ncomp)?)
    }
    fn counts_node(&self, node: usize) -> bool {
        self.interface.is_owned(node)
    }
    fn sum_ranks(&self, values: &mut [f64]) -> Result<(), PipelineError> {
        for v in values {
            *v = self.comm.sum(*v)?;
        }
        Ok(())
    }
    fn union_tags(&self, tags: Vec<i32>) -> Result<Vec<i32>, PipelineError> {
        let longest = self
            .comm
            .gather_all(tags.len() as u64)?
            .into_iter()
            .max()
            .unwrap_or(0);
        let mut all = Vec::new();
        for k in 0..longest as usize {
            let word = tags.get(k).map_or(u64::MAX, |&t| u64::from(t as u32));
            all.extend(
                self.comm
                    .gather_all(word)?
                    .into_iter()
                    .filter(|&w| w != u64::MAX)
                    .map(|w| w as u32 as i32),
            );
        }
        all.sort_unstable();
        all.dedup();
        Ok(all)
    }
    fn first_rank_with(&self, found: bool) -> Result<Option<usize>, PipelineError> {
        Ok(self.comm.first_rank_with(found)?)
    }
    fn rank(&self) -> usize {
        self.comm.rank()
    }
}

/// What a rank's solve gives back.
struct PartSolved {
    /// The solution on the part's nodes (consistent across holders).
    u: Vec<f64>,
    /// The local dofs constrained on any holder.
    constrained: Vec<u32>,
    method: String,
    iterations: usize,
    residual: ResidualReport,
    warnings: Vec<String>,
    setup: f64,
    assembly: f64,
    solve: f64,
}

/// The Krylov solve of a part's linear problem on the distributed space.
struct PartSolve<'a, C> {
    shared: &'a Arc<C>,
    part: &'a Arc<LocalPart>,
    interface: &'a NodeInterface,
    problem: &'a Problem,
    solver: SolverKind,
    settings: &'a crate::settings::SolveSettings,
    /// Every rank's GPU, or the CPU on every rank.
    backend: &'a Backend,
}

impl<T: Real + ferrofem_dist::Payload, C: Communicator + Send + Sync + 'static> FormVisitor<T>
    for PartSolve<'_, C>
{
    type Output = PartSolved;
    fn visit<P: Physics<T>>(self, op: FormOperator<T, P>) -> Result<PartSolved, PipelineError> {
        let problem = self.problem;
        let comm: &C = self.shared;
        let ncomp = problem.space.ncomp();
        let t = Instant::now();
        let local = WithRobin {
            op: op.linearize(&[]),
            robin: problem.robin::<T>(),
        };
        let space = DistSpace::new(comm, self.interface, local, ncomp, &problem.dirichlet_dofs)?;
        let g: Vec<T> = consistent_boundary_values(comm, self.interface, problem)?
            .iter()
            .map(|&v| T::of(v))
            .collect();
        // the load of the part's cells and facets: F = −r(0) plus the natural boundary's
        let n = problem.num_dofs();
        let mut load = vec![T::zero(); n];
        op.residual(&vec![T::zero(); n], &mut load);
        let natural = problem
            .model()
            .map(|m| m.natural_load.as_slice())
            .unwrap_or(&[]);
        for (i, l) in load.iter_mut().enumerate() {
            *l = natural.get(i).map_or(T::zero(), |&v| T::of(v)) - *l;
        }
        let b = space.lift(&load, &g)?;
        let setup = t.elapsed().as_secs_f64();
        #[cfg(feature = "cuda")]
        if let Backend::Cuda(dev) = self.backend {
            let s = self.on_gpu(dev, &op, &b, space.constrained_dofs())?;
            let mut x: Vec<T> = s.w.iter().map(|&v| T::of(v)).collect();
            space.add_boundary_values(&mut x, &g)?;
            return Ok(PartSolved {
                u: x.iter().map(|v| v.as_f64()).collect(),
                constrained: space.constrained_dofs().to_vec(),
                method: s.method,
                iterations: s.stats.iterations,
                residual: ResidualReport::of_krylov(&s.stats),
                warnings: tolerance_warning::<T>(self.settings.rtol())
                    .into_iter()
                    .chain(s.warnings)
                    .collect(),
                setup,
                assembly: s.build,
                solve: s.solve,
            });
        }
        #[cfg(not(feature = "cuda"))]
        let _ = (self.backend, self.part);
        let preconditioned = matches!(self.solver, SolverKind::Pcg | SolverKind::Gmres);
        let space = if preconditioned {
            space.with_jacobi()?
        } else {
            space
        };
        let t = Instant::now();
        let mut x = vec![T::zero(); n];
        let opts = krylov_options(self.settings);
        let result = run_krylov(
            &space,
            self.solver,
            self.settings.preconditioner,
            &b,
            &mut x,
            &opts,
        );
        let mut warnings: Vec<String> = tolerance_warning::<T>(self.settings.rtol())
            .into_iter()
            .collect();
        let stats = accept_accuracy_limit(result, &mut warnings)?;
        space.add_boundary_values(&mut x, &g)?;
        let solve = t.elapsed().as_secs_f64();
        Ok(PartSolved {
            u: x.iter().map(|v| v.as_f64()).collect(),
            constrained: space.constrained_dofs().to_vec(),
            method: format!(
                "matrix-free Jacobian action on {} ranks, {}",
                comm.size(),
                krylov_name(self.solver, self.settings.preconditioner, None)
            ),
            iterations: stats.iterations,
            residual: ResidualReport::of_krylov(&stats),
            warnings,
            setup,
            assembly: 0.0,
            solve,
        })
    }
}

#[cfg(feature = "cuda")]
impl<C: Communicator + Send + Sync + 'static> PartSolve<'_, C> {
    /// The part's system `b` (lifted, consistent) solved on `dev` for the correction
    /// (see [`crate::gpu::solve_part_gpu`]). Collective.
    fn on_gpu<T: Real, P: Physics<T>>(
        &self,
        dev: &Arc<ferrofem_cuda::GpuDevice>,
        op: &FormOperator<T, P>,
        b: &[T],
        constrained: &[u32],
    ) -> Result<crate::gpu::PartGpuSolve, PipelineError> {
        use ferrofem_wave::{NodeExchange, WavePart};
        let partition = ferrofem_dist::WavePartition::new(self.shared.clone(), self.part.clone())?;
        let exchange: Arc<dyn NodeExchange> = Arc::from(partition.connect(&self.problem.space)?);
        let b: Vec<f64> = b.iter().map(|v| v.as_f64()).collect();
        let system = crate::gpu::PartSystem {
            exchange: &exchange,
            b: &b,
            constrained,
        };
        crate::gpu::solve_part_gpu(
            dev,
            &self.part.mesh,
            self.problem,
            (self.settings, self.solver),
            op,
            &system,
        )
    }
}

/// The Dirichlet values at every local dof constrained on any holder, the same on every
/// holder: where several boundary conditions constrain a dof, the last in the file wins,
/// as in the serial set-up, whichever rank's facets carry it.
fn consistent_boundary_values<C: Communicator>(
    comm: &C,
    interface: &NodeInterface,
    problem: &Problem,
) -> Result<Vec<f64>, PipelineError> {
    let n = problem.num_dofs();
    let ncomp = problem.space.ncomp();
    let boundaries = problem
        .model()
        .map(|m| m.boundaries.as_slice())
        .unwrap_or(&[]);
    // the last condition constraining each dof here
    let mut last: Vec<Option<usize>> = vec![None; n];
    for (k, b) in boundaries.iter().enumerate() {
        for &d in &b.dofs {
            last[d as usize] = Some(k);
        }
    }
    let mut g = vec![0.0; n];
    // per condition, the holders that constrain by it and the sum of their values
    let mut pair = vec![0.0; 2 * n];
    for k in 0..boundaries.len() {
        for (d, l) in last.iter().enumerate() {
            let mine = *l == Some(k);
            pair[2 * d] = if mine { 1.0 } else { 0.0 };
            pair[2 * d + 1] = if mine {
                problem.boundary_values[d]
            } else {
                0.0
            };
        }
        interface.sum_shared(comm, &mut pair, 2 * ncomp)?;
        for d in 0..n {
            if pair[2 * d] > 0.0 {
                g[d] = pair[2 * d + 1] / pair[2 * d];
            }
        }
    }
    Ok(g)
}

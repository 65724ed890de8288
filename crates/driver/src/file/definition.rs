//! What a problem file asks for, before its mesh is loaded ([`FileDefinition`]), and the
//! whole case set up on the mesh ([`FileCase`]).

use super::conditions::ProbeSpec;
use super::ProblemFile;
use crate::backend::BackendArg;
use crate::mesh_input::{LoadedMesh, MeshInput, MeshOrigin, Reorder};
use crate::model_setup::{ModelInput, PendingErrors};
use crate::pipeline_error::PipelineError;
use crate::problem::Problem;
use crate::settings::{OperatorKind, Precision, Preconditioner, SolveSettings, SolverKind};
use ferrofem_physics::ModelKind;
use std::path::PathBuf;

/// Where the results go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outputs {
    /// The VTU file of the solution and its derived fields.
    pub vtu: Option<PathBuf>,
    /// The CSV file of the probes.
    pub probes: Option<PathBuf>,
}

/// The parts of a problem file that need no mesh: checked before the mesh is loaded.
#[derive(Clone, Debug)]
pub struct FileDefinition {
    /// The mesh to load.
    pub mesh: MeshInput,
    /// Polynomial order.
    pub order: usize,
    /// The problem kind as written (`poisson`, `screened-poisson`, ...).
    pub kind_name: String,
    /// The equation.
    pub kind: ModelKind,
    /// The file's named constants.
    pub constants: Vec<(String, f64)>,
    /// How to solve.
    pub settings: SolveSettings,
    /// Where to solve.
    pub backend: BackendArg,
    /// Output files.
    pub outputs: Outputs,
}

/// A problem file set up: the mesh, the problem on it, and how to solve and report it.
pub struct FileCase {
    /// The loaded mesh.
    pub mesh: LoadedMesh,
    /// The problem (space, boundary conditions, physics).
    pub problem: Problem,
    /// How to solve.
    pub settings: SolveSettings,
    /// Where to solve.
    pub backend: BackendArg,
    /// Output files.
    pub outputs: Outputs,
    /// Probes.
    pub probes: Vec<ProbeSpec>,
}

impl ProblemFile {
    /// The file's settings that need no mesh.
    pub fn definition(&self) -> Result<FileDefinition, PipelineError> {
        let s = &self.spec;
        let m = &s.mesh;
        let mesh = self.mesh_input()?;
        let order = *m.order.get_ref();
        if order == 0 || order > 15 {
            return Err(self.error(
                &m.order.span(),
                "[mesh] order: continuous Lagrange elements of order 1 to 15",
            ));
        }
        let p = &s.problem;
        let kind_name = p.kind.get_ref().clone();
        let plane_stress = match &p.plane {
            None => false,
            Some(v) if v.get_ref() == "strain" => false,
            Some(v) if v.get_ref() == "stress" => true,
            Some(v) => {
                return Err(self.error(
                    &v.span(),
                    "[problem] plane: expected \"strain\" or \"stress\"",
                ))
            }
        };
        if self.is_wave() {
            return Err(self.error(
                &p.kind.span(),
                format!(
                    "[problem] kind `{kind_name}` is a wave problem: run it with `ferrofem wave`"
                ),
            ));
        }
        self.refuse_wave_keys()?;
        let kind = match kind_name.as_str() {
            "poisson" | "screened-poisson" => ModelKind::Diffusion,
            "nonlinear-diffusion" => ModelKind::NonlinearDiffusion,
            "elasticity" => ModelKind::Elasticity { plane_stress },
            other => {
                return Err(self.error(
                    &p.kind.span(),
                    format!(
                        "[problem] kind: unknown `{}` (expected poisson, screened-poisson, \
                         nonlinear-diffusion or elasticity; waves: acoustic or elastic)",
                        other.escape_debug()
                    ),
                ))
            }
        };
        if let (Some(v), false) = (&p.plane, matches!(kind, ModelKind::Elasticity { .. })) {
            return Err(self.error(&v.span(), "[problem] plane is for 2-D elasticity"));
        }
        let constants = self.constants()?;
        let sv = &s.solver;
        let solver = match &sv.kind {
            None => None,
            Some(k) => Some(match k.get_ref().as_str() {
                "pcg" => SolverKind::Pcg,
                "cg" => SolverKind::Cg,
                "gmres" => SolverKind::Gmres,
                "direct" => SolverKind::Direct,
                other => {
                    return Err(self.error(
                        &k.span(),
                        format!(
                            "[solver] kind: unknown `{}` (expected pcg, cg, gmres or direct)",
                            other.escape_debug()
                        ),
                    ))
                }
            }),
        };
        let precision = self.precision()?;
        let backend = self.backend()?;
        let rtol = match &sv.rtol {
            None => None,
            Some(r) if *r.get_ref() > 0.0 && *r.get_ref() < 1.0 => Some(*r.get_ref()),
            Some(r) => {
                return Err(self.error(&r.span(), "[solver] rtol: must lie in (0, 1)"));
            }
        };
        let max_iter = match &sv.max_iter {
            None => SolveSettings::default().max_iter,
            Some(n) if *n.get_ref() >= 1 => *n.get_ref() as usize,
            Some(n) => return Err(self.error(&n.span(), "[solver] max_iter: at least 1")),
        };
        let operator = match &sv.operator {
            None => OperatorKind::MatrixFree,
            Some(o) => match o.get_ref().as_str() {
                "matrix-free" => OperatorKind::MatrixFree,
                "assembled" => OperatorKind::Assembled,
                other => {
                    return Err(self.error(
                        &o.span(),
                        format!(
                            "[solver] operator: unknown `{}` (expected matrix-free or assembled)",
                            other.escape_debug()
                        ),
                    ))
                }
            },
        };
        let preconditioner = match &sv.preconditioner {
            None => Preconditioner::Jacobi,
            Some(o) => match o.get_ref().as_str() {
                "jacobi" => Preconditioner::Jacobi,
                "chebyshev" => Preconditioner::Chebyshev,
                other => {
                    return Err(self.error(
                        &o.span(),
                        format!(
                            "[solver] preconditioner: unknown `{}` (expected jacobi or chebyshev)",
                            other.escape_debug()
                        ),
                    ))
                }
            },
        };
        let outputs = Outputs {
            vtu: s
                .output
                .vtu
                .as_ref()
                .map(|p| self.resolve_path(p.get_ref())),
            probes: s
                .output
                .probes
                .as_ref()
                .map(|p| self.resolve_path(p.get_ref())),
        };
        if outputs.probes.is_some() && s.probe.is_empty() {
            return Err(self.error(
                &s.output.probes.as_ref().map(|p| p.span()).unwrap_or(0..0),
                "[output] probes: no [[probe]] is defined",
            ));
        }
        Ok(FileDefinition {
            mesh,
            order,
            kind_name,
            kind,
            constants,
            settings: SolveSettings {
                solver,
                precision,
                rtol,
                max_iter,
                operator,
                preconditioner,
            },
            backend,
            outputs,
        })
    }

    /// `[mesh]`'s file or box, renumbering and refinement (the order is checked by each
    /// kind of problem).
    pub(crate) fn mesh_input(&self) -> Result<MeshInput, PipelineError> {
        let m = &self.spec.mesh;
        let origin = match (&m.file, &m.box_spec) {
            (Some(f), None) => MeshOrigin::File(self.resolve_path(f.get_ref())),
            (None, Some(b)) => MeshOrigin::Box(b.get_ref().clone()),
            (Some(f), Some(_)) => {
                return Err(self.error(&f.span(), "[mesh]: give either `file` or `box`, not both"))
            }
            (None, None) => {
                return Err(self.error_at(0, "[mesh]: give a Gmsh `file` or a `box` specification"))
            }
        };
        let reorder = match &m.renumber {
            None => Reorder::None,
            Some(r) => Reorder::parse(r.get_ref()).ok_or_else(|| {
                self.error(
                    &r.span(),
                    format!(
                        "[mesh] renumber: unknown `{}` (expected none, rcm or morton)",
                        r.get_ref().escape_debug()
                    ),
                )
            })?,
        };
        let refine = m.refine.as_ref().map_or(0, |r| *r.get_ref());
        if let Some(r) = m.refine.as_ref().filter(|r| *r.get_ref() > 10) {
            return Err(self.error(&r.span(), "[mesh] refine: at most 10 levels"));
        }
        Ok(MeshInput {
            origin,
            reorder,
            refine,
        })
    }

    /// `[constants]`, each finite.
    pub(crate) fn constants(&self) -> Result<Vec<(String, f64)>, PipelineError> {
        self.spec
            .constants
            .iter()
            .map(|(k, v)| {
                if v.get_ref().is_finite() {
                    Ok((k.clone(), *v.get_ref()))
                } else {
                    Err(self.error(&v.span(), format!("[constants] {k} is not finite")))
                }
            })
            .collect()
    }

    /// `[solver] precision` (default f64).
    pub(crate) fn precision(&self) -> Result<Precision, PipelineError> {
        match self
            .spec
            .solver
            .precision
            .as_ref()
            .map(|p| (p.get_ref().as_str(), p.span()))
        {
            None | Some(("f64", _)) => Ok(Precision::F64),
            Some(("f32", _)) => Ok(Precision::F32),
            Some((_, span)) => {
                Err(self.error(&span, "[solver] precision: expected \"f64\" or \"f32\""))
            }
        }
    }

    /// `[solver] backend` (default auto).
    pub(crate) fn backend(&self) -> Result<BackendArg, PipelineError> {
        match self
            .spec
            .solver
            .backend
            .as_ref()
            .map(|b| (b.get_ref().as_str(), b.span()))
        {
            None | Some(("auto", _)) => Ok(BackendArg::Auto),
            Some(("cpu", _)) => Ok(BackendArg::Cpu),
            Some(("cuda", _)) => Ok(BackendArg::Cuda),
            Some((_, span)) => Err(self.error(
                &span,
                "[solver] backend: expected \"auto\", \"cpu\" or \"cuda\"",
            )),
        }
    }

    /// Loads the mesh and sets up the whole case: every name, expression, region and
    /// parameter is checked here, before anything is solved.
    pub fn setup(&self) -> Result<FileCase, PipelineError> {
        let def = self.definition()?;
        let mesh = def.mesh.load()?;
        let problem = self.setup_on(&mesh.mesh, &def)?;
        let probes = self.probes(mesh.mesh.dim())?;
        Ok(FileCase {
            mesh,
            problem,
            settings: def.settings.clone(),
            backend: def.backend,
            outputs: def.outputs.clone(),
            probes,
        })
    }

    /// The problem of this file on `mesh` (which `def.mesh` describes).
    pub fn setup_on(
        &self,
        mesh: &ferrofem_mesh::Mesh,
        def: &FileDefinition,
    ) -> Result<Problem, PipelineError> {
        self.model_input(mesh, def)?.setup(mesh, Some(self))
    }

    /// The problem of this file on a rank's part `mesh` of the mesh `def.mesh` describes,
    /// with the checks that need the whole mesh left to the caller
    /// ([`ModelInput::setup_on_part`](crate::model_setup::ModelInput::setup_on_part)).
    pub fn setup_on_part(
        &self,
        mesh: &ferrofem_mesh::Mesh,
        def: &FileDefinition,
    ) -> Result<(Problem, PendingErrors), PipelineError> {
        self.model_input(mesh, def)?.setup_on_part(mesh, Some(self))
    }

    /// The file's model (materials and boundary conditions checked) for `mesh`'s
    /// dimension.
    fn model_input(
        &self,
        mesh: &ferrofem_mesh::Mesh,
        def: &FileDefinition,
    ) -> Result<ModelInput, PipelineError> {
        let dim = mesh.dim();
        let materials = self.materials(def.kind, dim, &def.constants)?;
        for m in &materials {
            let has_reaction = matches!(
                &m.material,
                ferrofem_physics::Material::Diffusion { reaction, .. }
                    if reaction.constant() != Some(0.0)
            );
            match (def.kind_name.as_str(), has_reaction) {
                ("poisson", true) => {
                    return Err(self.error(
                        &m.span,
                        format!(
                            "material `{}`: `reaction` makes it kind = \"screened-poisson\"",
                            m.region
                        ),
                    ))
                }
                ("screened-poisson", false) => {
                    return Err(self.error(
                        &m.span,
                        format!(
                            "material `{}`: screened-poisson needs `reaction` (> 0)",
                            m.region
                        ),
                    ))
                }
                _ => {}
            }
        }
        let ncomp = match def.kind {
            ModelKind::Elasticity { .. } => dim,
            _ => 1,
        };
        let boundaries = self.boundaries(ncomp, dim, &def.constants)?;
        let input = ModelInput {
            name: def.kind_name.clone(),
            kind: def.kind,
            order: def.order,
            materials,
            boundaries,
        };
        Ok(input)
    }
}

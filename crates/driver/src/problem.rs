//! The problems `ferrofem solve` and `ferrofem assemble` set up: a manufactured solution
//! ([`Manufactured`]) on a mesh, its Lagrange space, the split of the boundary into a
//! Dirichlet part (values of the exact solution) and a natural part (the exact flux
//! `f1(u*, ∇u*)·n` as Neumann datum, so that the discrete solution still converges to
//! `u*`), and, for the variable-coefficient problem, the coefficient as an auxiliary field.
//!
//! The pointwise operator of a problem is built by [`Problem::visit_form`], which hands a
//! [`FormOperator`] of the problem's concrete physics type to a generic [`FormVisitor`], so
//! that the kernels stay monomorphised (no virtual call per quadrature point).

use crate::model_setup::{CasePhysics, ModelCase};
use crate::pipeline_error::PipelineError;
use clap::ValueEnum;
use ferrofem_base::{CsrMatrix, Real};
use ferrofem_mesh::Mesh;
use ferrofem_operator::{neumann_rhs, AuxField, FormOperator, FormOptions};
use ferrofem_physics::{
    varcoef_kappa, Elasticity, Manufactured, Material, ModelKind, NonlinearDiffusion, Physics,
    Poisson, PoissonVarCoef,
};
use ferrofem_space::H1Space;
use serde::Serialize;

/// Which manufactured problem to set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProblemKind {
    /// `−∇·(κ∇u) = f` with constant `κ` (`--kappa`).
    Poisson,
    /// `−∇·(κ(x)∇u) = f` with `κ(x) = 1 + sin(x + 2y [+ 3z])/2` as an auxiliary field.
    PoissonVarcoef,
    /// Linear elasticity `−∇·σ(u) = f` (vector unknown, Lamé `--lambda`, `--mu`).
    Elasticity,
    /// `−∇·((1 + u²)∇u) = f`, solved by Newton's method.
    Nonlinear,
}

impl ProblemKind {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            ProblemKind::Poisson => "poisson",
            ProblemKind::PoissonVarcoef => "poisson-varcoef",
            ProblemKind::Elasticity => "elasticity",
            ProblemKind::Nonlinear => "nonlinear",
        }
    }
}

/// How the coefficient of `poisson-varcoef` is represented.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CoefField {
    /// Nodal interpolant in the P1/Q1 space (the paper's auxiliary field).
    P1,
    /// One value per cell, `κ` at the cell's vertex average (first-order accurate).
    P0,
    /// Nodal interpolant in the solution's own space (keeps the optimal L² rate).
    Pk,
}

/// Where the Dirichlet condition is imposed.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum DirichletSpec {
    /// On the whole boundary.
    #[default]
    WholeBoundary,
    /// On the facets carrying these Gmsh physical groups of dimension `d − 1`, each given
    /// by name or by numeric ID; natural conditions everywhere else.
    Tags(Vec<String>),
}

impl DirichletSpec {
    /// Parses the `--dirichlet` list `NAME|ID,...` (empty items are ignored; an empty list
    /// means the whole boundary).
    pub fn parse_list(list: &str) -> DirichletSpec {
        let items: Vec<String> = list
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if items.is_empty() {
            DirichletSpec::WholeBoundary
        } else {
            DirichletSpec::Tags(items)
        }
    }
}

/// Everything that defines a problem (independent of how it is solved).
#[derive(Clone, Debug, PartialEq)]
pub struct ProblemOptions {
    /// The equation.
    pub kind: ProblemKind,
    /// Polynomial order of the Lagrange space.
    pub order: usize,
    /// Constant coefficient of `poisson`.
    pub kappa: f64,
    /// First Lamé parameter of `elasticity`.
    pub lambda: f64,
    /// Shear modulus of `elasticity`.
    pub mu: f64,
    /// Representation of the `poisson-varcoef` coefficient.
    pub coef: CoefField,
    /// Where Dirichlet conditions hold.
    pub dirichlet: DirichletSpec,
}

impl Default for ProblemOptions {
    /// Poisson, order 1, `κ = λ = μ = 1`, P1 coefficient, Dirichlet on the whole boundary.
    fn default() -> Self {
        ProblemOptions {
            kind: ProblemKind::Poisson,
            order: 1,
            kappa: 1.0,
            lambda: 1.0,
            mu: 1.0,
            coef: CoefField::P1,
            dirichlet: DirichletSpec::WholeBoundary,
        }
    }
}

/// The coefficient field of `poisson-varcoef`, owned by the problem.
#[derive(Clone, Debug)]
pub enum Coefficient {
    /// Nodal values in a Lagrange space on the same mesh.
    Nodal {
        /// The coefficient's space.
        space: Box<H1Space>,
        /// Its L-vector.
        values: Vec<f64>,
    },
    /// One value per cell.
    Cellwise(Vec<f64>),
}

/// A boundary group used for Dirichlet conditions: its tag and, when it has one, its name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BoundaryGroup {
    /// The Gmsh physical tag.
    pub tag: i32,
    /// The physical name, if the mesh gives one.
    pub name: Option<String>,
}

impl std::fmt::Display for BoundaryGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.name {
            // names come from the file: control characters are shown escaped
            Some(n) => write!(f, "{} ({})", n.escape_debug(), self.tag),
            None => write!(f, "{}", self.tag),
        }
    }
}

/// A manufactured problem's own data: the options, the exact solution, the coefficient
/// field and the Dirichlet groups.
#[derive(Clone, Debug)]
pub struct ManufacturedCase {
    /// The options it was built from.
    pub options: ProblemOptions,
    /// The manufactured solution (exact solution, forcing, flux).
    pub manufactured: Manufactured,
    /// The coefficient field of `poisson-varcoef`.
    pub coefficient: Option<Coefficient>,
    /// Dirichlet groups (empty when the whole boundary is Dirichlet).
    pub dirichlet_groups: Vec<BoundaryGroup>,
}

/// What defines a problem's equation and data.
#[derive(Clone, Debug)]
pub enum Definition {
    /// A built-in manufactured solution (the verification mode).
    Manufactured(Box<ManufacturedCase>),
    /// A user's model from a problem file.
    Model(Box<ModelCase>),
}

/// A problem set up on a mesh: its space, boundary split and definition.
#[derive(Clone, Debug)]
pub struct Problem {
    /// The Lagrange space of the unknown (`ncomp = dim` for elasticity).
    pub space: H1Space,
    /// Constrained dofs, sorted.
    pub dirichlet_dofs: Vec<u32>,
    /// A full L-vector holding the Dirichlet values on the constrained dofs, zero
    /// elsewhere.
    pub boundary_values: Vec<f64>,
    /// Boundary facets `(cell, local facet)` with natural (Neumann, or free) conditions.
    pub natural_facets: Vec<(u32, u8)>,
    /// The equation and its data.
    pub definition: Definition,
}

/// Largest magnitude of the manufactured solution and its gradient at a node: squares and
/// sums of squares of such values (norms, energies) stay finite in f64.
const REPRESENTABLE: f64 = 1e150;

/// Refuses a mesh on which the manufactured solution or its gradient overflows at a node
/// (every later quantity would be NaN or infinite).
fn check_representable(m: &Manufactured, space: &H1Space) -> Result<(), PipelineError> {
    let (nc, d) = (m.ncomp(), space.dim());
    let (mut val, mut grad) = ([0.0; 3], [0.0; 9]);
    for node in 0..space.num_nodes() {
        let x = space.node_coord(node);
        m.exact(x, &mut val[..nc]);
        m.exact_grad(x, &mut grad[..nc * d]);
        if let Some(&value) = val[..nc]
            .iter()
            .chain(&grad[..nc * d])
            .find(|v| v.is_nan() || v.abs() > REPRESENTABLE)
        {
            let at: Vec<String> = x.iter().map(|c| format!("{c:e}")).collect();
            return Err(PipelineError::UnrepresentableSolution {
                value,
                at: at.join(", "),
            });
        }
    }
    Ok(())
}

/// Something to do with the [`FormOperator`] of a problem, generic over its physics type.
pub trait FormVisitor<T: Real> {
    /// What the visit produces.
    type Output;
    /// Called once with the operator of the problem's physics.
    fn visit<P: Physics<T>>(self, op: FormOperator<T, P>) -> Result<Self::Output, PipelineError>;
}

impl Problem {
    /// Sets up `options` on `mesh`: validates the mesh, builds the space (failing on an
    /// order the cell type does not support), resolves the Dirichlet groups and splits the
    /// boundary, and interpolates the coefficient.
    pub fn new(mesh: &Mesh, options: &ProblemOptions) -> Result<Problem, PipelineError> {
        mesh.validate()?;
        let dim = mesh.dim();
        let manufactured = match options.kind {
            ProblemKind::Poisson => Manufactured::poisson(dim, options.kappa)?,
            ProblemKind::PoissonVarcoef => Manufactured::poisson_varcoef(dim)?,
            ProblemKind::Elasticity => Manufactured::elasticity(dim, options.lambda, options.mu)?,
            ProblemKind::Nonlinear => Manufactured::nonlinear(dim)?,
        };
        if options.order == 0 {
            return Err(PipelineError::Unsupported(
                "--order must be at least 1 (continuous Lagrange elements)".into(),
            ));
        }
        let space = H1Space::new(mesh, options.order, manufactured.ncomp())?;
        let (dirichlet_groups, nodes, natural_facets) = match &options.dirichlet {
            DirichletSpec::WholeBoundary => (Vec::new(), space.boundary_nodes(mesh)?, Vec::new()),
            DirichletSpec::Tags(items) => {
                let groups = resolve_groups(mesh, items)?;
                let tags: Vec<i32> = groups.iter().map(|g| g.tag).collect();
                let nodes = space.tagged_nodes(mesh, &tags)?;
                let natural = natural_facets(mesh, &tags)?;
                (groups, nodes, natural)
            }
        };
        let dirichlet_dofs = space.node_dofs(&nodes, None);
        let nc = space.ncomp();
        check_representable(&manufactured, &space)?;
        let mut boundary_values = vec![0.0; space.num_dofs()];
        let mut val = [0.0; 3];
        for &n in &nodes {
            manufactured.exact(space.node_coord(n as usize), &mut val[..nc]);
            let n = n as usize;
            boundary_values[n * nc..(n + 1) * nc].copy_from_slice(&val[..nc]);
        }
        let coefficient = match options.kind {
            ProblemKind::PoissonVarcoef => Some(coefficient(mesh, options)?),
            _ => None,
        };
        Ok(Problem {
            space,
            dirichlet_dofs,
            boundary_values,
            natural_facets,
            definition: Definition::Manufactured(Box::new(ManufacturedCase {
                options: options.clone(),
                manufactured,
                coefficient,
                dirichlet_groups,
            })),
        })
    }

    /// The Robin term `∫ h φ_i φ_j` of a model's Robin conditions, in `T`.
    pub fn robin<T: Real>(&self) -> Option<CsrMatrix<T>> {
        self.model()?.robin.as_ref().map(|r| r.convert())
    }

    /// The manufactured case, when this is one.
    pub fn manufactured(&self) -> Option<&ManufacturedCase> {
        match &self.definition {
            Definition::Manufactured(m) => Some(m),
            Definition::Model(_) => None,
        }
    }

    /// The problem file's model, when this is one.
    pub fn model(&self) -> Option<&ModelCase> {
        match &self.definition {
            Definition::Model(m) => Some(m),
            Definition::Manufactured(_) => None,
        }
    }

    /// The problem's name (`poisson`, `elasticity`, ...).
    pub fn name(&self) -> &str {
        match &self.definition {
            Definition::Manufactured(m) => m.options.kind.name(),
            Definition::Model(m) => &m.name,
        }
    }

    /// Polynomial order of the space.
    pub fn order(&self) -> usize {
        self.space.order()
    }

    /// The constant conductivity of a problem the bake-off diffusion kernel solves
    /// (`−∇·(κ∇u) = f` with one constant `κ`, no reaction): `Some(κ)`, else `None`.
    pub fn constant_diffusion(&self) -> Option<f64> {
        match &self.definition {
            Definition::Manufactured(m) => {
                (m.options.kind == ProblemKind::Poisson).then_some(m.options.kappa)
            }
            Definition::Model(m) => {
                let p = m.physics.configured()?;
                match (&p.kind(), p.regions()) {
                    (
                        ModelKind::Diffusion,
                        [ferrofem_physics::Region {
                            material: Material::Diffusion { kappa, reaction },
                            ..
                        }],
                    ) if reaction.constant() == Some(0.0) => kappa.constant(),
                    _ => None,
                }
            }
        }
    }

    /// Number of dofs of the space.
    pub fn num_dofs(&self) -> usize {
        self.space.num_dofs()
    }

    /// True for the linear problems (one linear solve; the nonlinear ones need Newton).
    pub fn is_linear(&self) -> bool {
        match &self.definition {
            Definition::Manufactured(m) => m.options.kind != ProblemKind::Nonlinear,
            Definition::Model(m) => m.physics.as_f64().is_linear(),
        }
    }

    /// True when the (Jacobian) matrix is symmetric, so that CG and Cholesky apply.
    pub fn is_symmetric(&self) -> bool {
        match &self.definition {
            Definition::Manufactured(m) => m.options.kind != ProblemKind::Nonlinear,
            Definition::Model(m) => m.physics.as_f64().is_symmetric(),
        }
    }

    /// Where the Dirichlet condition holds, in words ("whole boundary", "xmin (1), ymax (4)").
    pub fn dirichlet_description(&self) -> String {
        let groups: Vec<String> = match &self.definition {
            Definition::Manufactured(m) if m.dirichlet_groups.is_empty() => {
                return "whole boundary".into()
            }
            Definition::Manufactured(m) => {
                m.dirichlet_groups.iter().map(|g| g.to_string()).collect()
            }
            Definition::Model(m) => m
                .boundaries
                .iter()
                .filter(|b| matches!(b.condition, crate::file::BoundaryCondition::Dirichlet(_)))
                .map(|b| b.group.to_string())
                .collect(),
        };
        groups.join(", ")
    }

    /// The auxiliary field of the physics: the coefficient of `poisson-varcoef`, a model's
    /// region slot per cell when it has several regions, else none.
    pub fn aux(&self) -> AuxField<'_> {
        match &self.definition {
            Definition::Manufactured(m) => match &m.coefficient {
                None => AuxField::None,
                Some(Coefficient::Nodal { space, values }) => AuxField::Nodal { space, values },
                Some(Coefficient::Cellwise(values)) => AuxField::Cellwise { ncomp: 1, values },
            },
            Definition::Model(m) if m.cell_slots.is_empty() => AuxField::None,
            Definition::Model(m) => AuxField::Cellwise {
                ncomp: 1,
                values: &m.cell_slots,
            },
        }
    }

    /// The natural-boundary load: for a manufactured problem `∫_Γ φ · (f1(u*, ∇u*)·n)` over
    /// the natural facets (zero when the whole boundary is Dirichlet), for a model the
    /// Neumann data of its boundary conditions.
    pub fn neumann_load(&self, mesh: &Mesh) -> Result<Vec<f64>, PipelineError> {
        let m = match &self.definition {
            Definition::Model(model) => return Ok(model.natural_load.clone()),
            Definition::Manufactured(m) => m.manufactured,
        };
        if self.natural_facets.is_empty() {
            return Ok(vec![0.0; self.num_dofs()]);
        }
        Ok(neumann_rhs(
            mesh,
            &self.space,
            &self.natural_facets,
            |x, n, out| m.flux(x, n, out),
            2 * self.space.order() + 2,
        )?)
    }

    /// The interpolant of the exact solution in the problem's space (manufactured
    /// problems; for output).
    pub fn exact_interpolant(&self) -> Option<Vec<f64>> {
        let m = self.manufactured()?.manufactured;
        Some(self.space.interpolate(|x, out| m.exact(x, out)))
    }

    /// Builds the [`FormOperator`] of the problem's physics (with its manufactured forcing
    /// and coefficient) in precision `T` and hands it to `visitor`.
    pub fn visit_form<T: Real, V: FormVisitor<T>>(
        &self,
        mesh: &Mesh,
        visitor: V,
    ) -> Result<V::Output, PipelineError> {
        let options = FormOptions {
            aux: self.aux(),
            ..FormOptions::default()
        };
        let space = &self.space;
        let case = match &self.definition {
            Definition::Model(model) => {
                return match &model.physics {
                    CasePhysics::Configured(p) => {
                        visitor.visit(FormOperator::with_options(mesh, space, p.clone(), options)?)
                    }
                    CasePhysics::Own(p) => {
                        visitor.visit(FormOperator::with_options(mesh, space, p.clone(), options)?)
                    }
                }
            }
            Definition::Manufactured(case) => case,
        };
        let (dim, m, o) = (mesh.dim(), Some(case.manufactured), &case.options);
        match o.kind {
            ProblemKind::Poisson => visitor.visit(FormOperator::with_options(
                mesh,
                space,
                Poisson::new(dim, o.kappa, m)?,
                options,
            )?),
            ProblemKind::PoissonVarcoef => visitor.visit(FormOperator::with_options(
                mesh,
                space,
                PoissonVarCoef::new(dim, m)?,
                options,
            )?),
            ProblemKind::Elasticity => visitor.visit(FormOperator::with_options(
                mesh,
                space,
                Elasticity::new(dim, o.lambda, o.mu, m)?,
                options,
            )?),
            ProblemKind::Nonlinear => visitor.visit(FormOperator::with_options(
                mesh,
                space,
                NonlinearDiffusion::new(dim, m)?,
                options,
            )?),
        }
    }
}

/// The coefficient of `poisson-varcoef` in the representation asked for.
fn coefficient(mesh: &Mesh, options: &ProblemOptions) -> Result<Coefficient, PipelineError> {
    Ok(match options.coef {
        CoefField::P1 | CoefField::Pk => {
            let order = if options.coef == CoefField::P1 {
                1
            } else {
                options.order
            };
            let space = H1Space::new(mesh, order, 1)?;
            let values = space.interpolate(|x, out| out[0] = varcoef_kappa(x));
            Coefficient::Nodal {
                space: Box::new(space),
                values,
            }
        }
        CoefField::P0 => {
            let d = mesh.dim();
            let values = (0..mesh.num_cells())
                .map(|c| {
                    let verts = mesh.cell(c);
                    let mut x = [0.0; 3];
                    for &v in verts {
                        for (k, xk) in mesh.vertex(v as usize).iter().enumerate() {
                            x[k] += xk / verts.len() as f64;
                        }
                    }
                    varcoef_kappa(&x[..d])
                })
                .collect();
            Coefficient::Cellwise(values)
        }
    })
}

/// The facet groups (physical groups of dimension `d − 1` that tag facets of the mesh),
/// sorted by tag, with their names where the mesh has them.
pub fn facet_groups(mesh: &Mesh) -> Vec<BoundaryGroup> {
    let mut tags: Vec<i32> = mesh.facets().tags.clone();
    tags.sort_unstable();
    tags.dedup();
    tags.into_iter().map(|tag| facet_group(mesh, tag)).collect()
}

/// The facet group `tag` of `mesh`, with its physical name where the mesh has one.
pub fn facet_group(mesh: &Mesh, tag: i32) -> BoundaryGroup {
    let fd = mesh.dim() - 1;
    BoundaryGroup {
        tag,
        name: mesh
            .physical_names()
            .iter()
            .find(|n| n.dim == fd && n.tag == tag)
            .map(|n| n.name.clone()),
    }
}

/// Resolves `--dirichlet` items (names of physical groups of dimension `d − 1`, or numeric
/// IDs) to groups that tag facets of the mesh; an unknown item is an error listing the
/// groups available.
pub fn resolve_groups(mesh: &Mesh, items: &[String]) -> Result<Vec<BoundaryGroup>, PipelineError> {
    let groups = facet_groups(mesh);
    let mut out: Vec<BoundaryGroup> = Vec::new();
    for item in items {
        let found = match item.parse::<i32>() {
            Ok(id) => groups.iter().find(|g| g.tag == id),
            Err(_) => groups
                .iter()
                .find(|g| g.name.as_deref() == Some(item.as_str())),
        };
        match found {
            Some(g) => {
                if !out.contains(g) {
                    out.push(g.clone());
                }
            }
            None => {
                let available = if groups.is_empty() {
                    "the mesh has no tagged boundary facets (use the whole boundary: leave out \
                     --dirichlet)"
                        .to_string()
                } else {
                    let list: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
                    format!("available: {}", list.join(", "))
                };
                return Err(PipelineError::UnknownBoundary {
                    given: item.escape_debug().to_string(),
                    available,
                });
            }
        }
    }
    Ok(out)
}

/// The boundary facets that carry none of `dirichlet_tags`, sorted by `(cell, facet)`.
fn natural_facets(mesh: &Mesh, dirichlet_tags: &[i32]) -> Result<Vec<(u32, u8)>, PipelineError> {
    let mut dirichlet: Vec<(u32, u8)> = mesh
        .locate_tagged_facets()?
        .into_iter()
        .filter(|(_, _, t)| dirichlet_tags.contains(t))
        .map(|(c, f, _)| (c, f))
        .collect();
    dirichlet.sort_unstable();
    dirichlet.dedup();
    Ok(mesh
        .boundary_facets()
        .into_iter()
        .filter(|cf| dirichlet.binary_search(cf).is_err())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrofem_mesh::{generate_box, BoxSpec};

    #[test]
    fn dirichlet_list_parsing() {
        assert_eq!(
            DirichletSpec::parse_list(" , "),
            DirichletSpec::WholeBoundary
        );
        assert_eq!(
            DirichletSpec::parse_list("xmin, 3,"),
            DirichletSpec::Tags(vec!["xmin".into(), "3".into()])
        );
    }

    #[test]
    fn boundary_split_by_tags() {
        let mesh = generate_box(&BoxSpec::parse("quad:4x3").expect("spec")).expect("mesh");
        let options = ProblemOptions {
            kind: ProblemKind::Elasticity,
            order: 2,
            dirichlet: DirichletSpec::parse_list("xmin,xmin,1"),
            ..ProblemOptions::default()
        };
        let p = Problem::new(&mesh, &options).expect("problem");
        let case = p.manufactured().expect("manufactured");
        assert_eq!(case.dirichlet_groups.len(), 1);
        // 2·(4 + 3) boundary edges, 3 of them on xmin
        assert_eq!(p.natural_facets.len(), 14 - 3);
        // Q2: 7 nodes on xmin, 2 components each, valued by the exact solution
        assert_eq!(p.dirichlet_dofs.len(), 14);
        let nc = p.space.ncomp();
        let mut exact = [0.0; 2];
        for &d in &p.dirichlet_dofs {
            let node = d as usize / nc;
            let x = p.space.node_coord(node);
            assert!(x[0].abs() < 1e-14);
            case.manufactured.exact(x, &mut exact);
            assert_eq!(p.boundary_values[d as usize], exact[d as usize % nc]);
        }
        // the whole boundary: no natural facets, every boundary node constrained
        let whole = Problem::new(
            &mesh,
            &ProblemOptions {
                dirichlet: DirichletSpec::WholeBoundary,
                ..options
            },
        )
        .expect("problem");
        assert!(whole.natural_facets.is_empty());
        assert_eq!(whole.dirichlet_dofs.len(), 2 * 2 * (8 + 6));
    }
}

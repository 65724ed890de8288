//! The assembly configurations the GPU tests and the CI compile check share.

use super::kernel::{
    assembly_kernel, AssemblyKernel, AuxKind, Output, BLOCK_SUMS_BATCH, SHARED_LIMIT,
    SHARED_NZ_BATCH,
};
use super::GpuStrategy;
use crate::residual::case_physics;
use crate::GpuError;
use ferrofem_base::CellType;
use ferrofem_fe::{LagrangeElement, QuadratureRule};

/// One tested assembly: a physics of [`case_physics`] on cells of one type and order.
#[derive(Clone, Debug)]
pub struct AssemblyCase {
    /// Physics name for [`case_physics`].
    pub physics: &'static str,
    /// The cell type.
    pub cell: CellType,
    /// Polynomial order.
    pub order: usize,
    /// Single precision.
    pub f32: bool,
    /// The strategy.
    pub strategy: GpuStrategy,
    /// Dirichlet dofs on the whole boundary eliminated.
    pub eliminate: bool,
}

impl AssemblyCase {
    /// The quadrature rule of the CPU form operator's default (degree `2p`).
    pub fn rule(&self) -> Result<QuadratureRule, GpuError> {
        QuadratureRule::for_degree(self.cell_type(), 2 * self.order)
            .map_err(|e| GpuError::Unsupported(e.to_string()))
    }

    /// The cell type.
    pub fn cell_type(&self) -> CellType {
        self.cell
    }

    /// The dimension of the cells.
    pub fn dim(&self) -> usize {
        self.cell.dim()
    }

    /// The kernel specialisation (for the compile check).
    pub fn kernel(&self) -> Result<AssemblyKernel, GpuError> {
        let (_, cuda, aux) = case_physics(self.physics, self.dim())?;
        let el = LagrangeElement::new(self.cell_type(), self.order)
            .map_err(|e| GpuError::Unsupported(e.to_string()))?;
        let n = el.num_nodes() * cuda.ncomp;
        let aux = match aux {
            0 => AuxKind::None,
            1 => AuxKind::Nodal,
            _ => AuxKind::Cellwise,
        };
        let out = match self.strategy {
            GpuStrategy::Atomic => Output::Atomic,
            GpuStrategy::ElemColor => Output::Colored,
            GpuStrategy::GlobalNz => Output::ElementData,
            // a typical longest row: the compile check does not depend on it
            GpuStrategy::LocalRow => Output::Rows { max_row: 64 },
            // a typical block, as far as it fits: the compile check does not depend on it
            GpuStrategy::SharedNz | GpuStrategy::BlockSums => Output::SharedSums {
                emax: (SHARED_LIMIT / 2 / (n * n * if self.f32 { 4 } else { 8 })).clamp(1, 16),
                batch: if self.strategy == GpuStrategy::SharedNz {
                    SHARED_NZ_BATCH
                } else {
                    BLOCK_SUMS_BATCH
                },
            },
        };
        let rule = self.rule()?;
        if self.f32 {
            assembly_kernel::<f32>(&cuda, &el, &rule, aux, out, n * n + n)
        } else {
            assembly_kernel::<f64>(&cuda, &el, &rule, aux, out, n * n + n)
        }
    }
}

/// Every configuration the GPU assembly tests use, on each cell type: each physics with
/// each strategy at order 2, every order (P1–P5 triangles, P1–P4 tetrahedra, Q1–Q4
/// quadrilaterals and hexahedra) for Poisson and elasticity, single precision, and
/// Dirichlet elimination.
pub fn tested_cases() -> Vec<AssemblyCase> {
    const PHYSICS: [&str; 7] = [
        "poisson",
        "poisson-varcoef",
        "poisson-varcoef-p0",
        "elasticity",
        "mass",
        "screened-poisson",
        "nonlinear",
    ];
    let case = |physics, cell, order, f32, strategy, eliminate| AssemblyCase {
        physics,
        cell,
        order,
        f32,
        strategy,
        eliminate,
    };
    let mut v = Vec::new();
    for cell in [
        CellType::Triangle,
        CellType::Tetrahedron,
        CellType::Quadrilateral,
        CellType::Hexahedron,
    ] {
        for physics in PHYSICS {
            for s in GpuStrategy::ALL {
                v.push(case(physics, cell, 2, false, s, false));
            }
        }
        let top = if cell == CellType::Triangle { 5 } else { 4 };
        for order in (1..=top).filter(|&p| p != 2) {
            for physics in ["poisson", "elasticity"] {
                for s in GpuStrategy::ALL {
                    v.push(case(physics, cell, order, false, s, false));
                }
            }
        }
        for physics in ["poisson", "elasticity", "nonlinear"] {
            for s in GpuStrategy::ALL {
                v.push(case(physics, cell, 1, true, s, false));
                v.push(case(physics, cell, 2, false, s, true));
            }
        }
    }
    v
}

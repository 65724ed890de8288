//! Auxiliary fields `a` (coefficients) of a pointwise form (Knepley, Rupp & Terrel 2016,
//! §4): either nodal values of another Lagrange space on the same mesh, interpolated
//! with their gradients to the quadrature points element by element, or one constant per
//! cell (the `P0` case of the paper).

use super::kernels::{Tab, MAX_AUX};
use super::FormError;
use ferrofem_base::real::convert_slice;
use ferrofem_base::Real;
use ferrofem_fe::QuadratureRule;
use ferrofem_mesh::Mesh;
use ferrofem_space::{ElemRestriction, H1Space};

/// An auxiliary field handed to a [`FormOperator`](crate::FormOperator).
#[derive(Clone, Copy, Debug, Default)]
pub enum AuxField<'a> {
    /// No auxiliary field (the physics must read none).
    #[default]
    None,
    /// An L-vector (`values[node * ncomp + c]`) of `space`, a Lagrange space of any
    /// order on the same mesh; its components are the auxiliary fields.
    Nodal {
        /// The space of the coefficient (for example P1 for a P2 solution).
        space: &'a H1Space,
        /// Its L-vector.
        values: &'a [f64],
    },
    /// `ncomp` constants per cell, `values[cell * ncomp + c]`; gradients are zero.
    Cellwise {
        /// Components per cell.
        ncomp: usize,
        /// The values.
        values: &'a [f64],
    },
}

impl AuxField<'_> {
    /// Number of auxiliary components this field provides.
    pub fn ncomp(&self) -> usize {
        match self {
            AuxField::None => 0,
            AuxField::Nodal { space, .. } => space.ncomp(),
            AuxField::Cellwise { ncomp, .. } => *ncomp,
        }
    }
}

/// An auxiliary field converted to the kernels' scalar type.
#[derive(Clone, Debug)]
pub(crate) enum AuxData<T> {
    None,
    Cellwise {
        ncomp: usize,
        values: Vec<T>,
    },
    Nodal {
        restriction: ElemRestriction,
        values: Vec<T>,
        tab: Tab<T>,
    },
}

impl<T: Real> AuxData<T> {
    /// Checks `field` against the mesh and converts it, tabulating a nodal field's basis at
    /// the points of `rule`.
    pub fn new(
        field: &AuxField<'_>,
        mesh: &Mesh,
        rule: &QuadratureRule,
    ) -> Result<AuxData<T>, FormError> {
        let naux = field.ncomp();
        if naux > MAX_AUX {
            return Err(FormError::TooManyAux { naux, max: MAX_AUX });
        }
        Ok(match field {
            AuxField::None => AuxData::None,
            AuxField::Cellwise { ncomp, values } => {
                let expected = ncomp * mesh.num_cells();
                if values.len() != expected {
                    return Err(FormError::VectorLength {
                        what: "cellwise auxiliary field",
                        got: values.len(),
                        expected,
                    });
                }
                AuxData::Cellwise {
                    ncomp: *ncomp,
                    values: convert_slice(values),
                }
            }
            AuxField::Nodal { space, values } => {
                if space.num_cells() != mesh.num_cells() || space.cell_type() != mesh.cell_type() {
                    return Err(FormError::MeshMismatch {
                        what: "auxiliary space",
                        got: space.num_cells(),
                        cell_type: space.cell_type(),
                        expected: mesh.num_cells(),
                        mesh_type: mesh.cell_type(),
                    });
                }
                if values.len() != space.num_dofs() {
                    return Err(FormError::VectorLength {
                        what: "nodal auxiliary field",
                        got: values.len(),
                        expected: space.num_dofs(),
                    });
                }
                AuxData::Nodal {
                    restriction: space.restriction().clone(),
                    values: convert_slice(values),
                    tab: tabulate(space.element(), rule)?,
                }
            }
        })
    }
}

/// Tabulates `element` at the points of `rule` in the scalar type `T`.
pub(crate) fn tabulate<T: Real>(
    element: &ferrofem_fe::LagrangeElement,
    rule: &QuadratureRule,
) -> Result<Tab<T>, FormError> {
    let t = element.tabulate(&rule.points)?;
    let d = t.dim;
    let mut bd = Vec::with_capacity(t.num_points * t.num_basis * (d + 1));
    for p in 0..t.num_points * t.num_basis {
        bd.push(T::of(t.values[p]));
        bd.extend(t.grads[p * d..(p + 1) * d].iter().map(|&g| T::of(g)));
    }
    Ok(Tab {
        nq: t.num_points,
        nb: t.num_basis,
        bd,
    })
}

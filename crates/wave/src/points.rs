//! Sources and receivers anywhere in the mesh: located by inverting the element map, then
//! spread onto (or interpolated from) the element's nodes with the GLL Lagrange basis.

use crate::wavelet::Wavelet;
use crate::{Medium, WaveError, WaveKind};
use ferrofem_geometry::{CellMap, PointLocator};
use ferrofem_mesh::Mesh;
use ferrofem_space::H1Space;

/// What a point source injects.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SourceKind {
    /// Acoustic monopole of strength `amplitude`: the pressure obeys
    /// `p_tt − κ ∇·(ρ⁻¹ ∇p) = amplitude · w(t) δ(x − x_s)` (in a uniform medium
    /// `p_tt − c² Δp = amplitude · w(t) δ`).
    Monopole {
        /// Strength.
        amplitude: f64,
    },
    /// Elastic point force `f w(t) δ(x − x_s)` (N; the first `d` entries).
    Force([f64; 3]),
    /// Elastic moment tensor `M` (N·m, symmetric, the first `d × d` entries): the body force
    /// `−∇·(M w(t) δ(x − x_s))`.
    Moment([[f64; 3]; 3]),
}

/// A point source.
#[derive(Clone, Debug)]
pub struct Source {
    /// Name for messages.
    pub name: String,
    /// Position (the first `d` entries).
    pub position: [f64; 3],
    /// What it injects.
    pub kind: SourceKind,
    /// Its time function.
    pub wavelet: Wavelet,
}

/// A receiver: where the field is recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct Receiver {
    /// Name (a column of the seismogram files).
    pub name: String,
    /// Position (the first `d` entries).
    pub position: [f64; 3],
}

impl Receiver {
    /// A receiver named `name` at `position`.
    pub fn new(name: impl Into<String>, position: [f64; 3]) -> Receiver {
        Receiver {
            name: name.into(),
            position,
        }
    }

    /// `count` receivers evenly spaced from `from` to `to` (both ends included when
    /// `count > 1`), named `prefix` followed by a zero-padded index.
    pub fn line(prefix: &str, from: [f64; 3], to: [f64; 3], count: usize) -> Vec<Receiver> {
        let width = count.saturating_sub(1).max(1).to_string().len();
        (0..count)
            .map(|i| {
                let s = if count > 1 {
                    i as f64 / (count - 1) as f64
                } else {
                    0.0
                };
                let x = std::array::from_fn(|a| from[a] + s * (to[a] - from[a]));
                Receiver::new(format!("{prefix}{i:0width$}"), x)
            })
            .collect()
    }
}

/// The basis of the element containing a point: its nodes, the basis values and the
/// physical gradients (`grads[i * d + k]`) there.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Stencil {
    pub cell: usize,
    pub nodes: Vec<u32>,
    pub values: Vec<f64>,
    pub grads: Vec<f64>,
}

/// Locates `x` and tabulates the scalar basis of `space` there.
pub(crate) fn stencil(
    locator: &PointLocator<'_>,
    map: &CellMap<'_>,
    space: &H1Space,
    what: &'static str,
    name: &str,
    x: &[f64; 3],
) -> Result<Stencil, WaveError> {
    let d = space.dim();
    let outside = || WaveError::Outside {
        what,
        name: name.into(),
        x: x[..d].to_vec(),
    };
    if x[..d].iter().any(|v| !v.is_finite()) {
        return Err(outside());
    }
    let loc = locator.locate(&x[..d]).ok_or_else(outside)?;
    let el = space.element();
    let nb = el.num_nodes();
    let mut values = vec![0.0; nb];
    let mut rgrads = vec![0.0; nb * d];
    el.eval(&loc.xi[..d], &mut values, &mut rgrads);
    let inv = map.jacobian(loc.cell, &loc.xi[..d])?.inverse();
    let mut grads = vec![0.0; nb * d];
    for b in 0..nb {
        for k in 0..d {
            grads[b * d + k] = (0..d).map(|a| rgrads[b * d + a] * inv[a][k]).sum();
        }
    }
    Ok(Stencil {
        cell: loc.cell,
        nodes: space.restriction().elem(loc.cell).to_vec(),
        values,
        grads,
    })
}

/// A source spread onto the dofs: `F[dof] += weight · w(t)`.
#[derive(Clone, Debug)]
pub(crate) struct PlacedSource {
    pub dofs: Vec<u32>,
    pub weights: Vec<f64>,
    pub wavelet: Wavelet,
}

/// Spreads `src` for a field of `kind` (`ncomp` components per node).
pub(crate) fn place_source(
    st: &Stencil,
    src: &Source,
    kind: WaveKind,
    mesh: &Mesh,
    medium: &Medium,
) -> Result<PlacedSource, WaveError> {
    let d = mesh.dim();
    let mut dofs = Vec::new();
    let mut weights = Vec::new();
    let wrong = |k: &str| {
        WaveError::Invalid(format!(
            "source '{}': a {k} source needs the {} solver",
            src.name,
            if kind == WaveKind::Acoustic {
                "elastic"
            } else {
                "acoustic"
            }
        ))
    };
    match (src.kind, kind) {
        (SourceKind::Monopole { amplitude }, WaveKind::Acoustic) => {
            let m = medium
                .in_cell(mesh, st.cell, &src.position)
                .ok_or_else(|| {
                    WaveError::Invalid(format!("source '{}': no material there", src.name))
                })?;
            let s = amplitude / m.kappa();
            for (&n, &phi) in st.nodes.iter().zip(&st.values) {
                if phi != 0.0 {
                    dofs.push(n);
                    weights.push(s * phi);
                }
            }
        }
        (SourceKind::Force(f), WaveKind::Elastic) => {
            for (&n, &phi) in st.nodes.iter().zip(&st.values) {
                for c in 0..d {
                    if phi != 0.0 && f[c] != 0.0 {
                        dofs.push(n * d as u32 + c as u32);
                        weights.push(f[c] * phi);
                    }
                }
            }
        }
        (SourceKind::Moment(mt), WaveKind::Elastic) => {
            for r in 0..d {
                for c in 0..r {
                    if (mt[r][c] - mt[c][r]).abs() > 1e-12 * (mt[r][c].abs() + mt[c][r].abs()) {
                        return Err(WaveError::Invalid(format!(
                            "source '{}': the moment tensor must be symmetric",
                            src.name
                        )));
                    }
                }
            }
            for (b, &n) in st.nodes.iter().enumerate() {
                for c in 0..d {
                    let w: f64 = (0..d).map(|k| mt[c][k] * st.grads[b * d + k]).sum();
                    if w != 0.0 {
                        dofs.push(n * d as u32 + c as u32);
                        weights.push(w);
                    }
                }
            }
        }
        (SourceKind::Monopole { .. }, _) => return Err(wrong("monopole")),
        (SourceKind::Force(_), _) => return Err(wrong("force")),
        (SourceKind::Moment(_), _) => return Err(wrong("moment-tensor")),
    }
    if weights.iter().any(|w| !w.is_finite()) {
        return Err(WaveError::Invalid(format!(
            "source '{}': its amplitude is not finite",
            src.name
        )));
    }
    Ok(PlacedSource {
        dofs,
        weights,
        wavelet: src.wavelet.clone(),
    })
}

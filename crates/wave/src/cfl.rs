//! The stable time step of the leapfrog: from the mesh (smallest GLL spacing of each
//! element over its largest wave speed, times a Courant number for the dimension and the
//! order), and, to check that estimate, from the largest eigenvalue of `M⁻¹K` (the exact
//! bound `dt < 2/√λ_max`).

use ferrofem_mesh::Mesh;
use ferrofem_space::H1Space;
use rayon::prelude::*;

/// The largest stable Courant number `vp dt / h_min` of the spectral-element leapfrog on
/// square (cubic) elements, for orders 1 to 10 (`h_min` the smallest GLL spacing),
/// from `λ_max(M⁻¹K)` of the acoustic operator on uniform grids (power iteration; the
/// test `courant_table_is_tight_on_uniform_grids` checks them), rounded down; 3-D is 2-D
/// times `√(2/3)`, as for the second-order wave equation on a cubic lattice.
/// Elastic operators with `vs < vp` and distorted elements are covered by the safety
/// factor [`SAFETY`].
const COURANT_2D: [f64; 10] = [
    std::f64::consts::FRAC_1_SQRT_2,
    0.5773,
    0.5910,
    0.6020,
    0.6050,
    0.6055,
    0.6052,
    0.6049,
    0.6044,
    0.6041,
];
/// The 3-D twin of [`COURANT_2D`].
const COURANT_3D: [f64; 10] = [
    0.5773, 0.4713, 0.4825, 0.4915, 0.4939, 0.4943, 0.4941, 0.4938, 0.4934, 0.4932,
];

/// The fraction of the uniform-grid limit that the stable step takes, for distorted
/// elements and the elastic operator.
pub const SAFETY: f64 = 0.8;

/// The stable step of a mesh and medium, and what sets it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StableStep {
    /// The largest step the solver accepts (s).
    pub bound: f64,
    /// The smallest GLL spacing of the element that sets it (m).
    pub h_min: f64,
    /// The largest wave speed of that element (m/s).
    pub velocity: f64,
    /// That element.
    pub elem: usize,
}

/// The Courant number the stable step uses in dimension `dim` at `order` (safety included).
pub fn courant_number(dim: usize, order: usize) -> f64 {
    let table = if dim == 2 { &COURANT_2D } else { &COURANT_3D };
    SAFETY * table[order.clamp(1, table.len()) - 1]
}

/// The stable step of `space` on `mesh` (quadrilaterals or hexahedra) with `vmax[e]` the
/// largest wave speed of element `e`. An affine element (a parallelogram or
/// parallelepiped) has its smallest spacing from its edge vectors; any other places its
/// own GLL nodes by its multilinear map, interpolated along one axis after the other from
/// its corners. Nothing global is read.
pub fn stable_step(mesh: &Mesh, space: &H1Space, vmax: &[f64]) -> StableStep {
    let d = space.dim();
    let p = space.order();
    let n = p + 1;
    let nb = space.element().num_nodes();
    // the nodes' fractions along an axis, from the first to the last (lexicographic nodes:
    // node `a` is `(a, 0, 0)`)
    let xi = |a: usize| space.element().nodes()[a * d];
    let t: Vec<f64> = (0..n).map(|a| (xi(a) - xi(0)) / (xi(p) - xi(0))).collect();
    let gap = t
        .windows(2)
        .map(|w| w[1] - w[0])
        .fold(f64::INFINITY, f64::min);
    let (ratio, h_min, velocity, elem) = (0..mesh.num_cells())
        .into_par_iter()
        .map_init(
            || (vec![[0.0f64; 3]; 4 * n + 2 * n * n], vec![[0.0f64; 3]; nb]),
            |(work, x), e| {
                // corners: the reference vertex `v` of a quadrilateral or hexahedron is
                // the corner with bit `k` of `v` set where `ξ_k = 1`
                let cell = mesh.cell(e);
                let mut corners = [[0.0; 3]; 8];
                for (v, c) in corners.iter_mut().take(1 << d).enumerate() {
                    c[..d].copy_from_slice(mesh.vertex(cell[v] as usize));
                }
                let h = match affine_edges(&corners, d) {
                    Some(shortest) => gap * shortest,
                    None => smallest_spacing(&corners, d, &t, work, x),
                };
                (h / vmax[e], h, vmax[e], e)
            },
        )
        .reduce(
            || (f64::INFINITY, 0.0, 0.0, 0),
            |a, b| {
                if b.0 < a.0 || (b.0 == a.0 && b.3 < a.3) {
                    b
                } else {
                    a
                }
            },
        );
    StableStep {
        bound: courant_number(d, p) * ratio,
        h_min,
        velocity,
        elem,
    }
}

/// The length of the shortest edge vector `x_{2^k} − x_0` of an element whose corners are
/// `x_0 + Σ_{k ∈ bits(v)} (x_{2^k} − x_0)` to rounding (an affine element), `None` for any
/// other. Between neighbouring GLL nodes along axis `k` of an affine element the distance
/// is the reference gap times that edge's length.
fn affine_edges(corners: &[[f64; 3]; 8], d: usize) -> Option<f64> {
    let edge =
        |k: usize| -> [f64; 3] { std::array::from_fn(|a| corners[1 << k][a] - corners[0][a]) };
    let norm = |v: &[f64; 3]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let edges: [[f64; 3]; 3] = std::array::from_fn(|k| if k < d { edge(k) } else { [0.0; 3] });
    let scale: f64 = edges[..d].iter().map(norm).sum();
    let tol = 1e-12 * scale;
    for (v, c) in corners.iter().enumerate().take(1 << d) {
        let predicted: [f64; 3] = std::array::from_fn(|a| {
            corners[0][a]
                + (0..d)
                    .filter(|&k| v >> k & 1 == 1)
                    .map(|k| edges[k][a])
                    .sum::<f64>()
        });
        if (0..d).any(|a| (c[a] - predicted[a]).abs() > tol) {
            return None;
        }
    }
    Some(edges[..d].iter().map(norm).fold(f64::INFINITY, f64::min))
}

/// The smallest distance between neighbouring GLL nodes (along each axis) of the element
/// with `corners`, its nodes placed by the multilinear map at the fractions `t` along each
/// axis (`work` and `x` scratch of `4n + 2n²` and `n^d` points).
fn smallest_spacing(
    corners: &[[f64; 3]; 8],
    d: usize,
    t: &[f64],
    work: &mut [[f64; 3]],
    x: &mut [[f64; 3]],
) -> f64 {
    let n = t.len();
    let lerp = |lo: &[f64; 3], hi: &[f64; 3], t: f64| -> [f64; 3] {
        std::array::from_fn(|k| (1.0 - t) * lo[k] + t * hi[k])
    };
    let (lines, planes) = work.split_at_mut(4 * n);
    // along ξ: the 2^(d-1) edges from corner `2m` to `2m + 1`
    for m in 0..1 << (d - 1) {
        let (lo, hi) = (&corners[2 * m], &corners[2 * m + 1]);
        for a in 0..n {
            lines[m * n + a] = lerp(lo, hi, t[a]);
        }
    }
    // along η: planes (3-D) or the nodes (2-D)
    let out: &mut [[f64; 3]] = if d == 3 { &mut planes[..] } else { &mut x[..] };
    let nplanes = if d == 3 { 2 } else { 1 };
    for m in 0..nplanes {
        for b in 0..n {
            for a in 0..n {
                out[(m * n + b) * n + a] =
                    lerp(&lines[(2 * m) * n + a], &lines[(2 * m + 1) * n + a], t[b]);
            }
        }
    }
    // along ζ (3-D)
    if d == 3 {
        for c in 0..n {
            for i in 0..n * n {
                x[c * n * n + i] = lerp(&planes[i], &planes[n * n + i], t[c]);
            }
        }
    }
    // (the smallest squared distance between neighbours along each axis)
    let dist2 = |i: usize, j: usize| -> f64 { (0..d).map(|k| (x[i][k] - x[j][k]).powi(2)).sum() };
    let mut h2 = f64::INFINITY;
    for c in 0..if d == 3 { n } else { 1 } {
        for b in 0..n {
            for a in 0..n {
                let i = a + n * (b + n * c);
                if a + 1 < n {
                    h2 = h2.min(dist2(i, i + 1));
                }
                if b + 1 < n {
                    h2 = h2.min(dist2(i, i + n));
                }
                if d == 3 && c + 1 < n {
                    h2 = h2.min(dist2(i, i + n * n));
                }
            }
        }
    }
    h2.sqrt()
}

/// Estimates `λ_max(M⁻¹K)` by power iteration (`apply_k(x, y)`: `y = K x`; `minv` the
/// inverse lumped mass, zero where the field is held). The estimate approaches the largest
/// eigenvalue from below; `iterations` of 100 give a few digits on meshes of any size.
pub fn max_eigenvalue(
    apply_k: &mut dyn FnMut(&[f64], &mut [f64]),
    minv: &[f64],
    iterations: usize,
) -> f64 {
    let n = minv.len();
    // a rough start: every entry alive, signs alternating pseudo-randomly
    let mut x: Vec<f64> = (0..n)
        .map(|i| {
            let h = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            (h as f64 / (1u64 << 24) as f64 - 0.5) * if minv[i] > 0.0 { 1.0 } else { 0.0 }
        })
        .collect();
    let mut y = vec![0.0; n];
    let mut lambda = 0.0;
    for _ in 0..iterations {
        apply_k(&x, &mut y);
        // y ← M⁻¹ K x; λ ≈ (xᵀ K x)/(xᵀ M x) (the Rayleigh quotient of the symmetric pencil)
        let mut xkx = 0.0;
        let mut xmx = 0.0;
        for i in 0..n {
            if minv[i] > 0.0 {
                xkx += x[i] * y[i];
                xmx += x[i] * x[i] / minv[i];
            }
            y[i] *= minv[i];
        }
        lambda = xkx / xmx;
        let norm = y.iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm == 0.0 || !norm.is_finite() {
            break;
        }
        for i in 0..n {
            x[i] = y[i] / norm;
        }
    }
    lambda
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GLL fractions along an axis at order 4 (any increasing fractions from 0 to 1 do).
    const T: [f64; 5] = [
        0.0,
        0.172_673_164_646_011_4,
        0.5,
        0.827_326_835_353_988_6,
        1.0,
    ];

    fn corners_of(d: usize, map: impl Fn([f64; 3]) -> [f64; 3]) -> [[f64; 3]; 8] {
        std::array::from_fn(|v| {
            let r = std::array::from_fn(|k| if k < d { (v >> k & 1) as f64 } else { 0.0 });
            map(r)
        })
    }

    fn full(corners: &[[f64; 3]; 8], d: usize) -> f64 {
        let n = T.len();
        let mut work = vec![[0.0; 3]; 4 * n + 2 * n * n];
        let mut x = vec![[0.0; 3]; n.pow(d as u32)];
        smallest_spacing(corners, d, &T, &mut work, &mut x)
    }

    #[test]
    fn affine_elements_take_the_edge_shortcut_with_the_same_spacing() {
        let gap = T
            .windows(2)
            .map(|w| w[1] - w[0])
            .fold(f64::INFINITY, f64::min);
        for d in [2, 3] {
            // a sheared, stretched, rotated and shifted element
            let affine = |r: [f64; 3]| -> [f64; 3] {
                [
                    10.0 + 3.0 * r[0] + 0.7 * r[1] - 0.2 * r[2],
                    -4.0 + 0.4 * r[0] + 1.3 * r[1] + 0.5 * r[2],
                    2.5 + 0.1 * r[0] - 0.3 * r[1] + 0.9 * r[2],
                ]
            };
            let c = corners_of(d, |r| {
                let x = affine(r);
                if d == 2 {
                    [x[0], x[1], 0.0]
                } else {
                    x
                }
            });
            let shortest = affine_edges(&c, d).expect("an affine element");
            let (fast, slow) = (gap * shortest, full(&c, d));
            assert!(
                (fast - slow).abs() <= 1e-13 * slow,
                "{d}-D: {fast} vs {slow}"
            );
        }
    }

    #[test]
    fn a_distorted_element_is_placed_node_by_node() {
        for d in [2, 3] {
            let mut c = corners_of(d, |r| r);
            // the far corner pulled inwards: no longer a parallelogram/parallelepiped
            let last = (1 << d) - 1;
            c[last][0] = 0.6;
            assert_eq!(affine_edges(&c, d), None, "{d}-D");
            // the spacing it gets is the smallest of the bilinear/trilinear nodes', below
            // the unit square's/cube's
            let gap = T[1] - T[0];
            assert!(full(&c, d) < gap, "{d}-D");
        }
    }
}

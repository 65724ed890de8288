//! Lagrange finite elements on reference cells and their tabulation.

use crate::{gauss_lobatto_legendre, simplex, FeError, Lagrange1D};
use ferrofem_base::CellType;

/// The topological entity of the reference cell a node belongs to: `dim` 0 vertex, 1 edge,
/// 2 face (for 2-D cells: the cell interior), 3 cell interior; `index` in the numbering of
/// [`CellType::edges`] / [`CellType::facets`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeEntity {
    /// Dimension of the entity.
    pub dim: usize,
    /// Its local index.
    pub index: usize,
}

/// Values and reference gradients of all basis functions at a set of points.
#[derive(Clone, Debug, PartialEq)]
pub struct Tabulation {
    /// Number of points.
    pub num_points: usize,
    /// Number of basis functions.
    pub num_basis: usize,
    /// Reference dimension.
    pub dim: usize,
    /// `values[q * num_basis + b]`.
    pub values: Vec<f64>,
    /// `grads[(q * num_basis + b) * dim + k]`: derivative in reference direction `k`.
    pub grads: Vec<f64>,
}

/// A scalar continuous Lagrange element of order `p`: `P_p` on triangles and tetrahedra with
/// equispaced nodes, `Q_p` on quadrilaterals and hexahedra with Gauss–Lobatto–Legendre nodes.
///
/// Node order: simplices list vertices, edge, face and interior nodes (see
/// [`NodeEntity`]); tensor cells list nodes lexicographically (first direction fastest),
/// which is the order sum factorisation works in. Each node also carries integer
/// *vertex weights*: its position as a combination of the cell's vertices (barycentric
/// lattice coordinates on simplices, products of 1-D lattice coordinates on tensor cells).
/// Two cells that share a node agree on its weights per global vertex, whatever their local
/// orientation, which is what global dof numbering uses.
#[derive(Clone, Debug)]
pub struct LagrangeElement {
    cell_type: CellType,
    order: usize,
    nodes: Vec<f64>,
    lattice: Vec<[u32; 4]>,
    weights: Vec<u32>,
    entities: Vec<NodeEntity>,
    basis_1d: Option<Lagrange1D>,
}

impl LagrangeElement {
    /// Largest order supported on each cell type.
    pub const fn max_order(cell_type: CellType) -> usize {
        match cell_type {
            CellType::Triangle => 6,
            CellType::Tetrahedron => 4,
            CellType::Quadrilateral | CellType::Hexahedron => 15,
        }
    }

    /// The order-`order` element on `cell_type`.
    pub fn new(cell_type: CellType, order: usize) -> Result<LagrangeElement, FeError> {
        let max = Self::max_order(cell_type);
        if order < 1 || order > max {
            return Err(FeError::UnsupportedOrder {
                cell_type,
                order,
                min: 1,
                max,
            });
        }
        let d = cell_type.dim();
        let nv = cell_type.num_vertices();
        let p = order;
        let mut nodes = Vec::new();
        let mut lattice = Vec::new();
        let mut weights = Vec::new();
        let mut entities = Vec::new();
        let mut basis_1d = None;
        if cell_type.is_simplex() {
            let facets = cell_type.facets();
            for (alpha, (dim, index)) in simplex::lattice(d, p, cell_type.edges(), &facets) {
                for k in 0..d {
                    nodes.push(alpha[k + 1] as f64 / p as f64);
                }
                weights.extend_from_slice(&alpha[..nv]);
                lattice.push(alpha);
                entities.push(NodeEntity { dim, index });
            }
        } else {
            let gll = gauss_lobatto_legendre(p + 1)?;
            let n1 = p + 1;
            let total = n1.pow(d as u32);
            for idx in 0..total {
                let mut ijk = [0u32; 4];
                let mut r = idx;
                for a in ijk.iter_mut().take(d) {
                    *a = (r % n1) as u32;
                    r /= n1;
                }
                for &i in ijk.iter().take(d) {
                    nodes.push(gll.points[i as usize]);
                }
                for v in 0..nv {
                    let w: u32 = (0..d)
                        .map(|a| {
                            if (v >> a) & 1 == 1 {
                                ijk[a]
                            } else {
                                p as u32 - ijk[a]
                            }
                        })
                        .product();
                    weights.push(w);
                }
                entities.push(tensor_entity(cell_type, p as u32, &ijk));
                lattice.push(ijk);
            }
            basis_1d = Some(Lagrange1D::new(&gll.points));
        }
        Ok(LagrangeElement {
            cell_type,
            order,
            nodes,
            lattice,
            weights,
            entities,
            basis_1d,
        })
    }

    /// The reference cell.
    pub fn cell_type(&self) -> CellType {
        self.cell_type
    }
    /// Polynomial order.
    pub fn order(&self) -> usize {
        self.order
    }
    /// Reference dimension.
    pub fn dim(&self) -> usize {
        self.cell_type.dim()
    }
    /// Number of nodes (= basis functions).
    pub fn num_nodes(&self) -> usize {
        self.entities.len()
    }
    /// Reference coordinates of all nodes, `dim` each.
    pub fn nodes(&self) -> &[f64] {
        &self.nodes
    }
    /// Reference coordinates of node `i`.
    pub fn node(&self, i: usize) -> &[f64] {
        let d = self.dim();
        &self.nodes[i * d..(i + 1) * d]
    }
    /// Integer lattice coordinates of node `i`: barycentric `(a_0..a_d)` on simplices,
    /// `(i, j, k)` on tensor cells.
    pub fn lattice(&self, i: usize) -> &[u32; 4] {
        &self.lattice[i]
    }
    /// Integer weights of node `i` on the cell's vertices (see the type documentation).
    pub fn vertex_weights(&self, i: usize) -> &[u32] {
        let nv = self.cell_type.num_vertices();
        &self.weights[i * nv..(i + 1) * nv]
    }
    /// Sum of any node's vertex weights: `p` on simplices, `p^d` on tensor cells.
    pub fn weight_total(&self) -> u32 {
        if self.cell_type.is_simplex() {
            self.order as u32
        } else {
            (self.order as u32).pow(self.dim() as u32)
        }
    }
    /// The entity node `i` belongs to.
    pub fn node_entity(&self, i: usize) -> NodeEntity {
        self.entities[i]
    }
    /// Nodes lying on facet `f` (its closure: vertices, edges and interior), in node order.
    pub fn facet_nodes(&self, f: usize) -> Vec<usize> {
        let facets = self.cell_type.facets();
        let on = facets[f];
        (0..self.num_nodes())
            .filter(|&i| {
                self.vertex_weights(i)
                    .iter()
                    .enumerate()
                    .all(|(v, &w)| w == 0 || on.contains(&v))
            })
            .collect()
    }
    /// The 1-D basis on GLL nodes of a tensor-product element (`None` on simplices).
    pub fn basis_1d(&self) -> Option<&Lagrange1D> {
        self.basis_1d.as_ref()
    }

    /// Values and reference gradients of all basis functions at one reference point.
    pub fn eval(&self, x: &[f64], values: &mut [f64], grads: &mut [f64]) {
        let d = self.dim();
        let nb = self.num_nodes();
        if let Some(b1) = &self.basis_1d {
            let n1 = b1.len();
            let mut v1 = vec![0.0; d * n1];
            let mut g1 = vec![0.0; d * n1];
            for a in 0..d {
                b1.eval(
                    x[a],
                    &mut v1[a * n1..(a + 1) * n1],
                    &mut g1[a * n1..(a + 1) * n1],
                );
            }
            for b in 0..nb {
                let ijk = &self.lattice[b];
                let mut val = 1.0;
                for a in 0..d {
                    val *= v1[a * n1 + ijk[a] as usize];
                }
                values[b] = val;
                for k in 0..d {
                    let mut g = 1.0;
                    for a in 0..d {
                        let i = ijk[a] as usize;
                        g *= if a == k {
                            g1[a * n1 + i]
                        } else {
                            v1[a * n1 + i]
                        };
                    }
                    grads[b * d + k] = g;
                }
            }
        } else {
            for b in 0..nb {
                values[b] = simplex::eval(
                    d,
                    self.order,
                    &self.lattice[b],
                    x,
                    &mut grads[b * d..(b + 1) * d],
                );
            }
        }
    }

    /// Tabulates values and reference gradients at `points` (`dim` coordinates each).
    pub fn tabulate(&self, points: &[f64]) -> Result<Tabulation, FeError> {
        let d = self.dim();
        if points.len() % d != 0 {
            return Err(FeError::PointDimension {
                len: points.len(),
                dim: d,
            });
        }
        let np = points.len() / d;
        let nb = self.num_nodes();
        let mut values = vec![0.0; np * nb];
        let mut grads = vec![0.0; np * nb * d];
        for q in 0..np {
            self.eval(
                &points[q * d..(q + 1) * d],
                &mut values[q * nb..(q + 1) * nb],
                &mut grads[q * nb * d..(q + 1) * nb * d],
            );
        }
        Ok(Tabulation {
            num_points: np,
            num_basis: nb,
            dim: d,
            values,
            grads,
        })
    }
}

fn tensor_entity(ct: CellType, p: u32, ijk: &[u32; 4]) -> NodeEntity {
    let d = ct.dim();
    let at_end: Vec<bool> = (0..d).map(|a| ijk[a] == 0 || ijk[a] == p).collect();
    let n_end = at_end.iter().filter(|&&b| b).count();
    let bits = |free: Option<usize>, set: bool| -> usize {
        (0..d)
            .map(|a| {
                let one = if Some(a) == free { set } else { ijk[a] == p };
                (one as usize) << a
            })
            .sum()
    };
    match d - n_end {
        0 => NodeEntity {
            dim: 0,
            index: bits(None, false),
        },
        1 => {
            let free = (0..d).find(|&a| !at_end[a]).expect("one free axis");
            let (v0, v1) = (bits(Some(free), false), bits(Some(free), true));
            let index = ct
                .edges()
                .iter()
                .position(|e| e[0] == v0 && e[1] == v1)
                .expect("tensor edges are listed");
            NodeEntity { dim: 1, index }
        }
        k if k == d => NodeEntity { dim: d, index: 0 },
        _ => {
            // 3-D face: exactly one axis at an end
            let fixed = (0..d).find(|&a| at_end[a]).expect("one fixed axis");
            let side = (ijk[fixed] == p) as usize;
            NodeEntity {
                dim: 2,
                index: 2 * fixed + side,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_elements() -> Vec<LagrangeElement> {
        let mut v = Vec::new();
        for ct in CellType::ALL {
            for p in 1..=LagrangeElement::max_order(ct) {
                if ct == CellType::Hexahedron && p > 10 {
                    continue; // keep the test fast; quads cover high orders
                }
                v.push(LagrangeElement::new(ct, p).unwrap());
            }
        }
        v
    }

    fn expected_count(ct: CellType, p: usize) -> usize {
        match ct {
            CellType::Triangle => (p + 1) * (p + 2) / 2,
            CellType::Tetrahedron => (p + 1) * (p + 2) * (p + 3) / 6,
            CellType::Quadrilateral => (p + 1).pow(2),
            CellType::Hexahedron => (p + 1).pow(3),
        }
    }

    /// Deterministic interior points of the reference cell.
    fn sample_points(ct: CellType, n: usize) -> Vec<f64> {
        let mut g = ferrofem_base::random::Lcg::new(12345);
        let mut rnd = || g.next_f64();
        let d = ct.dim();
        let mut pts = Vec::new();
        while pts.len() < n * d {
            let x: Vec<f64> = (0..d).map(|_| rnd()).collect();
            if ct.is_simplex() {
                if x.iter().sum::<f64>() < 1.0 {
                    pts.extend(x);
                }
            } else {
                pts.extend(x.iter().map(|c| 2.0 * c - 1.0));
            }
        }
        pts
    }

    #[test]
    fn node_counts_match_closed_forms() {
        for e in all_elements() {
            assert_eq!(e.num_nodes(), expected_count(e.cell_type(), e.order()));
        }
    }

    #[test]
    fn unsupported_orders_are_errors() {
        for ct in CellType::ALL {
            assert!(LagrangeElement::new(ct, 0).is_err());
            assert!(LagrangeElement::new(ct, LagrangeElement::max_order(ct) + 1).is_err());
        }
    }

    #[test]
    fn kronecker_property_at_nodes() {
        for e in all_elements() {
            let t = e.tabulate(e.nodes()).unwrap();
            let nb = e.num_nodes();
            for q in 0..nb {
                for b in 0..nb {
                    let want = if q == b { 1.0 } else { 0.0 };
                    let got = t.values[q * nb + b];
                    assert!(
                        (got - want).abs() < 1e-11,
                        "{} p={} node {q} basis {b}: {got}",
                        e.cell_type(),
                        e.order()
                    );
                }
            }
        }
    }

    #[test]
    fn partition_of_unity_and_zero_gradient_sum() {
        for e in all_elements() {
            let d = e.dim();
            let pts = sample_points(e.cell_type(), 7);
            let t = e.tabulate(&pts).unwrap();
            let nb = e.num_nodes();
            for q in 0..7 {
                let s: f64 = t.values[q * nb..(q + 1) * nb].iter().sum();
                assert!((s - 1.0).abs() < 1e-11, "{} p={}", e.cell_type(), e.order());
                for k in 0..d {
                    let g: f64 = (0..nb).map(|b| t.grads[(q * nb + b) * d + k]).sum();
                    assert!(
                        g.abs() < 1e-9,
                        "{} p={} grad sum {g}",
                        e.cell_type(),
                        e.order()
                    );
                }
            }
        }
    }

    #[test]
    fn gradients_match_finite_differences() {
        for e in all_elements() {
            let d = e.dim();
            let nb = e.num_nodes();
            let pts = sample_points(e.cell_type(), 3);
            let t = e.tabulate(&pts).unwrap();
            let h = 1e-6;
            for q in 0..3 {
                for k in 0..d {
                    let mut xp = pts[q * d..(q + 1) * d].to_vec();
                    let mut xm = xp.clone();
                    xp[k] += h;
                    xm[k] -= h;
                    let tp = e.tabulate(&xp).unwrap();
                    let tm = e.tabulate(&xm).unwrap();
                    for b in 0..nb {
                        let fd = (tp.values[b] - tm.values[b]) / (2.0 * h);
                        let g = t.grads[(q * nb + b) * d + k];
                        let scale = 1.0 + g.abs();
                        assert!(
                            (fd - g).abs() < 1e-5 * scale,
                            "{} p={} b={b} k={k}: fd {fd} vs {g}",
                            e.cell_type(),
                            e.order()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn reproduces_polynomials_of_its_degree() {
        // interpolating x^a y^b (z^c) with total degree p (simplex) / per-axis p (tensor)
        for e in all_elements() {
            let d = e.dim();
            let p = e.order() as i32;
            let exps: Vec<[i32; 3]> = match (d, e.cell_type().is_simplex()) {
                (2, true) => vec![[p, 0, 0], [0, p, 0], [p - 1, 1, 0], [1, p - 1, 0]],
                (3, true) => vec![[p, 0, 0], [0, 0, p], [p - 1, 0, 1], [0, 1, p - 1]],
                (2, false) => vec![[p, p, 0], [p, 0, 0], [1, p, 0]],
                _ => vec![[p, p, p], [p, 0, 1], [0, p, p]],
            };
            let pts = sample_points(e.cell_type(), 5);
            let t = e.tabulate(&pts).unwrap();
            let nb = e.num_nodes();
            for ex in exps {
                let f = |x: &[f64]| (0..d).map(|k| x[k].powi(ex[k])).product::<f64>();
                let coef: Vec<f64> = (0..nb).map(|b| f(e.node(b))).collect();
                for q in 0..5 {
                    let v: f64 = (0..nb).map(|b| coef[b] * t.values[q * nb + b]).sum();
                    let exact = f(&pts[q * d..(q + 1) * d]);
                    assert!(
                        (v - exact).abs() < 1e-10,
                        "{} p={} exps {ex:?}",
                        e.cell_type(),
                        e.order()
                    );
                }
            }
        }
    }

    #[test]
    fn vertex_weights_reproduce_node_positions_and_entities() {
        for e in all_elements() {
            let ct = e.cell_type();
            let d = e.dim();
            let total = e.weight_total() as f64;
            for i in 0..e.num_nodes() {
                let w = e.vertex_weights(i);
                assert_eq!(w.iter().sum::<u32>(), e.weight_total());
                let mut x = [0.0; 3];
                for (v, &wv) in w.iter().enumerate() {
                    let xv = ct.reference_vertex(v);
                    for k in 0..d {
                        x[k] += wv as f64 * xv[k] / total;
                    }
                }
                for k in 0..d {
                    assert!((x[k] - e.node(i)[k]).abs() < 1e-12 || ct.is_tensor());
                }
                // the entity's vertices are exactly those with nonzero weight
                let nonzero: Vec<usize> = (0..w.len()).filter(|&v| w[v] > 0).collect();
                let ent = e.node_entity(i);
                let ent_vertices: Vec<usize> = match ent.dim {
                    0 => vec![ent.index],
                    1 => ct.edges()[ent.index].to_vec(),
                    k if k == d => (0..ct.num_vertices()).collect(),
                    _ => ct.facets()[ent.index].to_vec(),
                };
                let mut ev = ent_vertices.clone();
                ev.sort();
                assert_eq!(nonzero, ev, "{ct} p={} node {i} entity {ent:?}", e.order());
            }
        }
    }

    #[test]
    fn facet_nodes_lie_on_facets() {
        for e in all_elements() {
            let ct = e.cell_type();
            let p = e.order();
            for f in 0..ct.num_facets() {
                let nodes = e.facet_nodes(f);
                let expected = match ct {
                    CellType::Triangle | CellType::Quadrilateral => p + 1,
                    CellType::Tetrahedron => (p + 1) * (p + 2) / 2,
                    CellType::Hexahedron => (p + 1) * (p + 1),
                };
                assert_eq!(nodes.len(), expected, "{ct} p={p} facet {f}");
                for &n in &nodes {
                    let x = e.node(n);
                    if ct.is_tensor() {
                        let axis = f / 2;
                        let side = if f % 2 == 0 { -1.0 } else { 1.0 };
                        assert_eq!(x[axis], side);
                    } else if f == 0 {
                        assert!((x.iter().sum::<f64>() - 1.0).abs() < 1e-12);
                    } else {
                        assert_eq!(x[f - 1], 0.0);
                    }
                }
            }
        }
    }
}

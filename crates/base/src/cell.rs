//! Reference cells and their numbering conventions.
//!
//! Simplices live on the unit simplex (vertex 0 at the origin, vertex `i` at the `i`-th
//! unit vector); facet `i` of a simplex is the one opposite vertex `i`.
//!
//! Quadrilaterals and hexahedra live on the bi-/tri-unit cube `[-1, 1]^d` and number their
//! vertices lexicographically: vertex `i + 2j (+ 4k)` sits at `(±1, ±1 (, ±1))` with `-1`
//! for a zero bit. This is the order of a tensor-product basis, so sum factorisation,
//! restriction and geometry need no permutation. (Gmsh and VTK order them
//! counter-clockwise; the readers and writers convert.) Facets of tensor cells are ordered
//! `x-, x+, y-, y+ (, z-, z+)`, and each facet lists its vertices lexicographically in
//! the facet's own coordinates.

use std::fmt;

/// The kind of a mesh cell (always with straight-sided, affine or multilinear geometry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CellType {
    /// 3-vertex triangle.
    Triangle,
    /// 4-vertex quadrilateral.
    Quadrilateral,
    /// 4-vertex tetrahedron.
    Tetrahedron,
    /// 8-vertex hexahedron.
    Hexahedron,
}

const TRI_EDGES: [[usize; 2]; 3] = [[1, 2], [0, 2], [0, 1]];
const QUAD_EDGES: [[usize; 2]; 4] = [[0, 2], [1, 3], [0, 1], [2, 3]];
const TET_EDGES: [[usize; 2]; 6] = [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]];
const HEX_EDGES: [[usize; 2]; 12] = [
    [0, 1],
    [2, 3],
    [4, 5],
    [6, 7],
    [0, 2],
    [1, 3],
    [4, 6],
    [5, 7],
    [0, 4],
    [1, 5],
    [2, 6],
    [3, 7],
];
const TET_FACES: [[usize; 3]; 4] = [[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]];
const HEX_FACES: [[usize; 4]; 6] = [
    [0, 2, 4, 6],
    [1, 3, 5, 7],
    [0, 1, 4, 5],
    [2, 3, 6, 7],
    [0, 1, 2, 3],
    [4, 5, 6, 7],
];

impl CellType {
    /// All supported cell types.
    pub const ALL: [CellType; 4] = [
        CellType::Triangle,
        CellType::Quadrilateral,
        CellType::Tetrahedron,
        CellType::Hexahedron,
    ];

    /// Topological dimension (2 or 3).
    pub const fn dim(self) -> usize {
        match self {
            CellType::Triangle | CellType::Quadrilateral => 2,
            CellType::Tetrahedron | CellType::Hexahedron => 3,
        }
    }

    /// Number of vertices.
    pub const fn num_vertices(self) -> usize {
        match self {
            CellType::Triangle => 3,
            CellType::Quadrilateral | CellType::Tetrahedron => 4,
            CellType::Hexahedron => 8,
        }
    }

    /// True for triangles and tetrahedra.
    pub const fn is_simplex(self) -> bool {
        matches!(self, CellType::Triangle | CellType::Tetrahedron)
    }

    /// True for quadrilaterals and hexahedra (tensor-product cells).
    pub const fn is_tensor(self) -> bool {
        !self.is_simplex()
    }

    /// Local vertex pairs of the edges.
    pub fn edges(self) -> &'static [[usize; 2]] {
        match self {
            CellType::Triangle => &TRI_EDGES,
            CellType::Quadrilateral => &QUAD_EDGES,
            CellType::Tetrahedron => &TET_EDGES,
            CellType::Hexahedron => &HEX_EDGES,
        }
    }

    /// Local vertices of each facet (edges in 2-D, faces in 3-D), in the order described in
    /// the module documentation.
    pub fn facets(self) -> Vec<&'static [usize]> {
        match self {
            CellType::Triangle => TRI_EDGES.iter().map(|e| &e[..]).collect(),
            CellType::Quadrilateral => QUAD_EDGES.iter().map(|e| &e[..]).collect(),
            CellType::Tetrahedron => TET_FACES.iter().map(|f| &f[..]).collect(),
            CellType::Hexahedron => HEX_FACES.iter().map(|f| &f[..]).collect(),
        }
    }

    /// Number of facets.
    pub const fn num_facets(self) -> usize {
        match self {
            CellType::Triangle => 3,
            CellType::Quadrilateral | CellType::Tetrahedron => 4,
            CellType::Hexahedron => 6,
        }
    }

    /// The cell type of the facets (`None` for 2-D cells, whose facets are segments).
    pub const fn facet_type(self) -> Option<CellType> {
        match self {
            CellType::Triangle | CellType::Quadrilateral => None,
            CellType::Tetrahedron => Some(CellType::Triangle),
            CellType::Hexahedron => Some(CellType::Quadrilateral),
        }
    }

    /// Reference coordinates of vertex `v` (length `dim()`).
    pub fn reference_vertex(self, v: usize) -> [f64; 3] {
        match self {
            CellType::Triangle | CellType::Tetrahedron => {
                let mut x = [0.0; 3];
                if v > 0 {
                    x[v - 1] = 1.0;
                }
                x
            }
            CellType::Quadrilateral | CellType::Hexahedron => {
                let bit = |b: usize| if (v >> b) & 1 == 1 { 1.0 } else { -1.0 };
                let mut x = [bit(0), bit(1), 0.0];
                if self == CellType::Hexahedron {
                    x[2] = bit(2);
                }
                x
            }
        }
    }

    /// Measure (area or volume) of the reference cell.
    pub const fn reference_measure(self) -> f64 {
        match self {
            CellType::Triangle => 0.5,
            CellType::Quadrilateral => 4.0,
            CellType::Tetrahedron => 1.0 / 6.0,
            CellType::Hexahedron => 8.0,
        }
    }

    /// The lower-case name used on the command line and in files.
    pub const fn name(self) -> &'static str {
        match self {
            CellType::Triangle => "triangle",
            CellType::Quadrilateral => "quadrilateral",
            CellType::Tetrahedron => "tetrahedron",
            CellType::Hexahedron => "hexahedron",
        }
    }

    /// Parses `tri|triangle`, `quad|quadrilateral`, `tet|tetrahedron`, `hex|hexahedron`.
    pub fn parse(s: &str) -> Option<CellType> {
        match s.to_ascii_lowercase().as_str() {
            "tri" | "triangle" | "triangles" => Some(CellType::Triangle),
            "quad" | "quadrilateral" | "quads" => Some(CellType::Quadrilateral),
            "tet" | "tetrahedron" | "tets" => Some(CellType::Tetrahedron),
            "hex" | "hexahedron" | "hexes" => Some(CellType::Hexahedron),
            _ => None,
        }
    }
}

impl fmt::Display for CellType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facets_lie_on_reference_boundary_planes() {
        for ct in CellType::ALL {
            let facets = ct.facets();
            assert_eq!(facets.len(), ct.num_facets());
            for (i, f) in facets.iter().enumerate() {
                if ct.is_tensor() {
                    // facet i is the plane x_{i/2} = ±1
                    let axis = i / 2;
                    let side = if i % 2 == 0 { -1.0 } else { 1.0 };
                    for &v in f.iter() {
                        assert_eq!(ct.reference_vertex(v)[axis], side, "{ct} facet {i}");
                    }
                } else {
                    assert!(
                        !f.contains(&i),
                        "{ct} facet {i} must be opposite vertex {i}"
                    );
                    assert_eq!(f.len(), ct.dim());
                }
            }
        }
    }

    #[test]
    fn edges_connect_distinct_vertices_once() {
        for ct in CellType::ALL {
            let mut seen = std::collections::HashSet::new();
            for e in ct.edges() {
                assert!(e[0] < e[1]);
                assert!(e[1] < ct.num_vertices());
                assert!(seen.insert(*e));
                if ct.is_tensor() {
                    // tensor edges differ in exactly one coordinate
                    let a = ct.reference_vertex(e[0]);
                    let b = ct.reference_vertex(e[1]);
                    let diff = (0..3).filter(|&k| a[k] != b[k]).count();
                    assert_eq!(diff, 1);
                }
            }
        }
    }

    #[test]
    fn parse_roundtrips() {
        for ct in CellType::ALL {
            assert_eq!(CellType::parse(ct.name()), Some(ct));
        }
        assert_eq!(CellType::parse("prism"), None);
    }
}

//! The Gmsh element types this reader knows: number, name, dimension and node count.
//!
//! The list is the one documented in the Gmsh reference manual (MSH file format,
//! "elm-type"): types 1–31 and the third/fourth-order hexahedra 92 and 93. Knowing the node
//! count of every listed type lets the reader step over elements it does not use (points,
//! second-order boundary elements, ...); only types 2–5 can become ferrofem cells.

/// One Gmsh element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ElementType {
    /// The Gmsh type number (`elm-type`).
    pub number: u32,
    /// A human-readable name.
    pub name: &'static str,
    /// Topological dimension (0 for points).
    pub dim: u8,
    /// Number of nodes.
    pub nodes: usize,
}

const fn t(number: u32, name: &'static str, dim: u8, nodes: usize) -> ElementType {
    ElementType {
        number,
        name,
        dim,
        nodes,
    }
}

/// Types 1..=31, indexed by `number - 1`.
const LOW: [ElementType; 31] = [
    t(1, "2-node line", 1, 2),
    t(2, "3-node triangle", 2, 3),
    t(3, "4-node quadrangle", 2, 4),
    t(4, "4-node tetrahedron", 3, 4),
    t(5, "8-node hexahedron", 3, 8),
    t(6, "6-node prism", 3, 6),
    t(7, "5-node pyramid", 3, 5),
    t(8, "3-node second-order line", 1, 3),
    t(9, "6-node second-order triangle", 2, 6),
    t(10, "9-node second-order quadrangle", 2, 9),
    t(11, "10-node second-order tetrahedron", 3, 10),
    t(12, "27-node second-order hexahedron", 3, 27),
    t(13, "18-node second-order prism", 3, 18),
    t(14, "14-node second-order pyramid", 3, 14),
    t(15, "1-node point", 0, 1),
    t(16, "8-node second-order quadrangle", 2, 8),
    t(17, "20-node second-order hexahedron", 3, 20),
    t(18, "15-node second-order prism", 3, 15),
    t(19, "13-node second-order pyramid", 3, 13),
    t(20, "9-node third-order incomplete triangle", 2, 9),
    t(21, "10-node third-order triangle", 2, 10),
    t(22, "12-node fourth-order incomplete triangle", 2, 12),
    t(23, "15-node fourth-order triangle", 2, 15),
    t(24, "15-node fifth-order incomplete triangle", 2, 15),
    t(25, "21-node fifth-order triangle", 2, 21),
    t(26, "4-node third-order line", 1, 4),
    t(27, "5-node fourth-order line", 1, 5),
    t(28, "6-node fifth-order line", 1, 6),
    t(29, "20-node third-order tetrahedron", 3, 20),
    t(30, "35-node fourth-order tetrahedron", 3, 35),
    t(31, "56-node fifth-order tetrahedron", 3, 56),
];

const HEX64: ElementType = t(92, "64-node third-order hexahedron", 3, 64);
const HEX125: ElementType = t(93, "125-node fourth-order hexahedron", 3, 125);

/// Which type numbers are known, for error messages.
pub(crate) const KNOWN_TYPES: &str = "1-31, 92 and 93";

/// Gmsh types that become ferrofem cells, for error messages.
pub(crate) const SUPPORTED_CELLS: &str =
    "linear triangles (2), quadrangles (3), tetrahedra (4) or hexahedra (5)";

/// The type with Gmsh number `number`, if it is one of the documented ones.
pub(crate) fn element_type(number: u32) -> Option<&'static ElementType> {
    match number {
        1..=31 => Some(&LOW[number as usize - 1]),
        92 => Some(&HEX64),
        93 => Some(&HEX125),
        _ => None,
    }
}

/// "type 11 (10-node second-order tetrahedron)", or "type 99" for unknown numbers.
pub(crate) fn describe(number: u32) -> String {
    match element_type(number) {
        Some(t) => format!("type {number} ({})", t.name),
        None => format!("type {number}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_indexed_by_number() {
        for n in 1..=31 {
            assert_eq!(element_type(n).map(|t| t.number), Some(n));
        }
        assert_eq!(element_type(92).map(|t| t.nodes), Some(64));
        assert_eq!(element_type(93).map(|t| t.nodes), Some(125));
        assert!(element_type(0).is_none());
        assert!(element_type(32).is_none());
        assert!(element_type(99).is_none());
    }

    #[test]
    fn node_counts_follow_the_names() {
        // Every name starts with "<nodes>-node".
        for n in (1..=31).chain([92, 93]) {
            let t = element_type(n).expect("known");
            let lead: usize = t
                .name
                .split('-')
                .next()
                .and_then(|s| s.parse().ok())
                .expect("count");
            assert_eq!(lead, t.nodes, "type {n}");
        }
    }
}

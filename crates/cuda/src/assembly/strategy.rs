//! The GPU assembly strategies (Cecka, Lew & Darve 2011, §4) that ferrofem implements.

use ferrofem_base::CellType;
/// How the element matrices reach the CSR values on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuStrategy {
    /// Every element adds its matrix into CSR through the element → nonzero map with
    /// atomic additions, all elements in one launch.
    Atomic,
    /// The paper's ElemColor: one launch per colour of elements (no two of a colour share a
    /// node), each adding its matrix through the element → nonzero map without atomics.
    ElemColor,
    /// The paper's GlobalNZ: the element matrices are written to global memory, then one
    /// thread per nonzero sums its entries through the nonzero → element-entries map.
    GlobalNz,
    /// The paper's SharedNZ: a block takes a compact set of rows (along a space-filling
    /// curve), computes the matrices of the elements adjacent to them into shared memory,
    /// and one thread per nonzero of the rows sums its entries there and writes it once: no
    /// atomics, no element data in global memory (elements next to several sets are
    /// computed once for each). Only when one row's elements fit in shared memory.
    SharedNz,
    /// Block sums: the elements partitioned into compact sets along a space-filling curve;
    /// a block computes one set's matrices into shared memory and sums them there per
    /// nonzero, then adds each sum to CSR once (stored where no other set adds to the
    /// nonzero, atomically where one does): about one global update per nonzero instead of
    /// one per element entry.
    BlockSums,
    /// One thread per matrix row recomputes, in registers, the rows of the element matrices
    /// that add to it and writes the row once: no element data in memory and no atomics
    /// (the paper's LocalNZ, by row rather than by nonzero).
    LocalRow,
}

impl GpuStrategy {
    /// Every strategy.
    pub const ALL: [GpuStrategy; 6] = [
        GpuStrategy::Atomic,
        GpuStrategy::ElemColor,
        GpuStrategy::GlobalNz,
        GpuStrategy::SharedNz,
        GpuStrategy::BlockSums,
        GpuStrategy::LocalRow,
    ];

    /// The fastest strategy for f64 element matrices of `ncomp` components at `order` on
    /// `cell`s, by the measurements on an H200 recorded in BENCHMARKS.md (10⁷ P1 cells,
    /// fewer at higher orders):
    ///
    /// | cells | components | atomic | block sums | GlobalNZ |
    /// | --- | --- | --- | --- | --- |
    /// | triangles | 1 | P1, P5 | P2–P4 | |
    /// | triangles | 2 | P1 | | P2 and up |
    /// | tetrahedra | 1 | P1–P3 | | P4 |
    /// | tetrahedra | 3 | P1 | | P2 and up |
    /// | quadrilaterals | 1, 2 | Q2–Q4 (Q2 with 2) | | |
    /// | hexahedra | 1, 3 | Q1–Q4 (Q2 with 3) | | |
    ///
    /// On simplices, element matrices heavier than these favour GlobalNZ (every element
    /// computed once, the gather coalesced). On Q1 quadrilaterals one thread per row
    /// (local rows) wins; elsewhere the colouring, SharedNZ and by-row strategies lose. On
    /// tensor cells the element matrices are sum-factorised, and atomics beat GlobalNZ, whose
    /// element data doubles the traffic (Q4 hexahedra 10.6 against 11.7 ms; Q2 elasticity
    /// on hexahedra 12.1 against 12.4 ms), or tie with it (Q3 hexahedra 10.34 against 10.29).
    pub fn auto(cell: CellType, order: usize, ncomp: usize) -> GpuStrategy {
        match (cell, ncomp, order) {
            (CellType::Quadrilateral, 1, 1) => GpuStrategy::LocalRow,
            (CellType::Quadrilateral | CellType::Hexahedron, _, _) => GpuStrategy::Atomic,
            (_, _, 1) => GpuStrategy::Atomic,
            (CellType::Triangle, 1, 2..=4) => GpuStrategy::BlockSums,
            (CellType::Triangle, 1, _) => GpuStrategy::Atomic,
            (CellType::Tetrahedron, 1, 2 | 3) => GpuStrategy::Atomic,
            _ => GpuStrategy::GlobalNz,
        }
    }

    /// The name used on command lines and in benchmark records.
    pub fn name(self) -> &'static str {
        match self {
            GpuStrategy::Atomic => "atomic",
            GpuStrategy::ElemColor => "elem-color",
            GpuStrategy::GlobalNz => "global-nz",
            GpuStrategy::SharedNz => "shared-nz",
            GpuStrategy::BlockSums => "block-sums",
            GpuStrategy::LocalRow => "local-row",
        }
    }

    /// The strategy of a [`GpuStrategy::name`] (case and `_`/`-` insensitive).
    pub fn parse(s: &str) -> Option<GpuStrategy> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "atomic" | "atomics" => Some(GpuStrategy::Atomic),
            "elem-color" | "elemcolor" | "elem-colour" | "colored" | "coloured" => {
                Some(GpuStrategy::ElemColor)
            }
            "global-nz" | "globalnz" => Some(GpuStrategy::GlobalNz),
            "shared-nz" | "sharednz" => Some(GpuStrategy::SharedNz),
            "block-sums" | "blocksums" => Some(GpuStrategy::BlockSums),
            "local-row" | "localrow" => Some(GpuStrategy::LocalRow),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_follows_the_measured_table() {
        use CellType::{Hexahedron, Tetrahedron, Triangle};
        assert_eq!(GpuStrategy::auto(Tetrahedron, 1, 1), GpuStrategy::Atomic);
        assert_eq!(GpuStrategy::auto(Tetrahedron, 4, 1), GpuStrategy::GlobalNz);
        assert_eq!(GpuStrategy::auto(Tetrahedron, 2, 3), GpuStrategy::GlobalNz);
        assert_eq!(GpuStrategy::auto(Triangle, 2, 1), GpuStrategy::BlockSums);
        assert_eq!(GpuStrategy::auto(Triangle, 5, 1), GpuStrategy::Atomic);
        assert_eq!(GpuStrategy::auto(Hexahedron, 2, 1), GpuStrategy::Atomic);
        assert_eq!(
            GpuStrategy::auto(CellType::Quadrilateral, 1, 1),
            GpuStrategy::LocalRow
        );
    }

    #[test]
    fn names_parse_back() {
        for s in GpuStrategy::ALL {
            assert_eq!(GpuStrategy::parse(s.name()), Some(s));
        }
        assert_eq!(GpuStrategy::parse("GlobalNZ"), Some(GpuStrategy::GlobalNz));
        assert_eq!(
            GpuStrategy::parse("ElemColor"),
            Some(GpuStrategy::ElemColor)
        );
        assert_eq!(GpuStrategy::parse("LocalRow"), Some(GpuStrategy::LocalRow));
        assert_eq!(GpuStrategy::parse("local-nz"), None);
    }
}

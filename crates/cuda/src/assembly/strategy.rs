//! The GPU assembly strategies (Cecka, Lew & Darve 2011, §4) that ferrofem implements.

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
    /// One thread per matrix row recomputes, in registers, the rows of the element matrices
    /// that add to it and writes the row once: no element data in memory and no atomics
    /// (the paper's LocalNZ, by row rather than by nonzero).
    LocalRow,
}

impl GpuStrategy {
    /// Every strategy.
    pub const ALL: [GpuStrategy; 5] = [
        GpuStrategy::Atomic,
        GpuStrategy::ElemColor,
        GpuStrategy::GlobalNz,
        GpuStrategy::SharedNz,
        GpuStrategy::LocalRow,
    ];

    /// The name used on command lines and in benchmark records.
    pub fn name(self) -> &'static str {
        match self {
            GpuStrategy::Atomic => "atomic",
            GpuStrategy::ElemColor => "elem-color",
            GpuStrategy::GlobalNz => "global-nz",
            GpuStrategy::SharedNz => "shared-nz",
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
            "local-row" | "localrow" => Some(GpuStrategy::LocalRow),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

//! Where a matrix-free operator gets its geometric factors from.

/// Where a matrix-free operator gets the geometric factors of its elements (`J⁻¹`,
/// `det J`, or the metric `w det J · J⁻¹J⁻ᵀ` built from them) at its quadrature points:
/// read from memory or recomputed from the elements' vertices. It is the one trade of
/// bytes against flops that the CPU tensor operators and the GPU kernels share, so both
/// name it with this type; how stored factors are laid out is each backend's own choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GeometrySource {
    /// Precomputed at setup and read at every application (per quadrature point, or once
    /// per cell where the coordinate map is affine): the fewest flops, the most bytes.
    Stored,
    /// Recomputed at every application from the element's vertex coordinates through its
    /// coordinate map: a few values per element to read, more flops.
    OnTheFly,
}

impl GeometrySource {
    /// Short name in labels, records and kernel names (`stored`, `otf`).
    pub fn tag(self) -> &'static str {
        match self {
            GeometrySource::Stored => "stored",
            GeometrySource::OnTheFly => "otf",
        }
    }
}

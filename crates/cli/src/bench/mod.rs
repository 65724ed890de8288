//! `ferrofem bench`: benchmarks that print their roofline fraction beside every figure and
//! can append JSON records.

mod assembly;
#[cfg(feature = "cuda")]
mod assembly_cpu_reference;
#[cfg(feature = "cuda")]
mod assembly_gpu;
mod bp;
mod residual;
mod stream;
mod wave;

#[cfg(feature = "cuda")]
pub use stream::check_device_buffers;
pub use stream::check_host_buffers;

use crate::error::CliError;
use clap::{Args, Subcommand};
use ferrofem_base::memory::Bytes;
use ferrofem_base::CellType;

/// Options of `ferrofem bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    which: Which,
}

#[derive(Subcommand, Debug)]
enum Which {
    /// Device (or CPU) copy bandwidth: the roofline every other benchmark is measured against.
    Stream(stream::StreamArgs),
    /// CEED BP1: mass matrix (Gauss quadrature, q = p + 2).
    Bp1(Box<bp::BpArgs>),
    /// CEED BP3: diffusion with Gauss quadrature (q = p + 2).
    Bp3(Box<bp::BpArgs>),
    /// BP3.5 (CEED BP5): diffusion collocated at the GLL nodes.
    #[command(name = "bp3.5", alias = "bp5", alias = "bp35")]
    Bp35(Box<bp::BpArgs>),
    /// Residual evaluation of a pointwise form on simplices (Knepley, Rupp & Terrel 2016).
    Residual(residual::ResidualArgs),
    /// Global CSR assembly with each strategy of Cecka, Lew & Darve (2011).
    Assembly(assembly::AssemblyArgs),
    /// The spectral-element wave step (Carrascal-Manzanares et al. 2017) per element and step.
    Wave(wave::WaveBenchArgs),
}

/// Runs `ferrofem bench ...`.
pub fn run(a: BenchArgs) -> Result<(), CliError> {
    match a.which {
        Which::Stream(s) => stream::run(s),
        Which::Bp1(a) => bp::run(bp::BpName::Bp1, *a),
        Which::Bp3(a) => bp::run(bp::BpName::Bp3, *a),
        Which::Bp35(a) => bp::run(bp::BpName::Bp35, *a),
        Which::Residual(a) => residual::run(a),
        Which::Assembly(a) => assembly::run(a),
        Which::Wave(a) => wave::run(a),
    }
}

/// Median of a list of seconds.
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    if s.is_empty() {
        0.0
    } else if s.len() % 2 == 1 {
        s[s.len() / 2]
    } else {
        0.5 * (s[s.len() / 2 - 1] + s[s.len() / 2])
    }
}

/// Points of the quadrature rule of degree `degree` on `ct` ([`ferrofem_fe::QuadratureRule::for_degree`]),
/// at most: `(degree / 2 + 1)^d` (Gauss products on quadrilaterals and hexahedra, collapsed
/// Gauss–Jacobi products on simplices; the low-degree symmetric simplex rules have fewer).
pub fn rule_points_bound(ct: CellType, degree: usize) -> u64 {
    ((degree / 2 + 1) as u64).saturating_pow(ct.dim() as u32)
}

/// Bytes a CPU form operator ([`ferrofem_operator::FormOperator`]) takes on `cells` cells
/// with `nq` quadrature points each, elements of `nodes` nodes and `ncomp` components,
/// in `scalar_bytes`-byte scalars: the geometry at every point, computed in `f64` (the
/// points, `det J`, `J⁻¹` and the weights, `d² + d + 2` values) and kept in the
/// operator's scalar (the points and weights, and `J⁻¹` per point, or per cell on affine
/// cells), the tabulation of the basis and its gradients at the points, and the element
/// vectors of the accumulation.
pub fn form_operator_bytes(
    cells: u64,
    nq: u64,
    dim: u64,
    affine: bool,
    nodes: u64,
    ncomp: u64,
    scalar_bytes: u64,
) -> u64 {
    let points = cells.saturating_mul(nq);
    let geometry_f64 = Bytes::of(points, 8 * (dim * dim + dim + 2));
    let kept = Bytes::of(points, scalar_bytes * (dim + 1))
        + Bytes::of(
            if affine { cells } else { points },
            scalar_bytes * dim * dim,
        );
    let tabulation = Bytes::of(nq.saturating_mul(nodes), scalar_bytes * (dim + 1));
    let element_vectors = Bytes::of(cells.saturating_mul(nodes), scalar_bytes * ncomp);
    (geometry_f64 + kept + tabulation + element_vectors).0
}

/// Appends `r` to the `--record` file when given, and prints it as one JSON line when
/// `json`: returns whether it was printed (else the caller prints its table row).
fn record_and_print_json<R: serde::Serialize>(
    r: &R,
    record: Option<&std::path::Path>,
    json: bool,
) -> Result<bool, CliError> {
    if let Some(path) = record {
        ferrofem_io::append_json_line(path, r)?;
    }
    if json {
        println!("{}", serde_json::to_string(r)?);
    }
    Ok(json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_points_are_bounded_by_the_product_rule() {
        assert_eq!(
            rule_points_bound(CellType::Tetrahedron, 200),
            101 * 101 * 101
        );
        assert_eq!(rule_points_bound(CellType::Hexahedron, 31), 16 * 16 * 16);
        assert_eq!(rule_points_bound(CellType::Triangle, 0), 1);
        for (ct, k) in [
            (CellType::Triangle, 7),
            (CellType::Tetrahedron, 9),
            (CellType::Quadrilateral, 5),
            (CellType::Hexahedron, 4),
        ] {
            let rule = ferrofem_fe::QuadratureRule::for_degree(ct, k).unwrap();
            assert!(rule.len() as u64 <= rule_points_bound(ct, k), "{ct:?} {k}");
        }
    }

    #[test]
    fn the_form_operator_estimate_is_dominated_by_the_geometry_at_the_points() {
        // 1296 tetrahedra at degree 60 (29791 points): the f64 geometry (14 values) and the
        // kept points and weights (4) per point, 5.56 GB (5.44 GB measured at the peak)
        let b = form_operator_bytes(1296, 29791, 3, true, 4, 1, 8);
        let points = 1296u64 * 29791;
        assert!(
            b >= points * (14 + 4) * 8 && b < points * (14 + 4) * 8 + (1 << 30),
            "{b}"
        );
        // non-affine cells keep J⁻¹ at every point too
        assert_eq!(
            form_operator_bytes(10, 8, 3, false, 8, 1, 8)
                - form_operator_bytes(10, 8, 3, true, 8, 1, 8),
            (80 - 10) * 9 * 8
        );
        // no overflow for absurd sizes
        assert_eq!(
            form_operator_bytes(u64::MAX, u64::MAX, 3, false, 1, 1, 8),
            u64::MAX
        );
    }
}

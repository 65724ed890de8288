//! Helpers that build the CUDA C half of a physics ([`crate::CudaPhysics::source`]).

use crate::manufactured::Manufactured;

/// Names of the six pointwise functions and of their output arrays.
const FUNCTIONS: [(&str, &str); 6] = [
    ("ff_f0", "f0"),
    ("ff_f1", "f1"),
    ("ff_g0", "g0"),
    ("ff_g1", "g1"),
    ("ff_g2", "g2"),
    ("ff_g3", "g3"),
];

/// Builds the source: a comment line, the forcing function (when given) and `ff_f0` …
/// `ff_g3` with the bodies `bodies` (in that order; an empty body leaves the output
/// untouched). Every function marks all its arguments used, so no compiler warns.
pub(crate) fn physics_source(
    title: &str,
    forcing: Option<&Manufactured>,
    bodies: [String; 6],
) -> String {
    let prelude = forcing.map(Manufactured::forcing_cuda).unwrap_or_default();
    physics_source_with(title, &prelude, bodies)
}

/// Like [`physics_source`], with `prelude` (helper functions the bodies call) in place of
/// a manufactured forcing.
pub(crate) fn physics_source_with(title: &str, prelude: &str, bodies: [String; 6]) -> String {
    let mut s = format!("// ferrofem physics: {title}\n");
    s.push_str(prelude);
    for ((name, out), body) in FUNCTIONS.iter().zip(bodies) {
        s.push_str(&format!(
            "static __device__ __forceinline__ void {name}(const real* x, const real* u, \
             const real* du, const real* a, const real* da, real* {out}) {{\n  \
             (void)x; (void)u; (void)du; (void)a; (void)da; (void){out};\n{body}}}\n"
        ));
    }
    s
}

/// `real ff[NC]; ff_forcing(x, ff);` when there is a forcing, else nothing.
pub(crate) fn call_forcing(forcing: Option<&Manufactured>, ncomp: usize) -> String {
    match forcing {
        Some(_) => format!("  real ff[{ncomp}];\n  ff_forcing(x, ff);\n"),
        None => String::new(),
    }
}

/// The `name_d<dim>` identifier used for kernel cache files.
pub(crate) fn cuda_name(name: &str, dim: usize) -> String {
    format!("{}_d{dim}", name.replace('-', "_"))
}

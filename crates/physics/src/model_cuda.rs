//! The CUDA C half of a [`ModelPhysics`]: every region's coefficients and source inlined
//! in a `switch` on the region slot `a[0]`, with the same arithmetic as the CPU half.

use crate::coefficient::{cuda_names, Coef};
use crate::cuda_source::{cuda_name, physics_source_with};
use crate::elasticity::{hooke_stress_cuda, hooke_tensor_cuda};
use crate::model::{Material, ModelKind, ModelPhysics, Moduli};
use crate::{CudaPhysics, JacobianTerms, Physics, ResidualTerms};

/// Coefficient slots of `ff_coef`: diffusion `k[0] = κ`, `k[1] = c`, `k[2] = ∂κ/∂u`;
/// elasticity `k[0] = λ`, `k[1] = μ`.
const NK: usize = 3;

/// The statements that set `k[..]` for one region.
fn coef_statements(p: &ModelPhysics, slot: usize, names: &[&str]) -> String {
    let r = &p.regions()[slot];
    let c = |coef: &Coef| coef.to_cuda(names);
    match &r.material {
        Material::Diffusion { kappa, reaction } => {
            let dk = match p.kind() {
                ModelKind::NonlinearDiffusion => c(&p.dkappa()[slot]),
                _ => "(real)0".into(),
            };
            format!(
                "      k[0] = {};\n      k[1] = {};\n      k[2] = {dk};\n",
                c(kappa),
                c(reaction)
            )
        }
        Material::Elasticity(m) => {
            let pair = match m {
                Moduli::Lame { lambda, mu } => {
                    format!("      k[0] = {};\n      k[1] = {};\n", c(lambda), c(mu))
                }
                Moduli::Young { young, poisson } => format!(
                    "      const real E = {};\n      const real nu = {};\n      \
                     k[0] = E * nu / (((real)1 + nu) * ((real)1 - (real)2 * nu));\n      \
                     k[1] = E / ((real)2 * ((real)1 + nu));\n",
                    c(young),
                    c(poisson)
                ),
            };
            let plane = if matches!(p.kind(), ModelKind::Elasticity { plane_stress: true })
                && p.dim_of() == 2
            {
                "      k[0] = (real)2 * k[0] * k[1] / (k[0] + (real)2 * k[1]);\n"
            } else {
                ""
            };
            format!("{pair}{plane}      k[2] = (real)0;\n")
        }
    }
}

/// `switch (slot) { case i: ... }` over the regions, or the only region's statements.
fn per_region(p: &ModelPhysics, body: impl Fn(usize) -> String) -> String {
    let n = p.regions().len();
    if n == 1 {
        return format!("  {{\n{}  }}\n", body(0));
    }
    let mut s = "  switch ((int)a[0]) {\n".to_string();
    for slot in 0..n {
        let label = if slot + 1 == n {
            "    default: {\n".to_string()
        } else {
            format!("    case {slot}: {{\n")
        };
        s.push_str(&label);
        s.push_str(&body(slot));
        s.push_str("    } break;\n");
    }
    s.push_str("  }\n");
    s
}

/// The CUDA half of `p` with the terms the CPU half declares.
pub(crate) fn cuda(p: &ModelPhysics, terms: ResidualTerms, jacobian: JacobianTerms) -> CudaPhysics {
    let d = p.dim_of();
    let nc = p.components();
    let names = cuda_names(d);
    let mut prelude = format!(
        "static __device__ __forceinline__ void ff_coef(const real* x, const real* u, \
         const real* a, real* k) {{\n  (void)x; (void)u; (void)a;\n{}}}\n",
        per_region(p, |slot| coef_statements(p, slot, &names))
    );
    prelude.push_str(&format!(
        "static __device__ __forceinline__ void ff_source(const real* x, const real* a, \
         real* f) {{\n  (void)x; (void)a;\n{}}}\n",
        per_region(p, |slot| {
            let src = &p.regions()[slot].source;
            (0..nc)
                .map(|i| {
                    let v = if p.sourced() && !src.is_empty() {
                        src[i].to_cuda(&names)
                    } else {
                        "(real)0".into()
                    };
                    format!("      f[{i}] = {v};\n")
                })
                .collect()
        })
    ));
    let coef = format!("  real k[{NK}];\n  ff_coef(x, u, a, k);\n");
    let elastic = matches!(p.kind(), ModelKind::Elasticity { .. });
    let f0 = if terms.f0 {
        format!(
            "{coef}  real f[{nc}];\n  ff_source(x, a, f);\n  \
             for (int c = 0; c < {nc}; ++c) f0[c] = {};\n",
            if elastic {
                "-f[c]"
            } else {
                "k[1] * u[c] - f[c]"
            }
        )
    } else {
        String::new()
    };
    let lame = "  const real lam = k[0];\n  const real mu = k[1];\n";
    let f1 = if elastic {
        format!("{coef}{lame}{}", hooke_stress_cuda(d))
    } else {
        format!("{coef}  for (int q = 0; q < {d}; ++q) f1[q] = k[0] * du[q];\n")
    };
    let g0 = if jacobian.g0 {
        format!("{coef}  g0[0] = k[1];\n")
    } else {
        String::new()
    };
    let g2 = if jacobian.g2 {
        format!("{coef}  for (int q = 0; q < {d}; ++q) g2[q] = k[2] * du[q];\n")
    } else {
        String::new()
    };
    let g3 = if elastic {
        format!("{coef}{lame}{}", hooke_tensor_cuda(d))
    } else {
        format!(
            "{coef}  for (int q = 0; q < {d}; ++q)\n    \
             for (int l = 0; l < {d}; ++l) g3[q * {d} + l] = q == l ? k[0] : (real)0;\n"
        )
    };
    CudaPhysics {
        name: cuda_name(&format!("model-{}", p.kind().name()), d),
        source: physics_source_with(
            &format!(
                "configured {}, dim {d}, {} region(s)",
                p.kind().name(),
                p.regions().len()
            ),
            &prelude,
            [f0, f1, g0, String::new(), g2, g3],
        ),
        dim: d,
        ncomp: nc,
        naux: usize::from(p.regions().len() > 1),
        reads_x: p.reads_x(),
        linear: Physics::<f64>::is_linear(p),
        terms,
        jacobian,
    }
}

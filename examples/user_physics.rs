//! A physics of one's own: anisotropic conduction with absorption,
//! `−∇·(K∇u) + c u = f`, written as pointwise functions (`f0 = c u − f`, `f1 = K∇u`,
//! `g0 = c`, `g3 = K`) in Rust and as CUDA C, set up on a Gmsh mesh (the two-layer wall's
//! triangles) with boundary conditions by group name, and solved through the library's
//! pipeline on the CPU and, when a GPU is usable, on the GPU (the physics inlined in the
//! residual kernels, every Krylov vector on the device). The two solutions are compared.
//!
//! `cargo run --release --example user_physics [MESH.msh]` (a 2-D mesh with boundary groups
//! `hot` and `cold`)

use ferrofem::base::Real;
use ferrofem::driver::file::{BoundaryCondition, BoundarySpec};
use ferrofem::driver::post::boundary_integrals;
use ferrofem::driver::{own_problem, select, solve_problem, BackendArg, Progress, SolveSettings};
use ferrofem::mesh::read_gmsh;
use ferrofem::physics::{Coef, CudaPhysics, JacobianTerms, Physics, Point, ResidualTerms};
use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `−∇·(K∇u) + c u = f` in 2-D with a constant symmetric positive definite `K`.
#[derive(Clone, Debug)]
struct Anisotropic {
    /// The conductivity tensor.
    k: [[f64; 2]; 2],
    /// The absorption coefficient.
    c: f64,
    /// The source.
    f: f64,
}

impl<T: Real> Physics<T> for Anisotropic {
    fn name(&self) -> &str {
        "anisotropic"
    }
    fn dim(&self) -> usize {
        2
    }
    fn ncomp(&self) -> usize {
        1
    }
    fn terms(&self) -> ResidualTerms {
        ResidualTerms { f0: true, f1: true }
    }
    fn jacobian_terms(&self) -> JacobianTerms {
        JacobianTerms {
            g0: true,
            g1: false,
            g2: false,
            g3: true,
        }
    }
    fn is_linear(&self) -> bool {
        true
    }
    fn is_symmetric(&self) -> bool {
        true
    }
    fn f0(&self, p: &Point<'_, T>, f0: &mut [T]) {
        f0[0] = T::of(self.c) * p.u[0] - T::of(self.f);
    }
    fn f1(&self, p: &Point<'_, T>, f1: &mut [T]) {
        for i in 0..2 {
            f1[i] = T::of(self.k[i][0]) * p.du[0] + T::of(self.k[i][1]) * p.du[1];
        }
    }
    fn g0(&self, _p: &Point<'_, T>, g0: &mut [T]) {
        g0[0] = T::of(self.c);
    }
    fn g3(&self, _p: &Point<'_, T>, g3: &mut [T]) {
        for i in 0..2 {
            for j in 0..2 {
                g3[i * 2 + j] = T::of(self.k[i][j]);
            }
        }
    }
    /// The same functions in CUDA C, with the fixed signature the kernels inline.
    fn cuda(&self) -> CudaPhysics {
        let [[k00, k01], [k10, k11]] = self.k;
        let (c, f) = (self.c, self.f);
        let head = |name: &str, out: &str| {
            format!(
                "static __device__ __forceinline__ void {name}(const real* x, const real* u, \
                 const real* du, const real* a, const real* da, real* {out}) {{\n  \
                 (void)x; (void)u; (void)du; (void)a; (void)da;\n"
            )
        };
        let source = format!(
            "{}  f0[0] = (real){c:e} * u[0] - (real){f:e};\n}}\n\
             {}  f1[0] = (real){k00:e} * du[0] + (real){k01:e} * du[1];\n  \
             f1[1] = (real){k10:e} * du[0] + (real){k11:e} * du[1];\n}}\n\
             {}  g0[0] = (real){c:e};\n}}\n{}  (void)g1;\n}}\n{}  (void)g2;\n}}\n\
             {}  g3[0] = (real){k00:e}; g3[1] = (real){k01:e};\n  \
             g3[2] = (real){k10:e}; g3[3] = (real){k11:e};\n}}\n",
            head("ff_f0", "f0"),
            head("ff_f1", "f1"),
            head("ff_g0", "g0"),
            head("ff_g1", "g1"),
            head("ff_g2", "g2"),
            head("ff_g3", "g3"),
        );
        CudaPhysics {
            name: "anisotropic_d2".into(),
            source,
            dim: 2,
            ncomp: 1,
            naux: 0,
            reads_x: false,
            linear: Physics::<T>::is_linear(self),
            terms: Physics::<T>::terms(self),
            jacobian: Physics::<T>::jacobian_terms(self),
        }
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let path = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/meshes/two_layers_tri.msh")
        });
    let mesh = read_gmsh(&path)?;
    let physics = Anisotropic {
        k: [[2.0, 0.6], [0.6, 1.0]],
        c: 0.5,
        f: 10.0,
    };
    let dirichlet = |v: f64| BoundaryCondition::Dirichlet(vec![Some(Coef::Const(v))]);
    let problem = own_problem(
        &mesh,
        "anisotropic",
        2,
        Arc::new(physics),
        &[
            BoundarySpec::new("hot", dirichlet(100.0)),
            BoundarySpec::new("cold", dirichlet(0.0)),
        ],
    )?;
    println!(
        "{}: {} triangles, P2, {} dofs (Dirichlet on {})",
        path.display(),
        mesh.num_cells(),
        problem.num_dofs(),
        problem.dirichlet_description()
    );
    let settings = SolveSettings {
        rtol: Some(1e-12),
        ..SolveSettings::default()
    };
    let progress = Progress::hidden();
    let mut solutions = Vec::new();
    for requested in [BackendArg::Cpu, BackendArg::Cuda] {
        let backend = match select(requested) {
            Ok(b) => b,
            Err(e) => {
                println!("{requested:?}: not run ({e})");
                continue;
            }
        };
        let s = solve_problem(&mesh, &problem, &settings, &backend, &progress)?;
        println!(
            "{}: {} iterations, {}",
            backend.name(),
            s.report.iterations,
            s.report.method
        );
        for b in boundary_integrals(&mesh, &s.problem, &s.u)? {
            if let Some(r) = &b.reaction {
                println!("  heat through {}: {:.6}", b.group, r[0]);
            }
        }
        solutions.push(s.u);
    }
    if let [cpu, gpu] = &solutions[..] {
        let diff = cpu
            .iter()
            .zip(gpu)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
            .sqrt()
            / cpu.iter().map(|a| a * a).sum::<f64>().sqrt();
        println!("GPU against CPU: relative difference {diff:.2e}");
    }
    Ok(())
}

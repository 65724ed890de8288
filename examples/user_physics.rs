//! A physics of one's own: anisotropic conduction with absorption,
//! `−∇·(K∇u) + c u = f`, written as pointwise functions (`f0 = c u − f`, `f1 = K∇u`,
//! `g0 = c`, `g3 = K`) in Rust and as CUDA C, solved on a Gmsh mesh (the two-layer wall's
//! triangles) with the engine's building blocks: Jacobi-PCG on the CPU's matrix-free form
//! operator, and, when a GPU is usable, the same solve with the physics inlined in the GPU
//! residual kernel and every vector on the device. The two solutions are compared.
//!
//! `cargo run --release --example user_physics [MESH.msh]` (a 2-D mesh with boundary groups
//! `hot` and `cold`)

use ferrofem::base::{LinearOperator, Real};
use ferrofem::mesh::{read_gmsh, Mesh};
use ferrofem::operator::{add_boundary_values, lift_residual, ConstrainedOperator, FormOperator};
use ferrofem::physics::{CudaPhysics, JacobianTerms, Physics, Point, ResidualTerms};
use ferrofem::solver::{pcg, CpuSpace, SolveOptions};
use ferrofem::space::H1Space;
use std::error::Error;
use std::path::{Path, PathBuf};

/// `−∇·(K∇u) + c u = f` in 2-D with a constant symmetric positive definite `K`.
#[derive(Clone, Debug)]
struct Anisotropic {
    /// The conductivity tensor.
    k: [[f64; 2]; 2],
    /// The absorption coefficient.
    c: f64,
    /// The source (zero for the operator alone).
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
            terms: Physics::<T>::terms(self),
            jacobian: Physics::<T>::jacobian_terms(self),
        }
    }
}

/// The nodes of the boundary groups `names` and `u = value` on them.
fn dirichlet(
    mesh: &Mesh,
    space: &H1Space,
    groups: &[(&str, f64)],
) -> Result<(Vec<u32>, Vec<f64>), Box<dyn Error>> {
    let mut g = vec![0.0; space.num_dofs()];
    let mut dofs = Vec::new();
    for &(name, value) in groups {
        let tag = mesh
            .tag_of(1, name)
            .ok_or_else(|| format!("the mesh has no boundary group {name}"))?;
        for n in space.tagged_nodes(mesh, &[tag])? {
            g[n as usize] = value;
            dofs.push(n);
        }
    }
    dofs.sort_unstable();
    dofs.dedup();
    Ok((dofs, g))
}

fn main() -> Result<(), Box<dyn Error>> {
    let path = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/meshes/two_layers_tri.msh")
        });
    let mesh = read_gmsh(&path)?;
    let space = H1Space::new(&mesh, 2, 1)?;
    let physics = Anisotropic {
        k: [[2.0, 0.6], [0.6, 1.0]],
        c: 0.5,
        f: 10.0,
    };
    let (dofs, g) = dirichlet(&mesh, &space, &[("hot", 100.0), ("cold", 0.0)])?;
    println!(
        "{}: {} triangles, P2, {} dofs ({} on the Dirichlet boundary)",
        path.display(),
        mesh.num_cells(),
        space.num_dofs(),
        dofs.len()
    );

    // CPU: the residual r(u) = A u − F of the form; solve A w = −r(g) on the free dofs for
    // the correction w = u − g (zero on the Dirichlet dofs)
    let op = FormOperator::<f64, _>::new(&mesh, &space, physics.clone())?;
    let b = lift_residual(&op, &dofs, &g)?;
    let a = ConstrainedOperator::new(op.linearize(&[]), &dofs)?;
    let diag = a.diagonal().ok_or("no diagonal")?;
    let opts = SolveOptions {
        rtol: 1e-12,
        ..SolveOptions::default()
    };
    let mut u_cpu = vec![0.0; b.len()];
    let stats = pcg(&CpuSpace::with_jacobi(&a, &diag)?, &b, &mut u_cpu, &opts)?;
    add_boundary_values(&mut u_cpu, &dofs, &g)?;
    println!(
        "CPU: Jacobi-PCG, {} iterations, max u = {:.6}",
        stats.iterations,
        u_cpu.iter().cloned().fold(f64::MIN, f64::max)
    );

    #[cfg(feature = "cuda")]
    gpu(
        &mesh, &space, &physics, &op, &dofs, &g, &b, &diag, &opts, &u_cpu,
    )?;
    Ok(())
}

/// The same solve on the GPU: the residual kernel inlines the physics' CUDA half (without
/// the source, which is in `b`), Dirichlet rows are the identity, every vector is on the
/// device.
#[cfg(feature = "cuda")]
#[allow(clippy::too_many_arguments)]
fn gpu(
    mesh: &Mesh,
    space: &H1Space,
    physics: &Anisotropic,
    op: &FormOperator<f64, Anisotropic>,
    dofs: &[u32],
    g: &[f64],
    b: &[f64],
    diag: &[f64],
    opts: &SolveOptions,
    u_cpu: &[f64],
) -> Result<(), Box<dyn Error>> {
    use ferrofem::cuda::blas::GpuBlas;
    use ferrofem::cuda::krylov::{Constrained, GpuKrylov};
    use ferrofem::cuda::residual::{Aux, GpuResidual, ResidualConfig};
    use ferrofem::cuda::{DeviceVec, GpuDevice};

    let dev = match GpuDevice::new(0) {
        Ok(dev) => dev,
        Err(e) => {
            println!("GPU: none usable ({e}); the CPU solution stands");
            return Ok(());
        }
    };
    let operator = Anisotropic {
        f: 0.0,
        ..physics.clone()
    };
    let kernel = GpuResidual::<f64>::new(
        &dev,
        mesh,
        space,
        &Physics::<f64>::cuda(&operator),
        op.rule(),
        Aux::None,
        ResidualConfig::new(),
        false,
    )?;
    let blas = GpuBlas::<f64>::new(&dev)?;
    let constrained = Constrained::new(&kernel, &blas, dofs, 1.0)?;
    let jacobi = GpuKrylov::with_jacobi(&constrained, &blas, diag)?;
    let db = DeviceVec::from_host(&dev, b, "right-hand side")?;
    let mut dx = DeviceVec::<f64>::zeros(&dev, b.len(), "solution")?;
    let stats = pcg(&jacobi, &db, &mut dx, opts)?;
    let mut u_gpu = dx.to_host()?;
    add_boundary_values(&mut u_gpu, dofs, g)?;
    let diff = u_cpu
        .iter()
        .zip(&u_gpu)
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        .sqrt()
        / u_cpu.iter().map(|a| a * a).sum::<f64>().sqrt();
    println!(
        "GPU ({}): Jacobi-PCG, {} iterations, relative difference to the CPU {diff:.2e}",
        dev.name(),
        stats.iterations
    );
    Ok(())
}

//! GPU assembly against the CPU assembly, entry by entry: every physics and strategy,
//! P1–P5 triangles and P1–P4 tetrahedra, both precisions, with and without Dirichlet
//! elimination, on generated and Gmsh meshes. Skipped (with a message) without a GPU.

use ferrofem_assembly::{AssemblyPlan, DofMap, Strategy};
use ferrofem_base::random::random_vector;
use ferrofem_base::CsrMatrix;
use ferrofem_cuda::assembly::{tested_cases, AssemblyCase, GpuAssembly, GpuStrategy};
use ferrofem_cuda::residual::{case_physics, Aux};
use ferrofem_cuda::{DeviceVec, GpuDevice, GpuError, GpuReal};
use ferrofem_mesh::{generate_box, read_gmsh_bytes, BoxSpec, Mesh};
use ferrofem_operator::{AuxField, FormOperator, FormOptions, Quadrature};
use ferrofem_space::H1Space;
use std::sync::Arc;

fn gpu() -> Option<Arc<GpuDevice>> {
    GpuDevice::for_tests()
}

/// A perturbed box of triangles or tetrahedra, several kernel blocks large.
fn generated(dim: usize) -> Mesh {
    let spec = if dim == 2 {
        "tri:12x10,perturb=0.25,seed=5"
    } else {
        "tet:5x4x4,perturb=0.25,seed=5"
    };
    generate_box(&BoxSpec::parse(spec).unwrap()).unwrap()
}

fn gmsh_tets() -> Mesh {
    read_gmsh_bytes(
        include_bytes!("../../../tests/data/gmsh/box_tet_v41_binary.msh"),
        "box_tet_v41_binary.msh",
    )
    .unwrap()
}

/// The largest difference between `got` and `want` over all entries, each relative to the
/// largest magnitude of its row in `want` (entries that cancel to zero have no relative
/// size of their own); the patterns must be identical.
fn worst_row_relative<T: GpuReal>(got: &CsrMatrix<T>, want: &CsrMatrix<f64>) -> f64 {
    assert_eq!(got.row_ptr(), want.row_ptr());
    assert_eq!(got.col_idx(), want.col_idx());
    let mut worst = 0.0f64;
    for r in 0..want.nrows() {
        let (a, z) = (want.row_ptr()[r], want.row_ptr()[r + 1]);
        let scale = want.values()[a..z]
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()))
            .max(f64::MIN_POSITIVE);
        for k in a..z {
            let d = (got.values()[k].as_f64() - want.values()[k]).abs() / scale;
            worst = worst.max(if d.is_nan() { f64::INFINITY } else { d });
        }
    }
    worst
}

/// Assembles case `c` on `mesh` on the CPU (serial, f64) and on the GPU; returns the
/// worst row-relative entry difference and the number of nonzeros.
fn compare(dev: &Arc<GpuDevice>, c: &AssemblyCase, mesh: &Mesh) -> Result<(f64, usize), GpuError> {
    let (physics, cuda, aux_kind) = case_physics(c.physics, c.dim)?;
    let space = H1Space::new(mesh, c.order, cuda.ncomp).unwrap();
    let scalar = space.with_ncomp(1).unwrap();
    let rule = c.rule()?;
    let nodal = scalar.interpolate(|x, out| out[0] = ferrofem_physics::varcoef_kappa(x));
    let cellwise: Vec<f64> = (0..mesh.num_cells())
        .map(|e| 1.0 + 0.3 * ((e * 7 % 11) as f64 / 11.0))
        .collect();
    let (aux_cpu, aux_gpu) = match aux_kind {
        1 => (
            AuxField::Nodal {
                space: &scalar,
                values: &nodal,
            },
            Aux::Nodal(&nodal),
        ),
        2 => (
            AuxField::Cellwise {
                ncomp: 1,
                values: &cellwise,
            },
            Aux::Cellwise(&cellwise),
        ),
        _ => (AuxField::None, Aux::None),
    };
    let opts = FormOptions {
        quadrature: Quadrature::Rule(rule.clone()),
        aux: aux_cpu,
        ..Default::default()
    };
    let cpu = FormOperator::<f64, _>::with_options(mesh, &space, physics, opts).unwrap();
    let map = if c.eliminate {
        let nc = space.ncomp();
        let dofs: Vec<u32> = space
            .boundary_nodes(mesh)
            .unwrap()
            .iter()
            .flat_map(|&n| (0..nc as u32).map(move |k| n * nc as u32 + k))
            .collect();
        Some(DofMap::new(space.num_dofs(), &dofs).unwrap())
    } else {
        None
    };
    let plan = AssemblyPlan::new(space.restriction(), map.as_ref()).unwrap();
    let nonlinear = c.physics == "nonlinear";
    let u = random_vector(space.num_dofs(), 11 + c.order as u64);
    let want = plan
        .assemble_matrix(&cpu, nonlinear.then_some(u.as_slice()), Strategy::Serial)
        .unwrap();
    fn on_gpu<T: GpuReal>(
        dev: &Arc<GpuDevice>,
        space: &H1Space,
        plan: &AssemblyPlan,
        cuda: &ferrofem_physics::CudaPhysics,
        nonlinear: bool,
        rule: &ferrofem_fe::QuadratureRule,
        aux: Aux<'_>,
        strategy: GpuStrategy,
        u: &[f64],
        want: &CsrMatrix<f64>,
    ) -> Result<f64, GpuError> {
        let mut asm =
            GpuAssembly::<T>::new(dev, space, plan, cuda, nonlinear, rule, aux, strategy)?;
        let uh: Vec<T> = u.iter().map(|&x| T::of(x)).collect();
        let ud = DeviceVec::from_host(dev, &uh, "state")?;
        // twice: re-assembly must overwrite, not add to, the previous values
        asm.assemble(Some(&ud))?;
        asm.assemble(Some(&ud))?;
        Ok(worst_row_relative(&asm.to_csr()?, want))
    }
    let args = (
        &space, &plan, &cuda, nonlinear, &rule, aux_gpu, c.strategy, &u, &want,
    );
    let worst = if c.f32 {
        on_gpu::<f32>(
            dev, args.0, args.1, args.2, args.3, args.4, args.5, args.6, args.7, args.8,
        )?
    } else {
        on_gpu::<f64>(
            dev, args.0, args.1, args.2, args.3, args.4, args.5, args.6, args.7, args.8,
        )?
    };
    Ok((worst, want.values().len()))
}

fn tolerance(c: &AssemblyCase) -> f64 {
    if c.f32 {
        1e-5
    } else {
        1e-12
    }
}

/// Every tested configuration on a generated perturbed mesh equals the CPU assembly.
#[test]
fn gpu_assembly_equals_the_cpu_entry_by_entry() {
    let Some(dev) = gpu() else { return };
    let cases = tested_cases();
    let threads = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .min(16);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (cases, dev) = (&cases, dev.clone());
            s.spawn(move || {
                for c in cases.iter().skip(t).step_by(threads) {
                    dev.module(&c.kernel().unwrap().spec)
                        .unwrap_or_else(|e| panic!("{e}"));
                }
            });
        }
    });
    let meshes = [generated(2), generated(3)];
    let mut failures = Vec::new();
    let (mut shared, mut shared_skipped) = (0, 0);
    for c in &cases {
        let (worst, nnz) = match compare(&dev, c, &meshes[c.dim - 2]) {
            // SharedNZ needs one row's element matrices in shared memory (the paper's
            // limit at high order)
            Err(GpuError::Unsupported(m)) if c.strategy == GpuStrategy::SharedNz => {
                eprintln!("{c:?}: {m}");
                shared_skipped += 1;
                continue;
            }
            r => r.unwrap_or_else(|e| panic!("{c:?}: {e}")),
        };
        shared += usize::from(c.strategy == GpuStrategy::SharedNz);
        assert!(nnz > 0, "{c:?}: empty matrix");
        if worst > tolerance(c) {
            failures.push(format!("{c:?}: worst row-relative difference {worst:.3e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // every low-order SharedNZ case ran (P1 and P2 fit on any mesh)
    assert!(
        shared >= 20,
        "only {shared} SharedNZ cases ran ({shared_skipped} too large)"
    );
    eprintln!(
        "{} GPU assemblies equal the CPU's ({shared_skipped} SharedNZ cases too large for shared memory)",
        cases.len() - shared_skipped
    );
}

/// On a Gmsh tetrahedral mesh, with and without elimination, every strategy, both
/// precisions, Poisson and elasticity at orders 1 and 2.
#[test]
fn gpu_assembly_equals_the_cpu_on_a_gmsh_mesh() {
    let Some(dev) = gpu() else { return };
    let mesh = gmsh_tets();
    let mut failures = Vec::new();
    for physics in ["poisson", "elasticity"] {
        for order in [1, 2] {
            for strategy in GpuStrategy::ALL {
                for f32 in [false, true] {
                    for eliminate in [false, true] {
                        let c = AssemblyCase {
                            physics,
                            dim: 3,
                            order,
                            f32,
                            strategy,
                            eliminate,
                        };
                        let (worst, _) = compare(&dev, &c, &mesh).unwrap();
                        if worst > tolerance(&c) {
                            failures.push(format!("{c:?}: {worst:.3e}"));
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A non-finite coefficient in one cell is reported as that element's error, by every
/// strategy.
#[test]
fn a_non_finite_element_matrix_is_reported_with_its_element() {
    let Some(dev) = gpu() else { return };
    let mesh = generated(3);
    let (_, cuda, _) = case_physics("poisson-varcoef-p0", 3).unwrap();
    let space = H1Space::new(&mesh, 1, 1).unwrap();
    let plan = AssemblyPlan::new(space.restriction(), None).unwrap();
    let rule = ferrofem_fe::QuadratureRule::for_degree(mesh.cell_type(), 2).unwrap();
    let mut kappa = vec![1.0; mesh.num_cells()];
    kappa[37] = f64::NAN;
    kappa[90] = f64::INFINITY;
    for strategy in GpuStrategy::ALL {
        let mut asm = GpuAssembly::<f64>::new(
            &dev,
            &space,
            &plan,
            &cuda,
            false,
            &rule,
            Aux::Cellwise(&kappa),
            strategy,
        )
        .unwrap();
        match asm.assemble(None) {
            Err(GpuError::BadElement { element, .. }) => assert_eq!(element, 37, "{strategy:?}"),
            other => panic!("{strategy:?}: expected the element's error, got {other:?}"),
        }
    }
}

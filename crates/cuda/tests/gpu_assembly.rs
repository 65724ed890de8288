//! GPU assembly against the CPU assembly, entry by entry: every physics and strategy,
//! P1–P5 triangles, P1–P4 tetrahedra, Q1–Q4 quadrilaterals and hexahedra, both precisions,
//! with and without Dirichlet elimination, on generated and Gmsh meshes. Skipped (with a
//! message) without a GPU.

use ferrofem_assembly::{AssemblyPlan, DofMap, Strategy};
use ferrofem_base::random::random_vector;
use ferrofem_base::{CellType, CsrMatrix};
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

/// A perturbed box of `cell`s, several kernel blocks large at low order (hexahedra fewer:
/// the CPU reference of Q4 elasticity is costly).
fn generated(cell: CellType) -> Mesh {
    let spec = match cell {
        CellType::Triangle => "tri:12x10,perturb=0.25,seed=5",
        CellType::Tetrahedron => "tet:5x4x4,perturb=0.25,seed=5",
        CellType::Quadrilateral => "quad:12x10,perturb=0.25,seed=5",
        CellType::Hexahedron => "hex:4x3x3,perturb=0.25,seed=5",
    };
    generate_box(&BoxSpec::parse(spec).unwrap()).unwrap()
}

fn gmsh(name: &str, bytes: &[u8]) -> Mesh {
    read_gmsh_bytes(bytes, name).unwrap()
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
    let (physics, cuda, aux_kind) = case_physics(c.physics, c.dim())?;
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
    let nonlinear = !cuda.linear;
    let u = random_vector(space.num_dofs(), 11 + c.order as u64);
    let want = plan
        .assemble_matrix(&cpu, nonlinear.then_some(u.as_slice()), Strategy::Serial)
        .unwrap();
    fn on_gpu<T: GpuReal>(
        dev: &Arc<GpuDevice>,
        space: &H1Space,
        plan: &AssemblyPlan,
        cuda: &ferrofem_physics::CudaPhysics,
        rule: &ferrofem_fe::QuadratureRule,
        aux: Aux<'_>,
        strategy: GpuStrategy,
        u: &[f64],
        want: &CsrMatrix<f64>,
    ) -> Result<f64, GpuError> {
        let mut asm = GpuAssembly::<T>::new(dev, space, plan, cuda, rule, aux, strategy)?;
        let uh: Vec<T> = u.iter().map(|&x| T::of(x)).collect();
        let ud = DeviceVec::from_host(dev, &uh, "state")?;
        // twice: re-assembly must overwrite, not add to, the previous values
        asm.assemble(Some(&ud))?;
        asm.assemble(Some(&ud))?;
        Ok(worst_row_relative(&asm.to_csr()?, want))
    }
    let args = (&space, &plan, &cuda, &rule, aux_gpu, c.strategy, &u, &want);
    let worst = if c.f32 {
        on_gpu::<f32>(
            dev, args.0, args.1, args.2, args.3, args.4, args.5, args.6, args.7,
        )?
    } else {
        on_gpu::<f64>(
            dev, args.0, args.1, args.2, args.3, args.4, args.5, args.6, args.7,
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
                    match c.kernel() {
                        Ok(k) => {
                            dev.module(&k.spec).unwrap_or_else(|e| panic!("{e}"));
                        }
                        // an element matrix beyond a block's shared memory: refused below
                        Err(GpuError::Unsupported(_))
                            if matches!(
                                c.strategy,
                                GpuStrategy::SharedNz | GpuStrategy::BlockSums
                            ) => {}
                        Err(e) => panic!("{c:?}: {e}"),
                    }
                }
            });
        }
    });
    let meshes: Vec<(CellType, Mesh)> = [
        CellType::Triangle,
        CellType::Tetrahedron,
        CellType::Quadrilateral,
        CellType::Hexahedron,
    ]
    .into_iter()
    .map(|ct| (ct, generated(ct)))
    .collect();
    let mut failures = Vec::new();
    let (mut shared, mut shared_skipped) = (0, 0);
    for c in &cases {
        let mesh = &meshes.iter().find(|(ct, _)| *ct == c.cell).unwrap().1;
        let (worst, nnz) = match compare(&dev, c, mesh) {
            // sums in shared memory need one element matrix (SharedNZ: one row's element
            // matrices) in shared memory: the paper's limit at high order
            Err(GpuError::Unsupported(m))
                if matches!(c.strategy, GpuStrategy::SharedNz | GpuStrategy::BlockSums) =>
            {
                eprintln!("{c:?}: {m}");
                // block sums hold single element matrices: every order up to 2 fits
                assert!(
                    c.strategy == GpuStrategy::SharedNz || c.order > 2,
                    "{c:?}: {m}"
                );
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
    // the low-order SharedNZ cases ran (P1 and P2 simplices fit on any mesh)
    assert!(
        shared >= 20,
        "only {shared} SharedNZ cases ran ({shared_skipped} too large)"
    );
    eprintln!(
        "{} GPU assemblies equal the CPU's ({shared_skipped} cases of sums in shared memory too large for it)",
        cases.len() - shared_skipped
    );
}

/// On Gmsh meshes of tetrahedra, quadrilaterals and hexahedra, with and without
/// elimination, every strategy, both precisions, Poisson and elasticity at orders 1 and 2.
#[test]
fn gpu_assembly_equals_the_cpu_on_gmsh_meshes() {
    let Some(dev) = gpu() else { return };
    let meshes = [
        gmsh(
            "box_tet_v41_binary.msh",
            include_bytes!("../../../tests/data/gmsh/box_tet_v41_binary.msh"),
        ),
        gmsh(
            "square_quad_v22_ascii.msh",
            include_bytes!("../../../tests/data/gmsh/square_quad_v22_ascii.msh"),
        ),
        gmsh(
            "box_hex_v41_binary.msh",
            include_bytes!("../../../tests/data/gmsh/box_hex_v41_binary.msh"),
        ),
    ];
    let mut failures = Vec::new();
    let mut ran = 0;
    for mesh in &meshes {
        for physics in ["poisson", "elasticity"] {
            for order in [1, 2] {
                for strategy in GpuStrategy::ALL {
                    for f32 in [false, true] {
                        for eliminate in [false, true] {
                            let c = AssemblyCase {
                                physics,
                                cell: mesh.cell_type(),
                                order,
                                f32,
                                strategy,
                                eliminate,
                            };
                            let worst = match compare(&dev, &c, mesh) {
                                // a row's element matrices beyond shared memory
                                Err(GpuError::Unsupported(m))
                                    if strategy == GpuStrategy::SharedNz =>
                                {
                                    eprintln!("{c:?}: {m}");
                                    continue;
                                }
                                r => r.unwrap_or_else(|e| panic!("{c:?}: {e}")).0,
                            };
                            ran += 1;
                            if worst > tolerance(&c) {
                                failures.push(format!("{c:?}: {worst:.3e}"));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(ran >= 3 * 2 * 2 * 5 * 4, "only {ran} cases ran");
}

/// A non-finite coefficient in one cell is reported as that element's error, by every
/// strategy.
#[test]
fn a_non_finite_element_matrix_is_reported_with_its_element() {
    let Some(dev) = gpu() else { return };
    let mesh = generated(CellType::Tetrahedron);
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

/// Cells whose vertex order is reversed (negative Jacobian determinant) are reported as
/// inverted, the lowest one, by every strategy, before any non-finite entry.
#[test]
fn an_inverted_element_is_reported_with_its_element() {
    let Some(dev) = gpu() else { return };
    for ct in [
        CellType::Triangle,
        CellType::Tetrahedron,
        CellType::Quadrilateral,
        CellType::Hexahedron,
    ] {
        let good = generated(ct);
        let dim = ct.dim();
        let nv = ct.num_vertices();
        // vertices 0 and 1 swapped: a reflected simplex or tensor cell
        let mut cells = good.cells().to_vec();
        for c in [31, 22] {
            cells.swap(c * nv, c * nv + 1);
        }
        let mesh = Mesh::new(good.cell_type(), good.coords().to_vec(), cells).unwrap();
        let (_, cuda, _) = case_physics("poisson", dim).unwrap();
        let space = H1Space::new(&mesh, 2, 1).unwrap();
        let plan = AssemblyPlan::new(space.restriction(), None).unwrap();
        let rule = ferrofem_fe::QuadratureRule::for_degree(mesh.cell_type(), 2).unwrap();
        for strategy in GpuStrategy::ALL {
            let mut asm =
                GpuAssembly::<f64>::new(&dev, &space, &plan, &cuda, &rule, Aux::None, strategy)
                    .unwrap();
            match asm.assemble(None) {
                Err(GpuError::BadElement { element, what }) => {
                    assert_eq!(element, 22, "{ct} {strategy:?}");
                    assert!(what.contains("inverted"), "{ct} {strategy:?}: {what}");
                }
                other => {
                    panic!("{ct} {strategy:?}: expected the element's error, got {other:?}")
                }
            }
        }
    }
}

/// The device SpMV (every lane-group width), diagonal and right-hand-side gather on an
/// assembled matrix equal their host counterparts.
#[test]
fn device_csr_kernels_equal_the_host() {
    let Some(dev) = gpu() else { return };
    use ferrofem_base::LinearOperator;
    use ferrofem_cuda::sparse::GpuCsr;
    // rows of about 7 (P1 triangles), 15 (P1 tetrahedra), 27 (P2 triangles elasticity) and
    // 80 (P2 tetrahedra elasticity) entries: lane groups of 4, 8, 16 and 32
    for (dim, order, physics) in [
        (2, 1, "poisson"),
        (3, 1, "poisson"),
        (2, 2, "elasticity"),
        (3, 2, "elasticity"),
    ] {
        let mesh = generated(if dim == 2 {
            CellType::Triangle
        } else {
            CellType::Tetrahedron
        });
        let (_, cuda, _) = case_physics(physics, dim).unwrap();
        let space = H1Space::new(&mesh, order, cuda.ncomp).unwrap();
        let nc = space.ncomp();
        let dofs: Vec<u32> = space
            .boundary_nodes(&mesh)
            .unwrap()
            .iter()
            .flat_map(|&n| (0..nc as u32).map(move |k| n * nc as u32 + k))
            .collect();
        let map = DofMap::new(space.num_dofs(), &dofs).unwrap();
        let plan = AssemblyPlan::new(space.restriction(), Some(&map)).unwrap();
        let rule = ferrofem_fe::QuadratureRule::for_degree(mesh.cell_type(), 2 * order).unwrap();
        let mut asm = GpuAssembly::<f64>::new(
            &dev,
            &space,
            &plan,
            &cuda,
            &rule,
            Aux::None,
            GpuStrategy::Atomic,
        )
        .unwrap();
        asm.assemble(None).unwrap();
        let a = asm.to_csr().unwrap();
        let p = plan.pattern();
        let csr = GpuCsr::<f64>::new(&dev, p.row_ptr(), p.col_idx()).unwrap();
        let n = a.nrows();
        let x = random_vector(n, 3);
        let mut want = vec![0.0; n];
        a.apply(&x, &mut want);
        let xd = DeviceVec::from_host(&dev, &x, "x").unwrap();
        let mut yd = DeviceVec::<f64>::zeros(&dev, n, "y").unwrap();
        csr.spmv(asm.values(), &xd, &mut yd).unwrap();
        let y = yd.to_host().unwrap();
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let worst = y
            .iter()
            .zip(&want)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(
            worst <= 1e-13 * scale,
            "{dim}-D P{order} {physics}: SpMV off by {worst:e}"
        );
        let mut dd = DeviceVec::<f64>::zeros(&dev, n, "diag").unwrap();
        csr.diagonal(asm.values(), &mut dd).unwrap();
        assert_eq!(dd.to_host().unwrap(), a.diagonal().unwrap());
        // -r at the free dofs
        let r = random_vector(space.num_dofs(), 4);
        let rd = DeviceVec::from_host(&dev, &r, "r").unwrap();
        let free = DeviceVec::from_host(&dev, map.free(), "free dofs").unwrap();
        let mut bd = DeviceVec::<f64>::zeros(&dev, n, "rhs").unwrap();
        csr.gather_negated(&free, &rd, &mut bd).unwrap();
        let want_b: Vec<f64> = map.free().iter().map(|&d| -r[d as usize]).collect();
        assert_eq!(bd.to_host().unwrap(), want_b);
        // a wrong length is an error, not a read past the end
        let short = DeviceVec::<f64>::zeros(&dev, n - 1, "short").unwrap();
        assert!(csr.spmv(asm.values(), &short, &mut yd).is_err());
    }
}

/// The paper's Table VI on our meshes: the average relative error of the entries of the
/// system (matrix and right-hand side with the boundary values lifted), single precision
/// on the device against double precision on the host,
/// `(Σ_ij |A^s_ij − A^d_ij| / |A^d_ij| + Σ_i |F^s_i − F^d_i| / |F^d_i|) / (nnz + n)`,
/// for every strategy on a Gmsh triangle mesh of the unit square (44 cells) and its
/// uniform refinements up to 2.9·10⁶ cells: Poisson
/// with a forcing, `u = 200` on `x = 0` and `u = 10` on `x = 1`, natural conditions
/// elsewhere. The right-hand side on the device is `−r(g)` at the free dofs, the
/// residual kernel at the lifted boundary values. Strategies agree, and the error grows
/// like `1/h` from the truncation of the coordinates, as the paper found.
#[test]
fn single_precision_system_error_table() {
    let Some(dev) = gpu() else { return };
    use ferrofem_cuda::residual::{GpuResidual, ResidualConfig};
    use ferrofem_cuda::sparse::GpuCsr;
    let (_, cuda, _) = case_physics("poisson-forced", 2).unwrap();
    let mut rows = Vec::new();
    let coarse = read_gmsh_bytes(
        include_bytes!("../../../tests/data/gmsh/square_tri_v41_binary.msh"),
        "square_tri_v41_binary.msh",
    )
    .unwrap();
    for levels in 0..=8 {
        let mesh = coarse.refined(levels).unwrap();
        let space = H1Space::new(&mesh, 1, 1).unwrap();
        let x = space.node_coords();
        let mut dofs = Vec::new();
        let mut g = vec![0.0; space.num_dofs()];
        for m in 0..space.num_nodes() {
            if x[2 * m] <= 1e-12 {
                dofs.push(m as u32);
                g[m] = 200.0;
            } else if x[2 * m] >= 1.0 - 1e-12 {
                dofs.push(m as u32);
                g[m] = 10.0;
            }
        }
        let map = DofMap::new(space.num_dofs(), &dofs).unwrap();
        let plan = AssemblyPlan::new(space.restriction(), Some(&map)).unwrap();
        let rule = ferrofem_fe::QuadratureRule::for_degree(mesh.cell_type(), 4).unwrap();
        let opts = FormOptions {
            quadrature: Quadrature::Rule(rule.clone()),
            ..Default::default()
        };
        let phys: Box<dyn ferrofem_physics::Physics<f64>> =
            case_physics("poisson-forced", 2).unwrap().0;
        let cpu = FormOperator::<f64, _>::with_options(&mesh, &space, phys, opts).unwrap();
        let a_d = plan.assemble_matrix(&cpu, None, Strategy::Serial).unwrap();
        let mut r = vec![0.0; space.num_dofs()];
        cpu.residual(&g, &mut r);
        let f_d: Vec<f64> = map.free().iter().map(|&d| -r[d as usize]).collect();
        // the right-hand side in single precision on the device
        let res = GpuResidual::<f32>::new(
            &dev,
            &mesh,
            &space,
            &cuda,
            &rule,
            Aux::None,
            ResidualConfig::new().for_physics(&cuda),
            false,
        )
        .unwrap();
        let p = plan.pattern();
        let csr = GpuCsr::<f32>::new(&dev, p.row_ptr(), p.col_idx()).unwrap();
        let g32: Vec<f32> = g.iter().map(|&v| v as f32).collect();
        let gd = DeviceVec::from_host(&dev, &g32, "lifted boundary values").unwrap();
        let mut rd = DeviceVec::<f32>::zeros(&dev, space.num_dofs(), "residual").unwrap();
        res.apply(&gd, &mut rd).unwrap();
        let free = DeviceVec::from_host(&dev, map.free(), "free dofs").unwrap();
        let mut fd = DeviceVec::<f32>::zeros(&dev, map.free().len(), "rhs").unwrap();
        csr.gather_negated(&free, &rd, &mut fd).unwrap();
        let f_s = fd.to_host().unwrap();
        let rel = |s: f64, d: f64| (s - d).abs() / d.abs();
        let f_sum: f64 = f_s
            .iter()
            .zip(&f_d)
            .filter(|(_, &d)| d != 0.0)
            .map(|(&s, &d)| rel(s as f64, d))
            .sum();
        let mut errors = Vec::new();
        for strategy in GpuStrategy::ALL {
            let mut asm =
                GpuAssembly::<f32>::new(&dev, &space, &plan, &cuda, &rule, Aux::None, strategy)
                    .unwrap();
            asm.assemble(None).unwrap();
            let a_s = asm.to_csr().unwrap();
            let a_sum: f64 = a_s
                .values()
                .iter()
                .zip(a_d.values())
                .filter(|(_, &d)| d != 0.0)
                .map(|(&s, &d)| rel(s as f64, d))
                .sum();
            errors.push((a_sum + f_sum) / (a_d.values().len() + f_d.len()) as f64);
        }
        rows.push((space.num_nodes(), mesh.num_cells(), errors));
    }
    let names: Vec<&str> = GpuStrategy::ALL.iter().map(|s| s.name()).collect();
    eprintln!("nodes, elements | {}", names.join(" | "));
    for (nodes, cells, e) in &rows {
        let cols: Vec<String> = e.iter().map(|v| format!("{v:.1e}")).collect();
        eprintln!("{nodes}, {cells} | {}", cols.join(" | "));
    }
    for (nodes, _, e) in &rows {
        let (lo, hi) = e
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(l, h), &v| (l.min(v), h.max(v)));
        // the strategies sum the same f32 entries in different orders
        assert!(hi <= 1.5 * lo, "{nodes} nodes: strategies disagree, {e:?}");
        // single precision's unit round-off times the inverse mesh size, within a factor
        let h = 1.0 / (*nodes as f64).sqrt();
        assert!(
            hi <= 20.0 * f32::EPSILON as f64 / h,
            "{nodes} nodes: {hi:e}"
        );
    }
    // grows with refinement: h is 256 times smaller on the finest mesh
    let (first, last) = (rows[0].2[0], rows[rows.len() - 1].2[0]);
    assert!(last >= 16.0 * first, "{first:e} -> {last:e}");
}

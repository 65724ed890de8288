//! Assembly on real meshes with a P1 Laplacian computed directly from vertex coordinates:
//! agreement of all strategies with a dense reference, the exact coupling pattern,
//! symmetry and zero row sums, Dirichlet elimination (patch test, equivalence with the
//! full system), f32 against f64, error reporting; plus a hand-run benchmark (ignored).

use ferrofem_assembly::{
    assemble_matrix, assemble_system, assemble_vector, AssemblyError, AssemblyPlan, Dirichlet,
    DofMap, ElementColoring, SparsityPattern, Strategy,
};
use ferrofem_base::{CsrMatrix, Real};
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_operator::ElementMatrices;
use ferrofem_space::{ElemRestriction, H1Space};
use std::collections::HashSet;
use std::time::Instant;

/// The P1 stiffness matrix `K_e = |T| Gᵀ G` of the Laplacian (`G` the gradients of the
/// barycentric coordinates), as a Kronecker product `M ⊗ K_e` with a symmetric positive
/// definite component coupling `M` for vector fields. With `nonlinear`, the matrix of
/// element `e` is scaled by `1 + ū_e²` (ū_e the mean of the element state).
struct P1Laplace {
    r: ElemRestriction,
    coords: Vec<f64>,
    dim: usize,
    coupling: Vec<f64>,
    nonlinear: bool,
    nan_element: Option<usize>,
}

impl P1Laplace {
    fn new(space: &H1Space) -> P1Laplace {
        let nc = space.ncomp();
        // M = I + 0.5 (all ones): SPD, couples every pair of components
        let coupling = (0..nc * nc)
            .map(|q| if q / nc == q % nc { 1.5 } else { 0.5 })
            .collect();
        P1Laplace {
            r: space.restriction().clone(),
            coords: space.node_coords().to_vec(),
            dim: space.dim(),
            coupling,
            nonlinear: false,
            nan_element: None,
        }
    }

    /// `|T|` and the gradients of the `d + 1` barycentric coordinates of element `e`.
    fn geometry(&self, e: usize) -> (f64, [[f64; 3]; 4]) {
        let d = self.dim;
        let nodes = self.r.elem(e);
        let x = |v: usize, k: usize| self.coords[nodes[v] as usize * d + k];
        // J[k][m] = x_{m+1,k} - x_{0,k}; gradients of λ_1..λ_d are the rows of J⁻¹
        let mut j = [[0.0; 3]; 3];
        for k in 0..d {
            for m in 0..d {
                j[k][m] = x(m + 1, k) - x(0, k);
            }
        }
        let (det, inv) = if d == 2 {
            let det = j[0][0] * j[1][1] - j[0][1] * j[1][0];
            let inv = [
                [j[1][1] / det, -j[0][1] / det, 0.0],
                [-j[1][0] / det, j[0][0] / det, 0.0],
                [0.0; 3],
            ];
            (det, inv)
        } else {
            let c = |a: usize, b: usize| {
                let (a1, a2) = ((a + 1) % 3, (a + 2) % 3);
                let (b1, b2) = ((b + 1) % 3, (b + 2) % 3);
                j[a1][b1] * j[a2][b2] - j[a1][b2] * j[a2][b1]
            };
            let det = j[0][0] * c(0, 0) + j[0][1] * c(0, 1) + j[0][2] * c(0, 2);
            let mut inv = [[0.0; 3]; 3];
            for a in 0..3 {
                for b in 0..3 {
                    inv[a][b] = c(b, a) / det;
                }
            }
            (det, inv)
        };
        let mut grads = [[0.0; 3]; 4];
        for m in 0..d {
            for k in 0..d {
                grads[m + 1][k] = inv[m][k];
                grads[0][k] -= inv[m][k];
            }
        }
        let fact = if d == 2 { 2.0 } else { 6.0 };
        (det.abs() / fact, grads)
    }

    /// Writes the element matrix (row-major, `n = ncomp * (d + 1)`) without allocating.
    fn fill<T: Real>(&self, e: usize, u_e: Option<&[T]>, k: &mut [T]) {
        let (vol, g) = self.geometry(e);
        let s = self.dim + 1;
        let nc = self.r.ncomp();
        let n = nc * s;
        let scale = match (self.nonlinear, u_e) {
            (true, Some(u)) => {
                let mean = u.iter().map(|v| v.as_f64()).sum::<f64>() / u.len() as f64;
                1.0 + mean * mean
            }
            _ => 1.0,
        };
        for a in 0..s {
            for b in 0..s {
                let dot: f64 = (0..self.dim).map(|q| g[a][q] * g[b][q]).sum();
                let kab = scale * vol * dot;
                for c in 0..nc {
                    for c2 in 0..nc {
                        k[(c * s + a) * n + c2 * s + b] = T::of(self.coupling[c * nc + c2] * kab);
                    }
                }
            }
        }
        if self.nan_element == Some(e) {
            k[1] = T::of(f64::NAN);
        }
    }

    /// The element matrix in f64.
    fn matrix_f64(&self, e: usize, u_e: Option<&[f64]>) -> Vec<f64> {
        let n = self.r.ncomp() * (self.dim + 1);
        let mut k = vec![0.0; n * n];
        self.fill(e, u_e, &mut k);
        k
    }
}

impl<T: Real> ElementMatrices<T> for P1Laplace {
    fn restriction(&self) -> &ElemRestriction {
        &self.r
    }
    fn element_matrix(&self, e: usize, u_e: Option<&[T]>, out: &mut [T]) {
        self.fill(e, u_e, out);
    }
    fn is_symmetric(&self) -> bool {
        true
    }
}

fn mesh(spec: &str) -> Mesh {
    generate_box(&BoxSpec::parse(spec).unwrap()).unwrap()
}

/// Dense reference: `Σ_e` of the element matrices at their global dofs.
fn dense_reference(p: &P1Laplace, u: Option<&[f64]>) -> Vec<Vec<f64>> {
    let r = &p.r;
    let (s, nc) = (r.elem_size(), r.ncomp());
    let n = nc * s;
    let nd = r.lvec_len();
    let mut a = vec![vec![0.0; nd]; nd];
    let mut ue = vec![0.0; n];
    for e in 0..r.num_elem() {
        let u_e = u.map(|u| {
            r.gather_elem(e, u, &mut ue);
            ue.as_slice()
        });
        let k = p.matrix_f64(e, u_e);
        let dof = |i: usize| r.elem(e)[i % s] as usize * nc + i / s;
        for i in 0..n {
            for j in 0..n {
                a[dof(i)][dof(j)] += k[i * n + j];
            }
        }
    }
    a
}

fn max_abs(m: &CsrMatrix<f64>) -> f64 {
    m.values().iter().fold(0.0, |a, v| a.max(v.abs()))
}

/// Largest entry difference between `m` and a dense matrix, over all entries (entries
/// outside the pattern count as zero).
fn diff_to_dense(m: &CsrMatrix<f64>, d: &[Vec<f64>]) -> f64 {
    let mut worst: f64 = 0.0;
    for (i, row) in d.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            worst = worst.max((m.get(i, j) - v).abs());
        }
    }
    worst
}

/// Unpreconditioned conjugate gradients to a relative residual of `tol`.
fn cg(a: &CsrMatrix<f64>, b: &[f64], tol: f64) -> Vec<f64> {
    let n = b.len();
    let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>();
    let mut x = vec![0.0; n];
    let mut r = b.to_vec();
    let mut p = r.clone();
    let mut ap = vec![0.0; n];
    let mut rr = dot(&r, &r);
    let stop = tol * tol * rr.max(f64::MIN_POSITIVE);
    for _ in 0..10 * n + 100 {
        if rr <= stop {
            break;
        }
        a.matvec(&p, &mut ap);
        let alpha = rr / dot(&p, &ap);
        for i in 0..n {
            x[i] += alpha * p[i];
            r[i] -= alpha * ap[i];
        }
        let rr_new = dot(&r, &r);
        for i in 0..n {
            p[i] = r[i] + rr_new / rr * p[i];
        }
        rr = rr_new;
    }
    x
}

fn boundary_dofs(space: &H1Space, m: &Mesh) -> Vec<u32> {
    space.node_dofs(&space.boundary_nodes(m).unwrap(), None)
}

#[test]
fn strategies_agree_with_dense_reference() {
    for (spec, nc) in [("tet:3x3x2,perturb=0.2", 1), ("tri:5x4,perturb=0.25", 2)] {
        let m = mesh(spec);
        let space = H1Space::new(&m, 1, nc).unwrap();
        let p = P1Laplace::new(&space);
        let dense = dense_reference(&p, None);
        let plan = AssemblyPlan::new(space.restriction(), None).unwrap();
        let serial = plan.assemble_matrix(&p, None, Strategy::Serial).unwrap();
        let scale = max_abs(&serial);
        assert!(diff_to_dense(&serial, &dense) <= 1e-14 * scale, "{spec}");
        for s in Strategy::ALL {
            let a = plan.assemble_matrix(&p, None, s).unwrap();
            assert_eq!(a.row_ptr(), serial.row_ptr());
            assert_eq!(a.col_idx(), serial.col_idx());
            assert!(diff_to_dense(&a, &dense) <= 1e-14 * scale, "{spec} {s:?}");
            if s != Strategy::Colored {
                // same summation order as the serial loop
                assert_eq!(a.values(), serial.values(), "{spec} {s:?}");
            }
        }
        // by-row in batches of one, two and seven elements
        for bytes in [
            1,
            2 * 8 * plan.element_matrix_size().pow(2),
            7 * 8 * plan.element_matrix_size().pow(2),
        ] {
            let small = AssemblyPlan::new(space.restriction(), None)
                .unwrap()
                .with_batch_bytes(bytes);
            let a: CsrMatrix<f64> = small.assemble_matrix(&p, None, Strategy::ByRow).unwrap();
            assert_eq!(a.values(), serial.values(), "{spec} batch bytes {bytes}");
        }
    }
}

#[test]
fn linearisation_state_is_gathered_per_element() {
    let m = mesh("tri:4x3,perturb=0.2");
    let space = H1Space::new(&m, 1, 2).unwrap();
    let mut p = P1Laplace::new(&space);
    p.nonlinear = true;
    let u = space.interpolate(|x, out| {
        out[0] = x[0] - 2.0 * x[1];
        out[1] = 3.0 * x[0] * x[1];
    });
    let dense = dense_reference(&p, Some(&u));
    let linear = dense_reference(&p, None);
    assert!(dense[5][5] != linear[5][5]);
    for s in Strategy::ALL {
        let a = assemble_matrix(&p, Some(&u), None, s).unwrap();
        assert!(diff_to_dense(&a, &dense) <= 1e-14 * max_abs(&a), "{s:?}");
    }
    assert!(matches!(
        assemble_matrix(&p, Some(&u[1..]), None, Strategy::default()),
        Err(AssemblyError::LengthMismatch { .. })
    ));
}

#[test]
fn pattern_has_exactly_the_couplings() {
    for (spec, nc, interior_degree) in [
        ("tri:6x5", 1, 7),
        ("tri:4x4", 2, 7),
        ("tet:4x3x3", 1, 15),
        ("quad:3x3", 1, 9),
    ] {
        let m = mesh(spec);
        let space = H1Space::new(&m, 1, nc).unwrap();
        let r = space.restriction();
        let p = SparsityPattern::new(r).unwrap();
        // reference node couplings from the element lists, by hashing
        let mut pairs = HashSet::new();
        for e in 0..r.num_elem() {
            for &a in r.elem(e) {
                for &b in r.elem(e) {
                    pairs.insert((a, b));
                }
            }
        }
        assert_eq!(p.nnz(), pairs.len() * nc * nc, "{spec}");
        for row in 0..p.nrows() {
            let cols = p.row(row);
            assert!(cols.windows(2).all(|w| w[0] < w[1]));
            let node = (row / nc) as u32;
            for &c in cols {
                assert!(pairs.contains(&(node, c / nc as u32)));
            }
            // interior nodes of the structured grid
            let x = space.node_coord(node as usize);
            if x.iter().all(|&v| v > 1e-12 && v < 1.0 - 1e-12) {
                assert_eq!(cols.len(), interior_degree * nc, "{spec} node {node}");
            }
        }
        // CsrMatrix accepts it as a valid structure
        let z = p.zeros::<f64>();
        assert!(CsrMatrix::new(
            z.nrows(),
            z.ncols(),
            z.row_ptr().to_vec(),
            z.col_idx().to_vec(),
            z.values().to_vec()
        )
        .is_ok());
    }
}

#[test]
fn neumann_stiffness_is_symmetric_with_zero_row_sums() {
    for (spec, nc) in [("tet:4x4x4,perturb=0.3", 1), ("tri:8x6,perturb=0.3", 2)] {
        let m = mesh(spec);
        let space = H1Space::new(&m, 1, nc).unwrap();
        let p = P1Laplace::new(&space);
        let a = assemble_matrix(&p, None, None, Strategy::default()).unwrap();
        assert!(a.asymmetry() <= 1e-15, "{spec}");
        let scale = max_abs(&a);
        for r in 0..a.nrows() {
            let (_, v) = a.row(r);
            assert!(
                v.iter().sum::<f64>().abs() <= 1e-13 * scale,
                "{spec} row {r}"
            );
            assert!(a.get(r, r) > 0.0);
        }
    }
}

#[test]
fn patch_test_reproduces_linear_functions() {
    for (spec, nc) in [
        ("tri:7x6,perturb=0.3", 1),
        ("tet:4x5x3,perturb=0.3", 1),
        ("tri:6x6,perturb=0.3", 2),
    ] {
        let m = mesh(spec);
        let space = H1Space::new(&m, 1, nc).unwrap();
        let p = P1Laplace::new(&space);
        let exact = space.interpolate(|x, out| {
            for (c, o) in out.iter_mut().enumerate() {
                *o = 1.0 + c as f64 + 0.5 * x[0] - 1.25 * x[1]
                    + x.get(2).copied().unwrap_or(0.0) * 2.0;
            }
        });
        let bc =
            Dirichlet::from_full(space.num_dofs(), &boundary_dofs(&space, &m), &exact).unwrap();
        assert!(bc.map().num_free() > 0);
        for s in [
            Strategy::Serial,
            Strategy::Colored,
            Strategy::ByRow,
            Strategy::ByNonzero,
        ] {
            let sys = assemble_system(&p, None, None, &bc, s).unwrap();
            assert_eq!(sys.matrix.nrows(), bc.map().num_free());
            let x = cg(&sys.matrix, &sys.rhs, 1e-14);
            let u = bc.expand(&x).unwrap();
            let err = u
                .iter()
                .zip(&exact)
                .fold(0.0f64, |a, (u, e)| a.max((u - e).abs()));
            assert!(err <= 1e-10, "{spec} {s:?}: error {err}");
        }
    }
}

#[test]
fn reduced_system_is_the_full_system_with_dofs_moved() {
    for (spec, nc) in [("tri:6x5,perturb=0.2", 2), ("tet:3x3x3,perturb=0.2", 1)] {
        let m = mesh(spec);
        let space = H1Space::new(&m, 1, nc).unwrap();
        let p = P1Laplace::new(&space);
        let nd = space.num_dofs();
        // constrain the xmin side only (component 0 only for vector fields)
        let nodes = space.boundary_nodes_where(&m, |x| x[0] < 1e-12).unwrap();
        let dofs = space.node_dofs(&nodes, Some(&[0]));
        let g: Vec<f64> = dofs
            .iter()
            .map(|&d| 0.3 + (d as f64 * 0.37).sin())
            .collect();
        let bc = Dirichlet::new(nd, &dofs, g).unwrap();
        let load = |e: usize, out: &mut [f64]| {
            for (i, o) in out.iter_mut().enumerate() {
                *o = 1.0 + 0.1 * ((e * 7 + i) % 5) as f64;
            }
        };
        let full = assemble_system(
            &p,
            None,
            Some(&load),
            &Dirichlet::none(nd).unwrap(),
            Strategy::Serial,
        )
        .unwrap();
        let gf = bc.full_values();
        let mut ag = vec![0.0; nd];
        full.matrix.matvec(&gf, &mut ag);
        let free = bc.map().free();
        let scale = max_abs(&full.matrix);
        let small_batches = AssemblyPlan::new(space.restriction(), Some(bc.map()))
            .unwrap()
            .with_batch_bytes(1000);
        let batched = small_batches
            .assemble_system(&p, None, Some(&load), &bc, Strategy::ByRow)
            .unwrap();
        let serial = assemble_system(&p, None, Some(&load), &bc, Strategy::Serial).unwrap();
        assert_eq!(batched, serial);
        for s in Strategy::ALL {
            let red = assemble_system(&p, None, Some(&load), &bc, s).unwrap();
            let a = &red.matrix;
            assert_eq!(a.nrows(), free.len());
            let mut kept = 0;
            for (ri, &fi) in free.iter().enumerate() {
                let (cols, _) = full.matrix.row(fi as usize);
                kept += cols
                    .iter()
                    .filter(|&&c| {
                        bc.map().reduced_of()[c as usize] != ferrofem_assembly::CONSTRAINED
                    })
                    .count();
                for (rj, &fj) in free.iter().enumerate() {
                    let d = (a.get(ri, rj) - full.matrix.get(fi as usize, fj as usize)).abs();
                    assert!(d <= 1e-14 * scale, "{spec} {s:?}");
                }
                let expect = full.rhs[fi as usize] - ag[fi as usize];
                assert!(
                    (red.rhs[ri] - expect).abs() <= 1e-13 * (1.0 + expect.abs()),
                    "{spec} {s:?} row {ri}"
                );
            }
            assert_eq!(a.nnz(), kept);
        }
        // with no boundary values, the full rhs is the assembled load vector
        let b = assemble_vector(space.restriction(), load).unwrap();
        for (x, y) in b.iter().zip(&full.rhs) {
            assert!((x - y).abs() <= 1e-14 * (1.0 + x.abs()));
        }
    }
}

#[test]
fn load_vector_integrates_a_constant() {
    let m = mesh("tet:3x4x2,perturb=0.3");
    let space = H1Space::new(&m, 1, 1).unwrap();
    let p = P1Laplace::new(&space);
    // ∫ φ_i = |T| / 4 per element; the sum over all nodes is the volume of the unit cube
    let b = assemble_vector(space.restriction(), |e, out: &mut [f64]| {
        let (vol, _) = p.geometry(e);
        out.iter_mut().for_each(|o| *o = vol / 4.0);
    })
    .unwrap();
    assert!((b.iter().sum::<f64>() - 1.0).abs() <= 1e-13);
}

#[test]
fn single_precision_matches_double() {
    let m = mesh("tet:4x4x3,perturb=0.25");
    let space = H1Space::new(&m, 1, 1).unwrap();
    let p = P1Laplace::new(&space);
    let bc = Dirichlet::<f64>::homogeneous(space.num_dofs(), &boundary_dofs(&space, &m)).unwrap();
    let a64 = assemble_matrix::<f64, _>(&p, None, Some(bc.map()), Strategy::ByRow).unwrap();
    let scale = max_abs(&a64);
    for s in Strategy::ALL {
        let a32 = assemble_matrix::<f32, _>(&p, None, Some(bc.map()), s).unwrap();
        assert_eq!(a32.col_idx(), a64.col_idx());
        for (x, y) in a32.values().iter().zip(a64.values()) {
            assert!((x.as_f64() - y).abs() <= 2e-6 * scale, "{s:?}");
        }
    }
}

#[test]
fn mesh_colouring_drives_the_coloured_strategy() {
    let m = mesh("tet:4x4x4,perturb=0.2");
    let space = H1Space::new(&m, 1, 1).unwrap();
    let p = P1Laplace::new(&space);
    let col = m.color_cells();
    let ec =
        ElementColoring::new(space.restriction(), col.offsets.clone(), col.cells.clone()).unwrap();
    assert_eq!(ec.num_colors(), col.num_colors);
    let plan = AssemblyPlan::new(space.restriction(), None)
        .unwrap()
        .with_coloring(ec)
        .unwrap();
    let a = plan.assemble_matrix(&p, None, Strategy::Colored).unwrap();
    let b = plan.assemble_matrix(&p, None, Strategy::Serial).unwrap();
    let scale = max_abs(&b);
    for (x, y) in a.values().iter().zip(b.values()) {
        assert!((x - y).abs() <= 1e-14 * scale);
    }
    // a colouring that puts neighbours together is refused
    let ne = m.num_cells() as u32;
    let all_one = ElementColoring::new(space.restriction(), vec![0, ne], (0..ne).collect());
    assert!(matches!(all_one, Err(AssemblyError::InvalidColoring(_))));
    // the greedy colouring is valid
    assert!(ElementColoring::greedy(space.restriction())
        .validate(space.restriction())
        .is_ok());
}

#[test]
fn errors_name_what_is_wrong() {
    let m = mesh("tri:4x4");
    let space = H1Space::new(&m, 1, 1).unwrap();
    let mut p = P1Laplace::new(&space);
    p.nan_element = Some(5);
    for s in Strategy::ALL {
        let err = assemble_matrix::<f64, _>(&p, None, None, s).unwrap_err();
        assert!(
            matches!(
                err,
                AssemblyError::NonFiniteElementMatrix {
                    element: 5,
                    row: 0,
                    col: 1,
                    ..
                }
            ),
            "{s:?}: {err}"
        );
        assert!(err.to_string().contains("element 5"));
    }
    p.nan_element = None;
    let nd = space.num_dofs();
    let bdofs = boundary_dofs(&space, &m);
    let plan =
        AssemblyPlan::new(space.restriction(), Some(&DofMap::new(nd, &bdofs).unwrap())).unwrap();
    // boundary conditions on another set of dofs
    let other = Dirichlet::<f64>::homogeneous(nd, &bdofs[1..]).unwrap();
    assert_eq!(
        plan.assemble_system(&p, None, None, &other, Strategy::Serial)
            .unwrap_err(),
        AssemblyError::DofMapMismatch
    );
    // a matrix of another pattern
    let mut wrong = SparsityPattern::new(space.restriction())
        .unwrap()
        .zeros::<f64>();
    assert_eq!(
        plan.assemble_matrix_into(&p, None, Strategy::Serial, &mut wrong)
            .unwrap_err(),
        AssemblyError::PatternMismatch
    );
    // element matrices on a different mesh
    let q = P1Laplace::new(&H1Space::new(&mesh("tri:4x5"), 1, 1).unwrap());
    assert!(matches!(
        plan.assemble_matrix::<f64, _>(&q, None, Strategy::Serial),
        Err(AssemblyError::RestrictionMismatch(_))
    ));
    // bad element vector
    let bc = Dirichlet::<f64>::homogeneous(nd, &bdofs).unwrap();
    let load = |e: usize, out: &mut [f64]| out[2] = if e == 3 { f64::INFINITY } else { 1.0 };
    for s in Strategy::ALL {
        assert!(matches!(
            plan.assemble_system(&p, None, Some(&load), &bc, s),
            Err(AssemblyError::NonFiniteElementVector {
                element: 3,
                entry: 2,
                ..
            })
        ));
    }
    // reassembly into the plan's own matrix works and overwrites
    let mut a = plan
        .assemble_matrix::<f64, _>(&p, None, Strategy::Serial)
        .unwrap();
    let first = a.clone();
    plan.assemble_matrix_into(&p, None, Strategy::ByRow, &mut a)
        .unwrap();
    assert_eq!(a, first);
}

/// A cheap element matrix `c_e (n I - 1 1ᵀ)` (symmetric, zero row sums), so that a
/// benchmark measures the summation into CSR rather than the element kernel.
struct Synthetic {
    r: ElemRestriction,
}

impl ElementMatrices<f64> for Synthetic {
    fn restriction(&self) -> &ElemRestriction {
        &self.r
    }
    fn element_matrix(&self, e: usize, _u: Option<&[f64]>, out: &mut [f64]) {
        let n = self.r.ncomp() * self.r.elem_size();
        let c = 1.0 + 0.1 * (e % 7) as f64;
        for i in 0..n {
            for j in 0..n {
                out[i * n + j] = if i == j { c * (n as f64 - 1.0) } else { -c };
            }
        }
    }
    fn is_symmetric(&self) -> bool {
        true
    }
}

/// Times every strategy on one problem (median of 7 after one warm-up run).
fn bench_problem<E: ElementMatrices<f64>>(label: &str, m: &Mesh, space: &H1Space, em: &E) {
    let t = Instant::now();
    let plan = AssemblyPlan::new(space.restriction(), None).unwrap();
    let t_plan = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let greedy = plan.coloring().num_colors();
    let t_greedy = t.elapsed().as_secs_f64();
    let col = m.color_cells();
    let balanced =
        ElementColoring::new(space.restriction(), col.offsets.clone(), col.cells.clone()).unwrap();
    let plan_bal = AssemblyPlan::new(space.restriction(), None)
        .unwrap()
        .with_coloring(balanced)
        .unwrap();
    let plan_4m = AssemblyPlan::new(space.restriction(), None)
        .unwrap()
        .with_batch_bytes(4 << 20);
    let t = Instant::now();
    let _ = plan.assemble_matrix(em, None, Strategy::ByNonzero).unwrap();
    let t_lists = t.elapsed().as_secs_f64();
    let n = plan.element_matrix_size();
    println!(
        "{label}: {} elements, {} dofs, nnz {}, element matrix {n}x{n}; plan {:.1} ms, \
         greedy colouring {greedy} colours {:.1} ms, balanced {} colours; first by-nonzero (with lists) {:.1} ms",
        m.num_cells(),
        space.num_dofs(),
        plan.pattern().nnz(),
        t_plan * 1e3,
        t_greedy * 1e3,
        col.num_colors,
        t_lists * 1e3
    );
    let mut buf = vec![0.0f64; n * n];
    let t = Instant::now();
    for e in 0..m.num_cells() {
        em.element_matrix(e, None, &mut buf);
    }
    println!(
        "  element matrices alone, 1 thread: {:.2} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let reference = plan.assemble_matrix(em, None, Strategy::Serial).unwrap();
    let scale = max_abs(&reference);
    let plan_all = AssemblyPlan::new(space.restriction(), None)
        .unwrap()
        .with_batch_bytes(usize::MAX);
    let variants = [
        ("serial", &plan, Strategy::Serial),
        ("colored (greedy)", &plan, Strategy::Colored),
        ("colored (balanced)", &plan_bal, Strategy::Colored),
        ("by-row (4 MiB batches)", &plan_4m, Strategy::ByRow),
        ("by-row (32 MiB, default)", &plan, Strategy::ByRow),
        ("by-row (one batch)", &plan_all, Strategy::ByRow),
        ("by-nonzero", &plan, Strategy::ByNonzero),
    ];
    let mut mats: Vec<CsrMatrix<f64>> = variants
        .iter()
        .map(|(_, pl, _)| pl.pattern().zeros())
        .collect();
    let mut times = vec![Vec::new(); variants.len()];
    // rounds interleave the variants, so that drifting machine load hits all alike
    for round in 0..6 {
        for (v, (_, pl, s)) in variants.iter().enumerate() {
            for _ in 0..2 {
                let t = Instant::now();
                pl.assemble_matrix_into(em, None, *s, &mut mats[v]).unwrap();
                if round > 0 {
                    times[v].push(t.elapsed().as_secs_f64());
                }
            }
        }
    }
    for (v, (name, _, _)) in variants.iter().enumerate() {
        let worst = mats[v]
            .values()
            .iter()
            .zip(reference.values())
            .fold(0.0f64, |w, (x, y)| w.max((x - y).abs()));
        assert!(worst <= 1e-13 * scale, "{label} {name}");
        let ts = &mut times[v];
        ts.sort_by(f64::total_cmp);
        println!(
            "  {name:<24} median {:8.2} ms  min {:8.2} ms",
            ts[ts.len() / 2] * 1e3,
            ts[0] * 1e3
        );
    }
}

/// Hand-run benchmark of the strategies:
/// `cargo test --release -p ferrofem-assembly --test integration -- --ignored --nocapture assembly::bench`
/// (`FERROFEM_BENCH_N` sets the grid size, default 32; `RAYON_NUM_THREADS` the threads).
#[test]
#[ignore]
fn bench_strategies() {
    let n: usize = std::env::var("FERROFEM_BENCH_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(32);
    println!("threads: {}", rayon::current_num_threads());
    let m = mesh(&format!("tet:{n}x{n}x{n}"));
    for nc in [1, 3] {
        let space = H1Space::new(&m, 1, nc).unwrap();
        bench_problem(
            &format!("P1 tet {n}^3, Laplacian, ncomp {nc}"),
            &m,
            &space,
            &P1Laplace::new(&space),
        );
    }
    let h = n / 2;
    let m = mesh(&format!("hex:{h}x{h}x{h}"));
    let space = H1Space::new(&m, 2, 1).unwrap();
    let em = Synthetic {
        r: space.restriction().clone(),
    };
    bench_problem(
        &format!("Q2 hex {h}^3, synthetic matrices, ncomp 1"),
        &m,
        &space,
        &em,
    );
}

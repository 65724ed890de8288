//! Space tests: dof counts, shared-dof orientation, polynomial reproduction, boundary dofs.

use ferrofem_base::CellType;
use ferrofem_fe::LagrangeElement;
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_space::{H1Space, SlotOrder};

use ferrofem_base::random::Lcg as Rng;

fn boxmesh(spec: &str) -> Mesh {
    generate_box(&BoxSpec::parse(spec).unwrap()).unwrap()
}

/// Local vertex permutations of a reference cell under which a cell is the same
/// geometric object: any permutation for simplices, the 8/48 symmetries of the square/cube.
fn random_symmetry(ct: CellType, rng: &mut Rng) -> Vec<usize> {
    let nv = ct.num_vertices();
    if ct.is_simplex() {
        let mut p: Vec<usize> = (0..nv).collect();
        for i in (1..nv).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            p.swap(i, j);
        }
        p
    } else {
        let d = ct.dim();
        let mut axes: Vec<usize> = (0..d).collect();
        if rng.next_u64() % 2 == 1 {
            axes.swap(0, 1);
        }
        if d == 3 && rng.next_u64() % 2 == 1 {
            axes.swap(1, 2);
        }
        let flip = rng.next_u64() as usize % (1 << d);
        // new vertex v takes old vertex whose bit axes[a] equals bit a of v xor flip
        (0..nv)
            .map(|v| {
                let mut old = 0;
                for a in 0..d {
                    let bit = ((v >> a) & 1) ^ ((flip >> a) & 1);
                    old |= bit << axes[a];
                }
                old
            })
            .collect()
    }
}

fn permute_cells(mesh: &Mesh, seed: u64) -> Mesh {
    let ct = mesh.cell_type();
    let mut rng = Rng::new(seed);
    let mut cells = Vec::with_capacity(mesh.cells().len());
    for c in 0..mesh.num_cells() {
        let perm = random_symmetry(ct, &mut rng);
        let cell = mesh.cell(c);
        cells.extend(perm.iter().map(|&k| cell[k]));
    }
    Mesh::new(ct, mesh.coords().to_vec(), cells).unwrap()
}

fn closed_form_nodes(ct: CellType, n: usize, p: usize) -> usize {
    (p * n + 1).pow(ct.dim() as u32)
}

fn orders(ct: CellType) -> std::ops::RangeInclusive<usize> {
    match ct {
        CellType::Triangle => 1..=LagrangeElement::max_order(ct),
        CellType::Tetrahedron => 1..=LagrangeElement::max_order(ct),
        CellType::Quadrilateral => 1..=10,
        CellType::Hexahedron => 1..=8,
    }
}

fn spec(ct: CellType, n: usize, extra: &str) -> String {
    let dims = vec![n.to_string(); ct.dim()].join("x");
    format!("{}:{dims}{extra}", ct.name())
}

#[test]
fn dof_counts_match_closed_forms() {
    for ct in CellType::ALL {
        let n = if ct.dim() == 2 { 5 } else { 3 };
        let mesh = boxmesh(&spec(ct, n, ",perturb=0.2,seed=3"));
        for p in orders(ct) {
            let s = H1Space::new(&mesh, p, 1).unwrap();
            assert_eq!(s.num_nodes(), closed_form_nodes(ct, n, p), "{ct} p={p}");
            let v = s.with_ncomp(ct.dim()).unwrap();
            assert_eq!(v.num_dofs(), ct.dim() * closed_form_nodes(ct, n, p));
            // every node is used
            let m = s.restriction().multiplicity();
            assert!(m.iter().all(|&k| k > 0));
        }
    }
}

/// Values of the element interpolant at reference points, from the gathered E-vector.
fn eval_elem(el: &LagrangeElement, evec: &[f64], pts: &[f64]) -> Vec<f64> {
    let t = el.tabulate(pts).unwrap();
    let nb = el.num_nodes();
    (0..t.num_points)
        .map(|q| (0..nb).map(|b| t.values[q * nb + b] * evec[b]).sum())
        .collect()
}

fn map_points(mesh: &Mesh, c: usize, pts: &[f64]) -> Vec<f64> {
    let ct = mesh.cell_type();
    let d = ct.dim();
    let geo = LagrangeElement::new(ct, 1).unwrap();
    let t = geo.tabulate(pts).unwrap();
    let nv = geo.num_nodes();
    let cell = mesh.cell(c);
    let mut x = vec![0.0; t.num_points * d];
    for q in 0..t.num_points {
        for v in 0..nv {
            let xv = mesh.vertex(cell[v] as usize);
            for k in 0..d {
                x[q * d + k] += t.values[q * nv + v] * xv[k];
            }
        }
    }
    x
}

fn reference_samples(ct: CellType, n: usize, rng: &mut Rng) -> Vec<f64> {
    let d = ct.dim();
    let mut pts = Vec::new();
    while pts.len() < n * d {
        let x: Vec<f64> = (0..d).map(|_| rng.next_f64()).collect();
        if ct.is_simplex() {
            if x.iter().sum::<f64>() < 1.0 {
                pts.extend(x);
            }
        } else {
            pts.extend(x.iter().map(|c| 2.0 * c - 1.0));
        }
    }
    pts
}

/// Random polynomial of total degree `p` in `d` variables, evaluated at `x`.
fn poly(p: usize, d: usize, coef: &[f64], x: &[f64]) -> f64 {
    let mut k = 0;
    let mut sum = 0.0;
    for a in 0..=p {
        for b in 0..=p - a {
            if d == 2 {
                sum += coef[k] * x[0].powi(a as i32) * x[1].powi(b as i32);
                k += 1;
            } else {
                for c in 0..=p - a - b {
                    sum +=
                        coef[k] * x[0].powi(a as i32) * x[1].powi(b as i32) * x[2].powi(c as i32);
                    k += 1;
                }
            }
        }
    }
    sum
}

/// Interpolates a random global polynomial of degree p, restricts it to every element and
/// checks that the element interpolant reproduces it at random points. Any inconsistency
/// in shared edge/face numbering shows up as a wrong value.
fn check_polynomial_reproduction(mesh: &Mesh, p: usize, seed: u64) {
    let ct = mesh.cell_type();
    let d = ct.dim();
    let s = H1Space::new(mesh, p, 1).unwrap();
    let mut rng = Rng::new(seed);
    let coef: Vec<f64> = (0..200).map(|_| rng.next_f64() - 0.5).collect();
    let l = s.interpolate(|x, out| out[0] = poly(p, d, &coef, x));
    let r = s.restriction();
    let mut ev = vec![0.0; r.elem_size()];
    let pts = reference_samples(ct, 4, &mut rng);
    let mut worst: f64 = 0.0;
    for c in 0..mesh.num_cells() {
        r.gather_elem(c, &l, &mut ev);
        let vals = eval_elem(s.element(), &ev, &pts);
        let xs = map_points(mesh, c, &pts);
        for q in 0..vals.len() {
            let exact = poly(p, d, &coef, &xs[q * d..(q + 1) * d]);
            worst = worst.max((vals[q] - exact).abs());
        }
    }
    assert!(worst < 1e-9, "{ct} p={p}: max error {worst:e}");
}

/// Affine image of a structured mesh (so polynomials stay in Q_p) with random local
/// orientation of every cell.
fn affine_mesh(ct: CellType, n: usize, seed: u64) -> Mesh {
    let base = if ct.is_simplex() {
        boxmesh(&spec(ct, n, &format!(",perturb=0.25,seed={seed}")))
    } else {
        let mut m = boxmesh(&spec(ct, n, ""));
        let d = ct.dim();
        for x in m.coords_mut().chunks_exact_mut(d) {
            let (a, b) = (x[0], x[1]);
            x[0] = 1.3 * a + 0.4 * b + 0.1;
            x[1] = -0.2 * a + 0.9 * b;
            if d == 3 {
                let c = x[2];
                x[2] = 0.3 * a + 0.1 * b + 1.1 * c;
                x[0] += 0.2 * c;
            }
        }
        m
    };
    permute_cells(&base, seed + 1000)
}

#[test]
fn global_polynomials_restrict_exactly_with_random_orientations() {
    for ct in CellType::ALL {
        let n = if ct.dim() == 2 { 3 } else { 2 };
        for p in orders(ct) {
            let mesh = affine_mesh(ct, n, 17 + p as u64);
            check_polynomial_reproduction(&mesh, p, 5 + p as u64);
        }
    }
}

#[test]
fn evector_matches_local_nodes_on_perturbed_multilinear_meshes() {
    // On non-affine cells polynomials are not reproduced, but every gathered value must be
    // the function at the node's physical position as this cell maps it.
    for ct in CellType::ALL {
        let n = if ct.dim() == 2 { 4 } else { 3 };
        let mesh = permute_cells(&boxmesh(&spec(ct, n, ",perturb=0.3,seed=9")), 77);
        for p in orders(ct) {
            let s = H1Space::new(&mesh, p, 2).unwrap();
            let f = |x: &[f64], out: &mut [f64]| {
                out[0] = (1.3 * x[0]).sin() + x[1] * x[1] + x.get(2).map_or(0.0, |z| z.cos());
                out[1] = x[0] * x[1] - x.get(2).copied().unwrap_or(0.5);
            };
            let l = s.interpolate(f);
            let r = s.restriction();
            let mut ev = vec![0.0; 2 * r.elem_size()];
            for c in 0..mesh.num_cells() {
                r.gather_elem(c, &l, &mut ev);
                let xs = map_points(&mesh, c, s.element().nodes());
                let d = ct.dim();
                for i in 0..r.elem_size() {
                    let mut want = [0.0; 2];
                    f(&xs[i * d..(i + 1) * d], &mut want);
                    for comp in 0..2 {
                        let got = ev[comp * r.elem_size() + i];
                        assert!(
                            (got - want[comp]).abs() < 1e-12,
                            "{ct} p={p} cell {c} node {i}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn boundary_and_tagged_nodes() {
    for ct in CellType::ALL {
        let n = if ct.dim() == 2 { 4 } else { 3 };
        let d = ct.dim() as u32;
        let mesh = boxmesh(&spec(ct, n, ",perturb=0.2,seed=1"));
        for p in 1..=3 {
            let s = H1Space::new(&mesh, p, 1).unwrap();
            let m = p * n;
            let all = s.boundary_nodes(&mesh).unwrap();
            assert_eq!(all.len(), (m + 1).pow(d) - (m - 1).pow(d), "{ct} p={p}");
            for x in all.iter().map(|&k| s.node_coord(k as usize)) {
                assert!(x
                    .iter()
                    .any(|&c| c.abs() < 1e-12 || (c - 1.0).abs() < 1e-12));
            }
            let xmin = mesh.tag_of(ct.dim() - 1, "xmin").unwrap();
            let side = s.tagged_nodes(&mesh, &[xmin]).unwrap();
            assert_eq!(side.len(), (m + 1).pow(d - 1));
            assert!(side
                .iter()
                .all(|&k| s.node_coord(k as usize)[0].abs() < 1e-12));
            let pred = s
                .boundary_nodes_where(&mesh, |x| x[0].abs() < 1e-12)
                .unwrap();
            assert_eq!(pred, side);
            assert!(s.tagged_nodes(&mesh, &[999]).is_err());
            let v = s.with_ncomp(3).unwrap();
            let dofs = v.node_dofs(&side, Some(&[1]));
            assert_eq!(dofs.len(), side.len());
            assert!(dofs.iter().all(|&q| q % 3 == 1));
        }
    }
}

#[test]
fn gmsh_meshes_number_consistently() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/gmsh");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        panic!("test meshes missing in {}", dir.display());
    };
    let mut tested = 0;
    for e in entries.flatten() {
        let path = e.path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with(".msh") || !name.contains("v41_ascii") {
            continue;
        }
        let mesh = ferrofem_mesh::read_gmsh(&path).unwrap();
        let ct = mesh.cell_type();
        let maxp = if ct.dim() == 3 { 3 } else { 4 };
        for p in 1..=maxp {
            // simplices are affine; the Gmsh quad/hex test meshes are transfinite boxes
            // whose cells are parallelograms, so polynomials are reproduced there too
            check_polynomial_reproduction(&mesh, p, 40 + p as u64);
        }
        tested += 1;
    }
    assert!(
        tested >= 2,
        "expected Gmsh 4.1 ASCII test meshes in {}",
        dir.display()
    );
}

#[test]
fn interior_last_numbering_is_a_consistent_permutation() {
    for ct in CellType::ALL {
        let n = if ct.dim() == 2 { 3 } else { 2 };
        let mesh = permute_cells(&boxmesh(&spec(ct, n, ",perturb=0.2,seed=4")), 5);
        for p in 1..=4 {
            let s = H1Space::new(&mesh, p, 1).unwrap();
            let (t, new_of) = s.interior_last_with_map();
            assert_eq!(
                t.restriction().offsets(),
                s.interior_last().restriction().offsets()
            );
            // the map carries every element's nodes (and coordinates) to the new numbering
            // and is a permutation
            for (o, &nw) in s
                .restriction()
                .offsets()
                .iter()
                .zip(t.restriction().offsets())
            {
                assert_eq!(new_of[*o as usize], nw, "{ct} p={p}");
                assert_eq!(s.node_coord(*o as usize), t.node_coord(nw as usize));
            }
            let mut seen = vec![false; new_of.len()];
            new_of.iter().for_each(|&n| seen[n as usize] = true);
            assert!(seen.iter().all(|&b| b), "{ct} p={p}: not a permutation");
            let nskel = t.skeleton_nodes().unwrap();
            let el = t.element();
            let interior: Vec<usize> = (0..el.num_nodes())
                .filter(|&i| el.node_entity(i).dim == ct.dim())
                .collect();
            assert_eq!(
                nskel + mesh.num_cells() * interior.len(),
                t.num_nodes(),
                "{ct} p={p}"
            );
            for c in 0..mesh.num_cells() {
                let en = t.restriction().elem(c);
                for (k, &l) in interior.iter().enumerate() {
                    assert_eq!(en[l] as usize, nskel + c * interior.len() + k);
                }
                for l in (0..el.num_nodes()).filter(|l| !interior.contains(l)) {
                    assert!((en[l] as usize) < nskel);
                }
            }
            // skeleton nodes are numbered by owner (the first element touching them), so
            // each element's owned nodes are one range, the ranges in element order
            let mut owner = vec![usize::MAX; nskel];
            for c in 0..mesh.num_cells() {
                for &n in t.restriction().elem(c) {
                    if (n as usize) < nskel && owner[n as usize] == usize::MAX {
                        owner[n as usize] = c;
                    }
                }
            }
            assert!(owner.iter().all(|&o| o != usize::MAX), "{ct} p={p}");
            assert!(
                owner.windows(2).all(|w| w[0] <= w[1]),
                "{ct} p={p}: not by owner"
            );
            // same function, same element values: the renumbering is a relabelling
            let f = |x: &[f64], out: &mut [f64]| out[0] = x.iter().map(|v| v.sin()).sum();
            let (a, b) = (s.interpolate(f), t.interpolate(f));
            let mut ea = vec![0.0; el.num_nodes()];
            let mut eb = vec![0.0; el.num_nodes()];
            for c in 0..mesh.num_cells() {
                s.restriction().gather_elem(c, &a, &mut ea);
                t.restriction().gather_elem(c, &b, &mut eb);
                assert_eq!(ea, eb);
            }
        }
    }
}

#[test]
fn brick_numbering_is_a_consistent_permutation_with_computed_interiors() {
    // (and columns longer than 8 elements along z, as the lattice kernel walks in steps)
    let cases = [
        (
            [4, 2, 6],
            vec![[1, 1, 1], [2, 1, 1], [2, 2, 1], [1, 2, 2], [2, 2, 2]],
        ),
        ([2, 2, 12], vec![[2, 2, 12], [1, 2, 12]]),
    ];
    for (grid, shapes) in cases {
        let base = boxmesh(&format!(
            "hex:{}x{}x{},perturb=0.2,seed=4",
            grid[0], grid[1], grid[2]
        ));
        for shape in shapes {
            let mut mesh = base.clone();
            mesh.sort_cells_in_bricks(grid, shape).unwrap();
            for (p, slot_order) in (1..=4)
                .flat_map(|p| [SlotOrder::Lexicographic, SlotOrder::Ring].map(move |o| (p, o)))
            {
                let s = H1Space::new(&mesh, p, 1).unwrap();
                let (t, new_of) = s.bricked_in(shape, slot_order).unwrap();
                let l = t.brick_layout().unwrap();
                assert_eq!((l.shape, l.order, l.slots), (shape, p, slot_order));
                let mut seen = vec![false; new_of.len()];
                new_of.iter().for_each(|&n| seen[n as usize] = true);
                assert!(
                    seen.iter().all(|&b| b),
                    "{shape:?} p={p}: not a permutation"
                );
                assert_renumbered(&s, &t, &new_of);
                // every element node sits where the layout says: interiors computed, boundary
                // nodes below the skeleton count and equal to the skeleton offsets
                let (epb, nib, nskel) = (l.elems(), l.interior_per_brick(), l.skeleton_nodes);
                let ngroups = mesh.num_cells() / epb;
                assert_eq!(nskel + ngroups * nib, t.num_nodes());
                let slots = l.skeleton_positions();
                let off = t.brick_skeleton_offsets().unwrap();
                assert_eq!(off.len(), ngroups * slots.len());
                // and the full restriction rebuilt from them
                assert_eq!(l.element_offsets(&off), t.restriction().offsets());
                let n = p + 1;
                for g in 0..ngroups {
                    for le in 0..epb {
                        let at = l.element_of(le);
                        let en = t.restriction().elem(g * epb + le);
                        for k in 0..n {
                            for j in 0..n {
                                for i in 0..n {
                                    let pos = [at[0] * p + i, at[1] * p + j, at[2] * p + k];
                                    let dof = en[(k * n + j) * n + i] as usize;
                                    if l.on_boundary(pos) {
                                        let sl = slots.iter().position(|&q| q == pos).unwrap();
                                        assert_eq!(off[g * slots.len() + sl] as usize, dof);
                                        assert!(dof < nskel);
                                    } else {
                                        assert_eq!(dof, nskel + g * nib + l.interior_index(pos));
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn ring_slots_put_each_owners_boundary_run_under_consecutive_columns() {
    // A brick inside a Morton-ordered box numbered in ring slot order: at every level, the
    // columns of each of its sides meet consecutive numbers of the side's owner, which is
    // what lets a warp's loads and atomic adds of the brick boundary fall in few sectors.
    let grid = [8, 8, 4];
    for (shape, p) in [([2, 2, 1], 3), ([4, 4, 2], 2), ([2, 1, 1], 2)] {
        let mut mesh = boxmesh("hex:8x8x4,perturb=0.1,seed=3");
        mesh.sort_cells_in_bricks_ordered(grid, shape, true)
            .unwrap();
        let s = H1Space::new(&mesh, p, 1).unwrap();
        let t = s.bricked_in(shape, SlotOrder::Ring).unwrap().0;
        let l = t.brick_layout().unwrap();
        let [nx, ny, nz] = l.dims();
        let cols = l.columns();
        // a permutation of the columns, the ring first
        let mut seen = vec![false; nx * ny];
        cols.iter().for_each(|c| seen[c[1] * nx + c[0]] = true);
        assert!(seen.iter().all(|&b| b) && cols.len() == nx * ny);
        let nring = 2 * (nx + ny) - 4;
        assert!(cols[..nring].iter().all(|c| l.on_boundary([c[0], c[1], 1])));
        assert!(cols[nring..]
            .iter()
            .all(|c| !l.on_boundary([c[0], c[1], 1])));
        // the brick at (1, 1, 1) in bricks: all its neighbours exist
        let nb = [grid[0] / shape[0], grid[1] / shape[1], grid[2] / shape[2]];
        let epb = l.elems();
        let first_cell = (0..mesh.num_cells())
            .step_by(epb)
            .find(|&c| {
                let x = mesh.cell(c)[0] as usize;
                let v = mesh.coords()[x * 3..x * 3 + 3].to_vec();
                let h = [1.0 / nb[0] as f64, 1.0 / nb[1] as f64, 1.0 / nb[2] as f64];
                (0..3).all(|a| ((v[a] / h[a]) - 1.0).abs() < 0.3)
            })
            .expect("the brick at (1, 1, 1)");
        let g = first_cell / epb;
        let off = t.brick_skeleton_offsets().unwrap();
        let slots = l.skeleton_positions();
        let dof = |pos: [usize; 3]| {
            off[g * slots.len() + slots.iter().position(|&q| q == pos).unwrap()] as i64
        };
        // the sides in ring order: x = nx - 1 and y = ny - 1 (own, one run), x = 0, y = 0
        let sides = [
            (0, (ny - 1) + (nx - 2)),
            (ny - 1 + nx - 2, ny - 1),
            (2 * (ny - 1) + nx - 2, nx - 1),
        ];
        for k in 1..nz - 1 {
            for &(start, len) in &sides {
                let run: Vec<i64> = cols[start..start + len]
                    .iter()
                    .map(|c| dof([c[0], c[1], k]))
                    .collect();
                assert!(
                    run.windows(2).all(|w| w[1] == w[0] + 1),
                    "{shape:?} p={p} level {k}: side at rank {start} is not one run: {run:?}"
                );
            }
        }
        // and on the bottom face, the own sides and the inner columns are the lower
        // brick's one run
        let run: Vec<i64> = cols[..ny - 1 + nx - 2]
            .iter()
            .chain(&cols[nring..])
            .map(|c| dof([c[0], c[1], 0]))
            .collect();
        assert!(
            run.windows(2).all(|w| w[1] == w[0] + 1),
            "{shape:?} p={p}: bottom face not one run"
        );
    }
}

#[test]
fn brick_numbering_refuses_elements_that_are_not_bricks() {
    // the generator's lexicographic order: consecutive pairs are x-neighbours, but groups
    // of four are a row, not a 2x2 brick
    let mesh = boxmesh("hex:4x2x2");
    let s = H1Space::new(&mesh, 2, 1).unwrap();
    assert!(s.bricked([2, 1, 1]).is_ok());
    let e = s.bricked([2, 2, 1]).unwrap_err().to_string();
    assert!(e.contains("do not form"), "{e}");
    // not whole bricks, and shapes out of range
    assert!(H1Space::new(&boxmesh("hex:3x2x2"), 2, 1)
        .unwrap()
        .bricked([2, 1, 1])
        .is_err());
    assert!(s.bricked([0, 1, 1]).is_err());
    let e = s
        .bricked([1, 1, ferrofem_space::MAX_BRICK_ELEMS + 1])
        .unwrap_err()
        .to_string();
    assert!(e.contains("1 to 32"), "{e}");
    // not hexahedra
    let tets = H1Space::new(&boxmesh("tet:2x2x2"), 1, 1).unwrap();
    assert!(tets.bricked([2, 1, 1]).is_err());
}

/// `t` is `s` renumbered by `new_of`: every element slot holds the renumbered node, at the
/// same place.
fn assert_renumbered(s: &H1Space, t: &H1Space, new_of: &[u32]) {
    for (o, &nw) in s
        .restriction()
        .offsets()
        .iter()
        .zip(t.restriction().offsets())
    {
        assert_eq!(new_of[*o as usize], nw);
        assert_eq!(s.node_coord(*o as usize), t.node_coord(nw as usize));
    }
}

/// A file mesh whose cells share no axes (Gmsh's all-hexahedra subdivision of a plate with a
/// hole) is not bricks, but refined uniformly and its children sorted per parent it is: the
/// lattice numbering's own checks pass, for every shape that divides the children's block,
/// and the renumbered restriction holds the same nodes at the same places.
#[test]
fn a_refined_file_mesh_numbers_per_brick() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/gmsh/plate_hole_hex_v41_binary.msh");
    let coarse = ferrofem_mesh::read_gmsh(&path).unwrap();
    let s = H1Space::new(&coarse, 2, 1).unwrap();
    assert!(
        s.bricked([2, 1, 1]).is_err(),
        "unrefined cells are not bricks"
    );
    let fine = coarse.refined(1).unwrap();
    for shape in [[2, 2, 1], [2, 2, 2], [1, 2, 2], [2, 1, 1]] {
        let mut mesh = fine.clone();
        mesh.sort_cells_in_bricks_by_block([2, 2, 2], shape)
            .unwrap();
        for p in [1, 3] {
            let s = H1Space::new(&mesh, p, 1).unwrap();
            for slots in [SlotOrder::Lexicographic, SlotOrder::Ring] {
                let (t, new_of) = s.bricked_in(shape, slots).unwrap();
                assert_eq!(t.num_dofs(), s.num_dofs());
                assert_renumbered(&s, &t, &new_of);
            }
        }
    }
}

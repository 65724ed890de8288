//! Space tests: dof counts, shared-dof orientation, polynomial reproduction, boundary dofs.

use ferrofem_base::CellType;
use ferrofem_fe::LagrangeElement;
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_space::H1Space;

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

/// A numbering computed outside the space (here a random one) relabels the nodes: every
/// element slot holds the renumbered node at the same coordinates, interpolants agree, and
/// the result claims no interior-last layout.
#[test]
fn renumbered_relabels_nodes_and_coordinates() {
    let mesh = boxmesh("hex:3x2x2,perturb=0.2,seed=6");
    let s = H1Space::new(&mesh, 2, 1).unwrap().interior_last();
    let n = s.num_nodes();
    let mut rng = Rng::new(11);
    let mut new_of: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        new_of.swap(i, j);
    }
    let t = s.renumbered(&new_of);
    assert_eq!((t.num_nodes(), t.skeleton_nodes()), (n, None));
    for (o, &nw) in s
        .restriction()
        .offsets()
        .iter()
        .zip(t.restriction().offsets())
    {
        assert_eq!(new_of[*o as usize], nw);
        assert_eq!(s.node_coord(*o as usize), t.node_coord(nw as usize));
    }
    let f = |x: &[f64], out: &mut [f64]| out[0] = x[0] - 2.0 * x[1] * x[2];
    let (a, b) = (s.interpolate(f), t.interpolate(f));
    for (old, &new) in new_of.iter().enumerate() {
        assert_eq!(a[old], b[new as usize]);
    }
}

#[test]
#[should_panic(expected = "permutation")]
fn renumbered_refuses_a_map_that_repeats_a_node() {
    let s = H1Space::new(&boxmesh("hex:2x1x1"), 1, 1).unwrap();
    let mut new_of: Vec<u32> = (0..s.num_nodes() as u32).collect();
    new_of[1] = 0;
    s.renumbered(&new_of);
}

#[test]
fn facet_nodes_of_the_boundary_facets_are_the_boundary_nodes() {
    for spec in ["tri:3x2", "quad:3x2", "tet:2x2x1", "hex:2x1x2"] {
        let mesh = boxmesh(spec);
        let space = H1Space::new(&mesh, 2, 1).unwrap();
        let facets = mesh.boundary_facets();
        assert_eq!(
            space.facet_nodes(&mesh, &facets).unwrap(),
            space.boundary_nodes(&mesh).unwrap(),
            "{spec}"
        );
        // one facet: its closure's nodes, (p + 1)^(d - 1) on tensor cells
        let one = space.facet_nodes(&mesh, &facets[..1]).unwrap();
        let expected = match mesh.cell_type() {
            CellType::Triangle | CellType::Quadrilateral => 3,
            CellType::Tetrahedron => 6,
            CellType::Hexahedron => 9,
        };
        assert_eq!(one.len(), expected, "{spec}");
        let nf = mesh.cell_type().num_facets() as u8;
        assert!(matches!(
            space.facet_nodes(&mesh, &[(0, nf)]),
            Err(ferrofem_space::SpaceError::FacetOutOfRange { .. })
        ));
        assert!(space
            .facet_nodes(&mesh, &[(mesh.num_cells() as u32, 0)])
            .is_err());
    }
}

//! Point location on generated boxes of every cell type: random reference points mapped
//! out and found again, vertices, edges and faces, points outside the mesh and in a hole,
//! and a timing printout for 1e5 points in 1e5 cells.

use ferrofem_base::random::Lcg;
use ferrofem_base::CellType;
use ferrofem_geometry::{CellMap, Located, PointLocator, LOCATE_TOLERANCE};
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};

fn boxmesh(spec: &str) -> Mesh {
    generate_box(&BoxSpec::parse(spec).unwrap()).unwrap()
}

/// Perturbed (non-affine for quads and hexes) boxes of every cell type.
const PERTURBED: [&str; 4] = [
    "tri:7x5,perturb=0.3,seed=1",
    "quad:7x5,perturb=0.3,seed=1,min=-1:2,max=2:3",
    "tet:4x3x3,perturb=0.3,seed=1",
    "hex:4x3x2,perturb=0.3,seed=1,min=0:0:-1,max=1:2:0.5",
];

/// A uniform random point of the reference cell (strictly inside, almost surely).
fn reference_point(ct: CellType, rng: &mut Lcg) -> [f64; 3] {
    let d = ct.dim();
    let mut xi = [0.0; 3];
    loop {
        for k in 0..d {
            xi[k] = rng.next_f64();
        }
        if ct.is_tensor() {
            for t in &mut xi[..d] {
                *t = 2.0 * *t - 1.0;
            }
            return xi;
        }
        if xi[..d].iter().sum::<f64>() < 1.0 {
            return xi;
        }
    }
}

/// Distance of `xi` outside the reference cell in units of its edge length (0 inside).
fn outside_reference(ct: CellType, xi: &[f64; 3]) -> f64 {
    let d = ct.dim();
    if ct.is_simplex() {
        let sum: f64 = xi[..d].iter().sum();
        xi[..d]
            .iter()
            .map(|&t| -t)
            .chain([sum - 1.0])
            .fold(0.0, f64::max)
    } else {
        xi[..d]
            .iter()
            .map(|&t| 0.5 * (t.abs() - 1.0))
            .fold(0.0, f64::max)
    }
}

/// Smallest distance of `xi` to the reference cell's boundary, in reference edge lengths.
fn depth_inside(ct: CellType, xi: &[f64; 3]) -> f64 {
    let d = ct.dim();
    if ct.is_simplex() {
        let sum: f64 = xi[..d].iter().sum();
        xi[..d]
            .iter()
            .copied()
            .chain([1.0 - sum])
            .fold(1.0, f64::min)
    } else {
        xi[..d]
            .iter()
            .map(|&t| 0.5 * (1.0 - t.abs()))
            .fold(1.0, f64::min)
    }
}

/// Diagonal of the bounding box of cell `c`'s vertices.
fn cell_size(mesh: &Mesh, c: usize) -> f64 {
    let d = mesh.dim();
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for &v in mesh.cell(c) {
        let x = mesh.vertex(v as usize);
        for k in 0..d {
            lo[k] = lo[k].min(x[k]);
            hi[k] = hi[k].max(x[k]);
        }
    }
    (0..d).map(|k| (hi[k] - lo[k]).powi(2)).sum::<f64>().sqrt()
}

/// Checks that `found` maps back to `x` and lies in its reference cell within tolerance.
fn assert_maps_back(map: &CellMap, x: &[f64], found: Located, rel: f64) {
    let mesh = map.mesh();
    let ct = mesh.cell_type();
    let d = mesh.dim();
    let y = map.map_point(found.cell, &found.xi[..d]).unwrap();
    let err = (0..d).map(|k| (y[k] - x[k]).powi(2)).sum::<f64>().sqrt();
    let size = cell_size(mesh, found.cell);
    assert!(
        err <= rel * size,
        "{ct}: x {x:?} found in cell {} at {:?}, which maps to {y:?} (error {err:e})",
        found.cell,
        found.xi
    );
    assert!(
        outside_reference(ct, &found.xi) <= LOCATE_TOLERANCE * (1.0 + 1e-6),
        "{ct}: xi {:?} outside the reference cell",
        found.xi
    );
    assert!(found.xi[d..].iter().all(|&t| t == 0.0));
}

#[test]
fn random_reference_points_are_found_in_their_cell() {
    let mut rng = Lcg::new(11);
    for spec in PERTURBED {
        let mesh = boxmesh(spec);
        let ct = mesh.cell_type();
        let d = mesh.dim();
        let map = CellMap::new(&mesh).unwrap();
        let loc = PointLocator::new(&mesh).unwrap();
        for _ in 0..2000 {
            let cell = (rng.next_u64() % mesh.num_cells() as u64) as usize;
            let xi = reference_point(ct, &mut rng);
            let x = map.map_point(cell, &xi[..d]).unwrap();
            let found = loc
                .locate(&x[..d])
                .unwrap_or_else(|| panic!("{spec}: {x:?} (cell {cell}, xi {xi:?}) not found"));
            assert_maps_back(&map, &x[..d], found, 1e-12);
            if depth_inside(ct, &xi) > 1e-6 {
                assert_eq!(found.cell, cell, "{spec}: xi {xi:?}");
                for k in 0..d {
                    assert!(
                        (found.xi[k] - xi[k]).abs() < 1e-9,
                        "{spec}: {found:?} vs {xi:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn vertices_go_to_the_lowest_numbered_cell_holding_them() {
    for spec in PERTURBED {
        let mesh = boxmesh(spec);
        let d = mesh.dim();
        let map = CellMap::new(&mesh).unwrap();
        let loc = PointLocator::new(&mesh).unwrap();
        let mut first = vec![usize::MAX; mesh.num_vertices()];
        for c in (0..mesh.num_cells()).rev() {
            for &v in mesh.cell(c) {
                first[v as usize] = c;
            }
        }
        for (v, &c) in first.iter().enumerate() {
            let x = mesh.vertex(v);
            let found = loc
                .locate(x)
                .unwrap_or_else(|| panic!("{spec}: vertex {v}"));
            assert_eq!(found.cell, c, "{spec}: vertex {v} at {x:?}");
            assert_maps_back(&map, x, found, 1e-12);
            // the reference point is the cell's local vertex
            let local = mesh.cell(c).iter().position(|&w| w as usize == v).unwrap();
            let corner = mesh.cell_type().reference_vertex(local);
            for k in 0..d {
                assert!(
                    (found.xi[k] - corner[k]).abs() < 1e-10,
                    "{spec}: vertex {v}"
                );
            }
        }
    }
}

#[test]
fn points_on_faces_and_edges_are_found() {
    let mut rng = Lcg::new(12);
    for spec in PERTURBED {
        let mesh = boxmesh(spec);
        let ct = mesh.cell_type();
        let d = mesh.dim();
        let map = CellMap::new(&mesh).unwrap();
        let loc = PointLocator::new(&mesh).unwrap();
        for cell in 0..mesh.num_cells() {
            // a random point on every facet: a random reference point pushed onto the facet
            for (f, verts) in ct.facets().iter().enumerate() {
                let mut xi = reference_point(ct, &mut rng);
                if ct.is_tensor() {
                    xi[f / 2] = if f % 2 == 0 { -1.0 } else { 1.0 };
                } else {
                    // barycentric weights on the facet's vertices
                    let w: Vec<f64> = verts.iter().map(|_| rng.next_f64() + 0.01).collect();
                    let total: f64 = w.iter().sum();
                    xi = [0.0; 3];
                    for (&v, &wv) in verts.iter().zip(&w) {
                        let r = ct.reference_vertex(v);
                        for k in 0..d {
                            xi[k] += wv / total * r[k];
                        }
                    }
                }
                let x = map.map_point(cell, &xi[..d]).unwrap();
                let found = loc
                    .locate(&x[..d])
                    .unwrap_or_else(|| panic!("{spec}: cell {cell} facet {f} at {x:?}"));
                assert!(found.cell <= cell, "{spec}: the lowest cell wins");
                assert_maps_back(&map, &x[..d], found, 1e-12);
            }
            // edge midpoints
            for e in ct.edges() {
                let (a, b) = (ct.reference_vertex(e[0]), ct.reference_vertex(e[1]));
                let xi: Vec<f64> = (0..d).map(|k| 0.5 * (a[k] + b[k])).collect();
                let x = map.map_point(cell, &xi).unwrap();
                let found = loc.locate(&x[..d]).unwrap();
                assert!(found.cell <= cell);
                assert_maps_back(&map, &x[..d], found, 1e-12);
            }
        }
    }
}

#[test]
fn every_point_of_the_box_is_found_and_nothing_outside() {
    let mut rng = Lcg::new(13);
    for spec in PERTURBED {
        let mesh = boxmesh(spec);
        let d = mesh.dim();
        let map = CellMap::new(&mesh).unwrap();
        let loc = PointLocator::new(&mesh).unwrap();
        let (lo, hi) = mesh.bounding_box();
        let ext: Vec<f64> = (0..d).map(|k| hi[k] - lo[k]).collect();
        // random points of the box, which the mesh tiles exactly
        for _ in 0..2000 {
            let x: Vec<f64> = (0..d).map(|k| lo[k] + rng.next_f64() * ext[k]).collect();
            let found = loc.locate(&x).unwrap_or_else(|| panic!("{spec}: {x:?}"));
            assert_maps_back(&map, &x, found, 1e-12);
        }
        // points on the box's sides, just inside, within tolerance outside, and beyond it
        for _ in 0..200 {
            let mut x: Vec<f64> = (0..d).map(|k| lo[k] + rng.next_f64() * ext[k]).collect();
            let axis = (rng.next_u64() % d as u64) as usize;
            let (side, out) = if rng.next_u64() % 2 == 0 {
                (lo[axis], -1.0)
            } else {
                (hi[axis], 1.0)
            };
            let scale = ext.iter().cloned().fold(0.0, f64::max);
            for (offset, expect) in [
                (0.0, true),
                (-1e-9, true),
                (1e-14, true),
                (1e-8, false),
                (1e-3, false),
                (10.0, false),
            ] {
                x[axis] = side + out * offset * scale;
                let found = loc.locate(&x);
                assert_eq!(found.is_some(), expect, "{spec}: {x:?} ({offset} outside)");
                if let Some(f) = found {
                    assert_maps_back(&map, &x, f, 1e-12);
                }
            }
        }
        // corners of the bounding box, just beyond them, far away, and not a number
        assert!(loc.locate(&lo).is_some());
        assert!(loc.locate(&hi).is_some());
        let beyond: Vec<f64> = (0..d).map(|k| hi[k] + 1e-8 * ext[k]).collect();
        assert!(loc.locate(&beyond).is_none());
        assert!(loc.locate(&vec![1e300; d]).is_none());
        assert!(loc.locate(&vec![-1e300; d]).is_none());
        assert!(loc.locate(&vec![f64::NAN; d]).is_none());
        assert!(loc.locate(&vec![f64::INFINITY; d]).is_none());
    }
}

/// The box `spec` without the cells whose centroid lies in the middle half of every axis.
fn box_with_hole(spec: &str) -> Mesh {
    let mesh = boxmesh(spec);
    let ct = mesh.cell_type();
    let d = mesh.dim();
    let (lo, hi) = mesh.bounding_box();
    let mut cells = Vec::new();
    for c in 0..mesh.num_cells() {
        let vs = mesh.cell(c);
        let in_hole = (0..d).all(|k| {
            let mid = vs.iter().map(|&v| mesh.vertex(v as usize)[k]).sum::<f64>() / vs.len() as f64;
            let t = (mid - lo[k]) / (hi[k] - lo[k]);
            t > 0.25 && t < 0.75
        });
        if !in_hole {
            cells.extend_from_slice(vs);
        }
    }
    Mesh::new(ct, mesh.coords().to_vec(), cells).unwrap()
}

#[test]
fn points_in_a_hole_are_not_found_but_its_rim_is() {
    let mut rng = Lcg::new(14);
    for spec in ["tri:8x8", "quad:8x8", "tet:4x4x4", "hex:4x4x4"] {
        let full = boxmesh(spec);
        let mesh = box_with_hole(spec);
        assert!(mesh.num_cells() < full.num_cells());
        let d = mesh.dim();
        let map = CellMap::new(&mesh).unwrap();
        let loc = PointLocator::new(&mesh).unwrap();
        // the unit box with the hole (0.25, 0.75)^d
        for _ in 0..2000 {
            let x: Vec<f64> = (0..d).map(|_| rng.next_f64()).collect();
            let depth = x
                .iter()
                .map(|&t| (t - 0.25).min(0.75 - t))
                .fold(f64::INFINITY, f64::min);
            let found = loc.locate(&x);
            if depth > 1e-9 {
                assert!(found.is_none(), "{spec}: {x:?} is in the hole");
            } else if depth < -1e-9 {
                assert_maps_back(&map, &x, found.unwrap(), 1e-12);
            }
        }
        // the hole's rim and just inside it
        for _ in 0..200 {
            let mut x: Vec<f64> = (0..d).map(|_| 0.25 + 0.5 * rng.next_f64()).collect();
            let axis = (rng.next_u64() % d as u64) as usize;
            x[axis] = if rng.next_u64() % 2 == 0 { 0.25 } else { 0.75 };
            let found = loc
                .locate(&x)
                .unwrap_or_else(|| panic!("{spec}: rim {x:?}"));
            assert_maps_back(&map, &x, found, 1e-12);
            x[axis] += if x[axis] < 0.5 { 1e-8 } else { -1e-8 };
            assert!(loc.locate(&x).is_none(), "{spec}: {x:?} is in the hole");
        }
    }
}

#[test]
fn a_mesh_far_from_the_origin_is_located_to_rounding() {
    let mut rng = Lcg::new(15);
    for spec in [
        "quad:6x5,perturb=0.3,seed=4,min=1000:-500,max=1001:-499.5",
        "hex:3x3x3,perturb=0.3,seed=4,min=1e4:0:-1e4,max=10001:1:-9999",
    ] {
        let mesh = boxmesh(spec);
        let ct = mesh.cell_type();
        let d = mesh.dim();
        let map = CellMap::new(&mesh).unwrap();
        let loc = PointLocator::new(&mesh).unwrap();
        for _ in 0..500 {
            let cell = (rng.next_u64() % mesh.num_cells() as u64) as usize;
            let xi = reference_point(ct, &mut rng);
            let x = map.map_point(cell, &xi[..d]).unwrap();
            let found = loc.locate(&x[..d]).unwrap();
            // coordinates of 1e4 carry rounding of about 1e-12 absolute
            assert_maps_back(&map, &x[..d], found, 1e-10);
        }
    }
}

#[test]
fn an_empty_mesh_finds_nothing() {
    let mesh = Mesh::new(CellType::Triangle, vec![0.0, 0.0, 1.0, 0.0], vec![]).unwrap();
    let loc = PointLocator::new(&mesh).unwrap();
    assert!(loc.locate(&[0.0, 0.0]).is_none());
}

#[test]
#[should_panic(expected = "needs 2 coordinates")]
fn a_point_of_the_wrong_dimension_panics() {
    let mesh = boxmesh("quad:2x2");
    PointLocator::new(&mesh).unwrap().locate(&[0.5, 0.5, 0.5]);
}

/// Not a test of speed (nothing is asserted on time): prints how long building the locator
/// and locating 1e5 random points in about 1e5 cells take (`--nocapture` to see it).
#[test]
fn timing_of_1e5_points_in_1e5_cells() {
    for spec in [
        "tri:224x224,perturb=0.3,seed=3",
        "quad:316x316,perturb=0.3,seed=3",
        "tet:26x26x26,perturb=0.3,seed=3",
        "hex:46x46x46,perturb=0.3,seed=3",
    ] {
        let mesh = boxmesh(spec);
        let d = mesh.dim();
        let mut rng = Lcg::new(16);
        let points: Vec<f64> = (0..100_000 * d).map(|_| rng.next_f64()).collect();
        let t0 = std::time::Instant::now();
        let loc = PointLocator::new(&mesh).unwrap();
        let t1 = std::time::Instant::now();
        let found = points
            .chunks_exact(d)
            .filter(|x| loc.locate(x).is_some())
            .count();
        let t2 = std::time::Instant::now();
        assert_eq!(found, 100_000, "{spec}: the mesh tiles the unit box");
        println!(
            "{spec}: {} cells, locator built in {:.3} s, 1e5 points located in {:.3} s",
            mesh.num_cells(),
            (t1 - t0).as_secs_f64(),
            (t2 - t1).as_secs_f64()
        );
    }
}

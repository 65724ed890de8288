//! Tests of uniform refinement (`Mesh::refined`), on generated boxes of every cell type and
//! on the committed Gmsh meshes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ferrofem_mesh::{generate_box, read_gmsh, BoxSpec, CellType, Mesh, MeshError};

fn gmsh(name: &str) -> Mesh {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/gmsh")
        .join(format!("{name}_v41_binary.msh"));
    read_gmsh(&p).expect("test mesh reads")
}

fn boxed(spec: &str) -> Mesh {
    generate_box(&BoxSpec::parse(spec).expect("spec")).expect("box")
}

fn tag_counts(tags: &[i32]) -> BTreeMap<i32, usize> {
    let mut m = BTreeMap::new();
    for &t in tags {
        *m.entry(t).or_default() += 1;
    }
    m
}

/// What every refinement must keep: the measure, validity, conformity (the boundary
/// splits into exactly `2^((d-1) levels)` facets per coarse boundary facet, so no facet
/// inside the mesh is left unmatched), the tagged facets (split alike, each still a cell
/// facet), the cell tags (each parent's count times the children), and the names.
fn check_refinement(coarse: &Mesh, levels: usize) -> Mesh {
    let fine = coarse.refined(levels).expect("refines");
    let d = coarse.dim();
    let kids = 1usize << (d * levels);
    let fkids = 1usize << ((d - 1) * levels);
    assert_eq!(fine.cell_type(), coarse.cell_type());
    assert_eq!(fine.num_cells(), coarse.num_cells() * kids);
    let (mc, mf) = (coarse.total_measure(), fine.total_measure());
    assert!(
        (mc - mf).abs() <= 1e-12 * mc,
        "measure {mc} became {mf} ({:?}, {levels} levels)",
        coarse.cell_type()
    );
    fine.validate().expect("refined cells are valid");
    let inc = fine.facet_incidence().expect("manifold");
    let coarse_inc = coarse.facet_incidence().expect("manifold");
    assert_eq!(inc.num_boundary(), coarse_inc.num_boundary() * fkids);
    assert_eq!(fine.facets().len(), coarse.facets().len() * fkids);
    let located = fine
        .locate_tagged_facets()
        .expect("tagged facets are cell facets");
    assert_eq!(located.len(), fine.facets().len());
    let cf = tag_counts(&coarse.facets().tags);
    let ff = tag_counts(&fine.facets().tags);
    assert_eq!(ff, cf.iter().map(|(&t, &n)| (t, n * fkids)).collect());
    let cc = tag_counts(coarse.cell_tags());
    let fc = tag_counts(fine.cell_tags());
    assert_eq!(fc, cc.iter().map(|(&t, &n)| (t, n * kids)).collect());
    assert_eq!(fine.physical_names(), coarse.physical_names());
    // the old vertices keep their indices and places
    assert_eq!(&fine.coords()[..coarse.coords().len()], coarse.coords());
    fine
}

#[test]
fn every_cell_type_refines_conformingly_on_perturbed_boxes() {
    for spec in [
        "tri:3x2,perturb=0.2,seed=3",
        "quad:3x2,perturb=0.2,seed=3",
        "tet:2x2x1,perturb=0.2,seed=3",
        "hex:2x3x2,perturb=0.2,seed=3",
    ] {
        let coarse = boxed(spec);
        for levels in 0..=2 {
            check_refinement(&coarse, levels);
        }
    }
}

#[test]
fn committed_gmsh_meshes_refine_with_their_tags() {
    for name in [
        "square_tri",
        "square_quad",
        "box_tet",
        "box_hex",
        "two_materials_2d",
        "two_materials_3d",
        "plate_hole_hex",
    ] {
        let coarse = gmsh(name);
        let levels = if coarse.num_cells() > 1000 { 1 } else { 2 };
        check_refinement(&coarse, levels);
    }
}

#[test]
fn a_refined_box_is_the_finer_box() {
    // an unperturbed box refined is the box with twice the cells per axis: the same
    // vertex count and the same set of points
    for (coarse, fine) in [
        ("hex:2x3x1", "hex:8x12x4"),
        ("quad:3x2", "quad:12x8"),
        ("tet:1x2x1", "tet:4x8x4"),
        ("tri:2x1", "tri:8x4"),
    ] {
        let r = boxed(coarse).refined(2).expect("refines");
        let f = boxed(fine);
        assert_eq!(r.num_vertices(), f.num_vertices(), "{coarse}");
        let key = |m: &Mesh| {
            let mut pts: Vec<Vec<i64>> = m
                .coords()
                .chunks_exact(m.dim())
                .map(|x| x.iter().map(|c| (c * 1e9).round() as i64).collect())
                .collect();
            pts.sort();
            pts
        };
        assert_eq!(key(&r), key(&f), "{coarse}");
    }
}

#[test]
fn hexahedron_children_are_lexicographic_in_their_parents_axes() {
    // one hexahedron whose local axes are the global z, x, y (its vertices listed so):
    // child a + m (b + m c) sits at local (a, b, c), i.e. global x = b, y = c, z = a
    let coords = vec![
        0.0, 0.0, 0.0, //
        0.0, 0.0, 1.0, // local x = global z
        1.0, 0.0, 0.0, // local y = global x
        1.0, 0.0, 1.0, //
        0.0, 1.0, 0.0, // local z = global y
        0.0, 1.0, 1.0, //
        1.0, 1.0, 0.0, //
        1.0, 1.0, 1.0, //
    ];
    let hex = Mesh::new(CellType::Hexahedron, coords, (0..8).collect()).expect("hex");
    hex.validate().expect("positively oriented");
    let m = 4;
    let fine = hex.refined(2).expect("refines");
    for c in 0..m {
        for b in 0..m {
            for a in 0..m {
                let child = fine.cell(a + m * (b + m * c));
                let centroid: Vec<f64> = (0..3)
                    .map(|k| {
                        child
                            .iter()
                            .map(|&v| fine.vertex(v as usize)[k])
                            .sum::<f64>()
                            / 8.0
                    })
                    .collect();
                let want = [b, c, a].map(|i| (i as f64 + 0.5) / m as f64);
                for k in 0..3 {
                    assert!((centroid[k] - want[k]).abs() < 1e-14);
                }
                // the child's own vertex order follows the parent's axes
                let v0 = fine.vertex(child[0] as usize).to_vec();
                let v1 = fine.vertex(child[1] as usize).to_vec();
                assert!((v1[2] - v0[2] - 1.0 / m as f64).abs() < 1e-14);
            }
        }
    }
}

#[test]
fn refinement_beyond_32_bit_indices_is_refused() {
    let coarse = boxed("hex:2x2x2");
    assert!(matches!(
        coarse.refined(12),
        Err(MeshError::TooLarge { .. })
    ));
    assert!(matches!(
        coarse.refined(usize::MAX),
        Err(MeshError::TooLarge { .. })
    ));
}

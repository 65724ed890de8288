//! The memory estimate of an assembly plan: its nonzero count against the exact pattern,
//! and the refusal it gives when the plan and a matrix would not fit.

use ferrofem_assembly::{AssemblyError, AssemblyPlan, DofMap};
use ferrofem_base::MemoryError;
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_space::H1Space;

fn mesh(spec: &str) -> Mesh {
    generate_box(&BoxSpec::parse(spec).unwrap()).unwrap()
}

/// The space's restriction and the map eliminating its boundary dofs.
fn setup(spec: &str, order: usize, ncomp: usize) -> (H1Space, DofMap) {
    let m = mesh(spec);
    let space = H1Space::new(&m, order, ncomp).unwrap();
    let nodes = space.boundary_nodes(&m).unwrap();
    let map = DofMap::new(space.num_dofs(), &space.node_dofs(&nodes, None)).unwrap();
    (space, map)
}

#[test]
fn small_meshes_are_counted_exactly() {
    for (spec, order, ncomp) in [
        ("tet:4x4x4,perturb=0.2,seed=1", 2, 1),
        ("hex:3x3x3", 2, 3),
        ("tri:6x6", 3, 2),
        ("quad:5x5", 1, 1),
    ] {
        let (space, map) = setup(spec, order, ncomp);
        let r = space.restriction();
        assert!(r.num_nodes() <= 1024, "{spec}: every node is sampled");
        for map in [None, Some(&map)] {
            let est = AssemblyPlan::estimate(r, map).unwrap();
            let plan = AssemblyPlan::new(r, map).unwrap();
            assert_eq!(est.rows, plan.nrows(), "{spec}");
            assert_eq!(
                est.nnz,
                plan.pattern().nnz() as u64,
                "{spec}, map {}",
                map.is_some()
            );
            // the element -> nonzero map alone
            let n = plan.element_matrix_size() as u64;
            assert!(est.plan_bytes >= 4 * r.num_elem() as u64 * n * n);
            assert_eq!(
                est.matrix_bytes(8),
                8 * (est.rows as u64 + 1) + 12 * est.nnz
            );
        }
    }
}

#[test]
fn large_meshes_are_estimated_from_a_sample_within_a_few_percent() {
    for (spec, order, ncomp) in [
        ("tet:14x14x14,perturb=0.2,seed=1", 2, 1),
        ("hex:10x10x10", 3, 3),
        ("tri:64x64", 2, 1),
    ] {
        let (space, map) = setup(spec, order, ncomp);
        let r = space.restriction();
        assert!(r.num_nodes() > 1024, "{spec}: sampled");
        for map in [None, Some(&map)] {
            let est = AssemblyPlan::estimate(r, map).unwrap();
            let exact = AssemblyPlan::new(r, map).unwrap().pattern().nnz() as f64;
            let rel = (est.nnz as f64 - exact).abs() / exact;
            assert!(rel < 0.05, "{spec}: estimated {} against {exact}", est.nnz);
        }
    }
}

#[test]
fn a_plan_that_does_not_fit_is_refused_with_the_estimate() {
    let (space, map) = setup("hex:4x4x4", 2, 3);
    let est = AssemblyPlan::estimate(space.restriction(), Some(&map)).unwrap();
    let needed = est.plan_bytes + est.matrix_bytes(8);
    assert!(est.check_in(8, Some(needed)).is_ok());
    assert!(est.check_in(8, None).is_ok());
    let err = est.check_in(8, Some(needed - 1)).unwrap_err();
    match &err {
        AssemblyError::Memory(MemoryError::TooLarge {
            needed: n,
            available,
            ..
        }) => {
            assert_eq!((*n, *available), (needed, needed - 1));
        }
        e => panic!("unexpected error {e}"),
    }
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "not enough memory for the assembled matrix ({} rows, about {} nonzeros) and its assembly plan: it needs about ",
            est.rows, est.nnz
        )),
        "{msg}"
    );
    assert!(msg.contains("use a matrix-free solver"), "{msg}");
    // f32 matrices take less
    assert!(est.matrix_bytes(4) < est.matrix_bytes(8));
}

#[test]
fn a_dof_map_of_another_space_is_refused() {
    let (space, _) = setup("tri:2x2", 1, 1);
    let wrong = DofMap::new(3, &[0]).unwrap();
    assert!(matches!(
        AssemblyPlan::estimate(space.restriction(), Some(&wrong)),
        Err(AssemblyError::LengthMismatch { .. })
    ));
}

#[test]
fn lagrange_systems_are_predicted_from_the_mesh_counts() {
    use ferrofem_assembly::predicted_lagrange_system;
    for (spec, order, ncomp) in [
        ("hex:12x12x12", 2, 1),
        ("hex:8x8x8", 3, 3),
        ("tet:10x10x10,perturb=0.2,seed=1", 3, 3),
        ("tet:12x12x12", 2, 1),
        ("tet:8x8x8", 4, 1),
        ("tri:40x40", 4, 2),
        ("quad:30x30", 5, 1),
    ] {
        let m = mesh(spec);
        let space = H1Space::new(&m, order, ncomp).unwrap();
        let pred =
            predicted_lagrange_system(m.cell_type(), m.num_cells(), m.num_vertices(), order, ncomp);
        let exact = space.num_dofs() as f64;
        // low by the boundary's share of edges and faces, which Euler's formula for
        // interior facets leaves out (a few per cent on these small boxes)
        let ratio = pred.dofs as f64 / exact;
        assert!(
            (0.9..=1.02).contains(&ratio),
            "{spec} P{order}: predicted {} dofs, exact {exact}",
            pred.dofs
        );
        // the nonzeros: a lower bound
        let nnz = AssemblyPlan::new(space.restriction(), None)
            .unwrap()
            .pattern()
            .nnz() as u64;
        assert!(
            pred.nnz <= nnz && pred.nnz * 4 >= nnz,
            "{spec}: {} of {nnz}",
            pred.nnz
        );
    }
}

//! Probes: point values and physical gradients of interpolated polynomials the spaces
//! contain, at random reference points and at located physical points; argument errors.

use ferrofem_base::random::Lcg;
use ferrofem_base::CellType;
use ferrofem_geometry::{CellMap, GeometryError, PointLocator};
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_space::{H1Space, SpaceError};

fn boxmesh(spec: &str) -> Mesh {
    generate_box(&BoxSpec::parse(spec).unwrap()).unwrap()
}

/// A uniform random point of the reference cell.
fn reference_point(ct: CellType, rng: &mut Lcg) -> Vec<f64> {
    let d = ct.dim();
    loop {
        let xi: Vec<f64> = (0..d).map(|_| rng.next_f64()).collect();
        if ct.is_tensor() {
            return xi.iter().map(|t| 2.0 * t - 1.0).collect();
        }
        if xi.iter().sum::<f64>() < 1.0 {
            return xi;
        }
    }
}

/// A field with `ncomp` components: value into `v`, gradient `g[c * d + k]` into `g`.
type Field = fn(&[f64], &mut [f64], &mut [f64]);

/// Probes `space` (built on `mesh`) holding the interpolant of `f` at random reference
/// points and compares with `f` and its gradient at the mapped physical points.
fn check_reproduces(mesh: &Mesh, space: &H1Space, f: Field, tol: f64, label: &str) {
    let d = mesh.dim();
    let nc = space.ncomp();
    let u = space.interpolate(|x, out| f(x, out, &mut vec![0.0; nc * d]));
    let map = CellMap::new(mesh).unwrap();
    let mut rng = Lcg::new(21);
    let (mut v, mut g) = (vec![0.0; nc], vec![0.0; nc * d]);
    let (mut want_v, mut want_g) = (vec![0.0; nc], vec![0.0; nc * d]);
    for _ in 0..300 {
        let cell = (rng.next_u64() % mesh.num_cells() as u64) as usize;
        let xi = reference_point(mesh.cell_type(), &mut rng);
        let x = map.map_point(cell, &xi).unwrap();
        f(&x[..d], &mut want_v, &mut want_g);
        space.eval_at(cell, &xi, &u, &mut v).unwrap();
        space.eval_grad_at(mesh, cell, &xi, &u, &mut g).unwrap();
        for c in 0..nc {
            assert!(
                (v[c] - want_v[c]).abs() <= tol,
                "{label}: u_{c} at {x:?} is {} instead of {}",
                v[c],
                want_v[c]
            );
        }
        for i in 0..nc * d {
            assert!(
                (g[i] - want_g[i]).abs() <= tol,
                "{label}: ∂u_{}/∂x_{} at {x:?} is {} instead of {}",
                i / d,
                i % d,
                g[i],
                want_g[i]
            );
        }
    }
}

/// `x² + xy + 3 (+ yz)`: in Q2 on axis-aligned (affine) quadrilaterals and hexahedra.
fn quadratic(x: &[f64], v: &mut [f64], g: &mut [f64]) {
    let z = x.get(2).copied().unwrap_or(0.0);
    v[0] = x[0] * x[0] + x[0] * x[1] + 3.0 + x[1] * z;
    g[0] = 2.0 * x[0] + x[1];
    g[1] = x[0] + z;
    if x.len() == 3 {
        g[2] = x[1];
    }
}

/// A cubic of total degree 3: in P3 on any (affine) simplex mesh.
fn cubic(x: &[f64], v: &mut [f64], g: &mut [f64]) {
    let z = x.get(2).copied().unwrap_or(0.0);
    v[0] = x[0].powi(3) - 2.0 * x[0] * x[1] * x[1] + x[1] * z * z - z.powi(3) + 0.5 * x[1] - 1.0;
    g[0] = 3.0 * x[0] * x[0] - 2.0 * x[1] * x[1];
    g[1] = -4.0 * x[0] * x[1] + z * z + 0.5;
    if x.len() == 3 {
        g[2] = 2.0 * x[1] * z - 3.0 * z * z;
    }
}

/// A vector field with `dim` components, each affine in `x`: in every order's space on
/// any mesh, including non-affine quadrilaterals and hexahedra.
fn linear_vector(x: &[f64], v: &mut [f64], g: &mut [f64]) {
    let d = x.len();
    for c in 0..d {
        v[c] = 1.5 - c as f64;
        for k in 0..d {
            let a = 0.3 * (c as f64 + 1.0) - 0.7 * k as f64 + if c == k { 1.0 } else { 0.0 };
            v[c] += a * x[k];
            g[c * d + k] = a;
        }
    }
}

#[test]
fn order_2_reproduces_a_quadratic_on_affine_tensor_cells() {
    for spec in [
        "quad:5x4,min=-1:0.5,max=2:1.5",
        "hex:3x4x2,min=0:-1:2,max=1.5:1:3",
    ] {
        let mesh = boxmesh(spec);
        let space = H1Space::new(&mesh, 2, 1).unwrap();
        check_reproduces(&mesh, &space, quadratic, 1e-11, spec);
    }
}

#[test]
fn order_3_reproduces_a_cubic_on_perturbed_simplices() {
    for spec in [
        "tri:5x4,perturb=0.3,seed=2,min=-1:0.5,max=2:1.5",
        "tet:3x3x2,perturb=0.3,seed=2",
    ] {
        let mesh = boxmesh(spec);
        let space = H1Space::new(&mesh, 3, 1).unwrap();
        check_reproduces(&mesh, &space, cubic, 1e-10, spec);
    }
}

#[test]
fn every_order_reproduces_linear_vector_fields_on_perturbed_cells() {
    for spec in [
        "tri:5x4,perturb=0.3,seed=3",
        "quad:5x4,perturb=0.3,seed=3,min=-1:0.5,max=2:1.5",
        "tet:3x3x2,perturb=0.3,seed=3",
        "hex:4x3x2,perturb=0.3,seed=1",
    ] {
        let mesh = boxmesh(spec);
        for order in 1..=3 {
            let space = H1Space::new(&mesh, order, mesh.dim()).unwrap();
            check_reproduces(&mesh, &space, linear_vector, 1e-11, spec);
            // a renumbered space probes the same field
            let renumbered = space.interior_last();
            check_reproduces(&mesh, &renumbered, linear_vector, 1e-11, spec);
        }
    }
}

#[test]
fn located_physical_points_and_nodes_probe_the_field() {
    let mut rng = Lcg::new(22);
    for spec in [
        "tri:6x5,perturb=0.3,seed=4",
        "quad:6x5,perturb=0.3,seed=4",
        "tet:3x3x3,perturb=0.3,seed=4",
        "hex:3x3x3,perturb=0.3,seed=4",
    ] {
        let mesh = boxmesh(spec);
        let d = mesh.dim();
        let locator = PointLocator::new(&mesh).unwrap();
        let space = H1Space::new(&mesh, 2, d).unwrap();
        let u = space.interpolate(|x, out| linear_vector(x, out, &mut [0.0; 9]));
        let (mut v, mut g) = (vec![0.0; d], vec![0.0; d * d]);
        let (mut want_v, mut want_g) = (vec![0.0; d], vec![0.0; d * d]);
        // random points of the unit box
        for _ in 0..300 {
            let x: Vec<f64> = (0..d).map(|_| rng.next_f64()).collect();
            let at = locator.locate(&x).unwrap();
            space.eval_at(at.cell, &at.xi[..d], &u, &mut v).unwrap();
            space
                .eval_grad_at(&mesh, at.cell, &at.xi[..d], &u, &mut g)
                .unwrap();
            linear_vector(&x, &mut want_v, &mut want_g);
            for c in 0..d {
                assert!((v[c] - want_v[c]).abs() < 1e-12, "{spec}: {x:?}");
            }
            for i in 0..d * d {
                assert!((g[i] - want_g[i]).abs() < 1e-11, "{spec}: {x:?}");
            }
        }
        // at the space's nodes a probe returns the nodal values themselves
        let nodes = space.num_nodes();
        let w: Vec<f64> = (0..space.num_dofs())
            .map(|_| rng.next_f64() - 0.5)
            .collect();
        for n in (0..nodes).step_by(7) {
            let at = locator.locate(space.node_coord(n)).unwrap();
            space.eval_at(at.cell, &at.xi[..d], &w, &mut v).unwrap();
            for c in 0..d {
                assert!((v[c] - w[n * d + c]).abs() < 1e-9, "{spec}: node {n}");
            }
        }
    }
}

#[test]
fn probes_check_their_arguments() {
    let mesh = boxmesh("quad:2x2");
    let other = boxmesh("quad:3x2");
    let space = H1Space::new(&mesh, 2, 2).unwrap();
    let u = vec![0.0; space.num_dofs()];
    let mut out = [0.0; 2];
    let mut grad = [0.0; 4];
    let xi = [0.0, 0.0];
    assert!(matches!(
        space.eval_at(4, &xi, &u, &mut out),
        Err(SpaceError::CellOutOfRange {
            cell: 4,
            num_cells: 4
        })
    ));
    assert!(matches!(
        space.eval_at(0, &[0.0], &u, &mut out),
        Err(SpaceError::Length {
            len: 1,
            expected: 2,
            ..
        })
    ));
    assert!(matches!(
        space.eval_at(0, &xi, &u[1..], &mut out),
        Err(SpaceError::Length { .. })
    ));
    assert!(matches!(
        space.eval_at(0, &xi, &u, &mut out[..1]),
        Err(SpaceError::Length {
            len: 1,
            expected: 2,
            ..
        })
    ));
    assert!(matches!(
        space.eval_grad_at(&mesh, 0, &xi, &u, &mut out),
        Err(SpaceError::Length {
            len: 2,
            expected: 4,
            ..
        })
    ));
    assert!(matches!(
        space.eval_grad_at(&other, 0, &xi, &u, &mut grad),
        Err(SpaceError::MeshMismatch { .. })
    ));
    assert!(space.eval_grad_at(&mesh, 3, &xi, &u, &mut grad).is_ok());
    // a clockwise (inverted) triangle has no usable gradient map
    let inverted = Mesh::new(
        CellType::Triangle,
        vec![0.0, 0.0, 1.0, 0.0, 0.0, 1.0],
        vec![0, 2, 1],
    )
    .unwrap();
    let space = H1Space::new(&inverted, 1, 1).unwrap();
    let u = vec![0.0; 3];
    let err = space
        .eval_grad_at(&inverted, 0, &[0.2, 0.2], &u, &mut [0.0; 2])
        .unwrap_err();
    assert!(matches!(
        err,
        SpaceError::Geometry(GeometryError::InvertedOrDegenerate { cell: 0, .. })
    ));
    // values need no map
    assert!(space.eval_at(0, &[0.2, 0.2], &u, &mut [0.0]).is_ok());
}

//! The distributed layer on one rank, without MPI: the whole mesh is the one part, no node
//! is shared, and a distributed solve is the serial solve. (Several ranks:
//! `mpi_ranks.rs`, feature `mpi`.)

use ferrofem_base::LinearOperator;
use ferrofem_dist::{
    partition_cells, Communicator, Decomposition, DistError, DistSpace, LocalPart, NodeInterface,
    SingleRank,
};
use ferrofem_mesh::{generate_box, BoxSpec};
use ferrofem_operator::tensor::{TensorKind, TensorOperator, TensorOptions};
use ferrofem_operator::{lift_rhs, ConstrainedOperator};
use ferrofem_solver::{pcg, CpuSpace, KrylovSpace, SolveOptions};
use ferrofem_space::H1Space;

#[test]
fn one_rank_is_the_serial_solve() {
    let comm = SingleRank;
    let mesh = generate_box(&BoxSpec::parse("hex:3x3x2,perturb=0.2,seed=9").unwrap()).unwrap();
    let d = Decomposition::new(&mesh, partition_cells(&mesh, 1).unwrap()).unwrap();
    let part = LocalPart::extract(&mesh, &d, 0).unwrap();
    assert!(part.neighbours().is_empty());
    assert_eq!(part.boundary_facets, mesh.boundary_facets());
    let space = H1Space::new(&part.mesh, 3, 1).unwrap();
    let interface = NodeInterface::new(&comm, &part, &space).unwrap();
    assert!(interface.neighbours().is_empty() && interface.shared_nodes().is_empty());
    assert_eq!(interface.num_owned(), space.num_nodes());

    let op = TensorOperator::<f64>::new(
        &part.mesh,
        &space,
        &TensorOptions::new(TensorKind::Diffusion { alpha: 1.0 }),
    )
    .unwrap();
    let n = op.nrows();
    let f: Vec<f64> = (0..n).map(|i| ((i * 37) % 11) as f64 - 5.0).collect();
    let g = space.interpolate(|x, o| o[0] = x[0] + 2.0 * x[1]);
    let boundary = space.boundary_nodes(&part.mesh).unwrap();
    let opts = SolveOptions {
        rtol: 1e-12,
        ..SolveOptions::default()
    };

    let b_serial = lift_rhs(&op, &boundary, &f, &g).unwrap();
    let constrained = ConstrainedOperator::new(&op, &boundary).unwrap();
    let serial = CpuSpace::with_operator_jacobi(&constrained).unwrap();
    let mut u_serial = vec![0.0; n];
    let s_stats = pcg(&serial, &b_serial, &mut u_serial, &opts).unwrap();

    let local_boundary = space
        .facet_nodes(&part.mesh, &part.boundary_facets)
        .unwrap();
    let dist = DistSpace::new(&comm, &interface, &op, 1, &local_boundary)
        .unwrap()
        .with_jacobi()
        .unwrap();
    assert_eq!(dist.constrained_dofs(), boundary.as_slice());
    let b = dist.lift(&f, &g).unwrap();
    assert_eq!(b, b_serial);
    let mut u = vec![0.0; n];
    let stats = pcg(&dist, &b, &mut u, &opts).unwrap();
    assert_eq!(stats.iterations, s_stats.iterations);
    let diff = u
        .iter()
        .zip(&u_serial)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    assert!(diff < 1e-13, "{diff:e}");
    dist.add_boundary_values(&mut u, &g).unwrap();
    for &c in &boundary {
        assert_eq!(u[c as usize], g[c as usize]);
    }

    // lengths are checked, and one rank has no one to exchange with
    assert!(dist.dot(&vec![0.0; n - 1], &u).is_err());
    let mut short = vec![0.0; n + 1];
    assert!(matches!(
        interface.sum_shared(&comm, &mut short, 1),
        Err(DistError::Exchange(_))
    ));
    assert!(DistSpace::new(&comm, &interface, &op, 2, &[]).is_err());
    assert!(DistSpace::new(&comm, &interface, &op, 1, &[n as u32]).is_err());
    let mut buf = [0.0f64; 1];
    assert!(comm
        .exchange(&[1], &[&[1.0f64][..]], &mut [&mut buf[..]])
        .is_err());
    assert_eq!(comm.sum(2.5).unwrap(), 2.5);

    // a part of two is not this single rank's
    let halves = Decomposition::new(&mesh, partition_cells(&mesh, 2).unwrap()).unwrap();
    let second = LocalPart::extract(&mesh, &halves, 1).unwrap();
    let second_space = H1Space::new(&second.mesh, 3, 1).unwrap();
    assert!(matches!(
        NodeInterface::new(&comm, &second, &second_space),
        Err(DistError::PartNotOnItsRank {
            part: 1,
            nparts: 2,
            rank: 0,
            size: 1
        })
    ));
}

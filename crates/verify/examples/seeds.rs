use ferrofem_base::CellType;
use ferrofem_operator::FormOperator;
use ferrofem_physics::{Manufactured, Poisson};
use ferrofem_space::H1Space;
use ferrofem_verify::*;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let ct = CellType::parse(&args[1]).unwrap();
    let p: usize = args[2].parse().unwrap();
    let ns: Vec<usize> = args[3].split(',').map(|s| s.parse().unwrap()).collect();
    let pert: f64 = args[4].parse().unwrap();
    for seed in 1..=5u64 {
        let mut lv = vec![];
        for &n in &ns {
            let d = ct.dim();
            let m = Manufactured::poisson(d, 1.0).unwrap();
            let mesh = perturbed_box(ct, n, pert, seed).unwrap();
            let space = H1Space::new(&mesh, p, 1).unwrap();
            let bc = BoundaryData::exact(&mesh, &space, &m).unwrap();
            let op =
                FormOperator::<f64, _>::new(&mesh, &space, Poisson::manufactured(d, 1.0).unwrap())
                    .unwrap();
            let u = solve_linear(&op, &bc).unwrap();
            lv.push(Level {
                n,
                dofs: space.num_dofs(),
                errors: exact_errors(&mesh, &space, &u, &m).unwrap(),
            });
        }
        let s = Study {
            title: format!("seed {seed}"),
            levels: lv,
            expected_l2: (p + 1) as f64,
            expected_h1: p as f64,
        };
        print!("{}", s.table());
    }
}

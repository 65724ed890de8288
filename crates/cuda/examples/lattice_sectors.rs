//! Counts the 32-byte sectors that the lattice kernel's (v26) gather and scatter ask of L2,
//! warp instruction by warp instruction, for a brick numbering's slot order: a model of the
//! kernel's phase 1 (one load of `x` per level, through the boundary offsets where the node
//! is on the brick boundary) and phase 5 (a store per interior node, an atomic add per
//! boundary node), on the box the benchmark builds. A development aid: it needs neither a
//! GPU nor NVRTC, and predicts what a slot order should change before a device run.
//!
//! ```text
//! cargo run --release -p ferrofem-cuda --example lattice_sectors -- P BXxBYxBZ [dofs=1e7]
//! ```

use ferrofem_cuda::bp::{bp_kernel, BpConfig};
use ferrofem_mesh::{generate_box, BoxSpec};
use ferrofem_space::{H1Space, SlotOrder};
use std::collections::HashSet;

/// Sector totals over the box: (x loads, offset loads, interior stores, boundary atomics).
fn count(space: &H1Space, threads: usize) -> [usize; 4] {
    let l = space.brick_layout().expect("bricked");
    let [nx, ny, nz] = l.dims();
    let cols = l.columns();
    let slots = l.skeleton_positions();
    let nskb = slots.len();
    let mut slot_of = vec![usize::MAX; nx * ny * nz];
    for (s, q) in slots.iter().enumerate() {
        slot_of[(q[2] * ny + q[1]) * nx + q[0]] = s;
    }
    let off = space.brick_skeleton_offsets().expect("offsets");
    let ngroups = off.len() / nskb;
    let nib = l.interior_per_brick();
    let mut tot = [0usize; 4];
    let mut sec: [HashSet<usize>; 4] = Default::default();
    for g in 0..ngroups {
        for w0 in (0..threads).step_by(32) {
            let mut t0 = 0;
            while t0 + w0 < nx * ny {
                for k in 0..nz {
                    sec.iter_mut().for_each(|s| s.clear());
                    for lane in 0..32 {
                        let t = t0 + w0 + lane;
                        if w0 + lane >= threads || t >= nx * ny {
                            continue;
                        }
                        let [i, j] = cols[t];
                        let s = slot_of[(k * ny + j) * nx + i];
                        if s == usize::MAX {
                            let dof = l.skeleton_nodes + g * nib + l.interior_index([i, j, k]);
                            sec[0].insert(dof * 8 / 32);
                            sec[2].insert(dof * 8 / 32);
                        } else {
                            let dof = off[g * nskb + s] as usize;
                            sec[0].insert(dof * 8 / 32);
                            sec[1].insert((g * nskb + s) * 4 / 32);
                            sec[3].insert(dof * 8 / 32);
                        }
                    }
                    for (a, s) in tot.iter_mut().zip(&sec) {
                        *a += s.len();
                    }
                }
                t0 += threads;
            }
        }
    }
    tot
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: see the file's doc comment");
        std::process::exit(2);
    }
    let p: usize = args[0].parse().expect("order");
    let shape: Vec<usize> = args[1]
        .split('x')
        .map(|v| v.parse().expect("shape"))
        .collect();
    let shape = [shape[0], shape[1], shape[2]];
    let dofs: f64 = args
        .iter()
        .find_map(|a| a.strip_prefix("dofs=").and_then(|v| v.parse().ok()))
        .unwrap_or(1e7);
    let n = (((dofs.cbrt() - 1.0) / p as f64).round() as usize).max(1);
    let grid = shape.map(|b| n.div_ceil(b) * b);
    let spec = BoxSpec::parse(&format!(
        "hex:{}x{}x{},perturb=0.1,seed=1",
        grid[0], grid[1], grid[2]
    ))
    .expect("box");
    let mut mesh = generate_box(&spec).expect("box");
    mesh.sort_cells_in_bricks_ordered(grid, shape, true)
        .expect("bricks");
    let natural = H1Space::new(&mesh, p, 1).expect("space");
    let threads = bp_kernel::<f64>(BpConfig::lattice(shape), p)
        .expect("kernel")
        .block[0] as usize;
    let ngroups = mesh.num_cells() / shape.iter().product::<usize>();
    println!(
        "p = {p}, bricks {shape:?}, {} dofs, {ngroups} bricks, {threads} threads",
        natural.num_dofs()
    );
    println!("order          x loads  offsets  stores  atomics   (sectors per brick)");
    for order in [SlotOrder::Lexicographic, SlotOrder::Ring] {
        let space = natural.bricked_in(shape, order).expect("bricked").0;
        let t = count(&space, threads);
        let per = t.map(|v| v as f64 / ngroups as f64);
        println!(
            "{:<14} {:>8.1} {:>8.1} {:>7.1} {:>8.1}   total {:.3} M",
            format!("{order:?}"),
            per[0],
            per[1],
            per[2],
            per[3],
            t.iter().sum::<usize>() as f64 / 1e6
        );
    }
}

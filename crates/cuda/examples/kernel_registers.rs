//! Prints what ptxas (inside NVRTC) reports for chosen kernel specialisations: registers,
//! spills, shared memory. A development aid that needs NVRTC but no GPU.
//!
//! ```text
//! cargo run --release -p ferrofem-cuda --example kernel_registers -- bp1 7 f64 [registers] [direct] [mass] [plain] [pfl1|pfl2|pfreg|pfsm] [oz|la|lal|pl|ov] [chunk=N] [cs] [late] [otf] [epb=N] [minb=N] [brick=2x2x1] [lattice=4x4x2 [steps=N] [rolled] [rp=DIGITS] [oz|ov] [so|st] [split] [ring] [pfsm] [ga=N] [onearr]] [tuned] [pw] [cf] [table] [D=NAME (an extra -D NAME=1) | D=NAME=VALUE] [ptx|source|cubin=PATH]
//! cargo run --release -p ferrofem-cuda --example kernel_registers -- residual elasticity 3 f32 [b=8] [n=4] [t=1] [global] [per-cell]
//! ```

use ferrofem_cuda::bp::{bp_kernel, BpConfig, GeoPrefetch, LatticeBoundary, SkeletonZeroing};
use ferrofem_cuda::compile::{compile_uncached, Target};
use ferrofem_cuda::residual::{bench_qdegree, Output, ResidualCase, ResidualConfig, Strategy};
use ferrofem_operator::tensor::TensorKind;

fn flag(args: &[String], key: &str) -> Option<usize> {
    args.iter().find_map(|a| {
        a.strip_prefix(&format!("{key}="))
            .and_then(|v| v.parse().ok())
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: see the file's doc comment");
        std::process::exit(2);
    }
    let has = |s: &str| args.iter().any(|a| a == s);
    let spec = if args[0] == "residual" {
        let physics: &'static str = match args[1].as_str() {
            "elasticity" => "elasticity",
            "poisson" => "poisson",
            _ => "poisson-varcoef-p1",
        };
        let dim: usize = args[2].parse().expect("dimension");
        let mut cfg = ResidualConfig::new();
        cfg.output = if has("global") {
            Output::GlobalAtomic
        } else {
            Output::ElementVectors
        };
        if has("per-cell") {
            cfg.strategy = Strategy::ThreadPerCell;
        }
        cfg.blocks_per_batch = flag(&args, "b").unwrap_or(8);
        cfg.batches = flag(&args, "n").unwrap_or(4);
        cfg.threads_per_cell = flag(&args, "t").unwrap_or(0);
        let case = ResidualCase {
            physics,
            dim,
            order: 1,
            qdegree: bench_qdegree(physics, 1),
            f32: args.get(3).is_some_and(|s| s == "f32"),
            jacobian: false,
            cfg,
        };
        case.kernel().expect("kernel").spec
    } else {
        // `mass`: the screened operators (alpha = 1.5), as the full-BP solves use them
        let alpha = if has("mass") { 1.5 } else { 0.0 };
        let kind = match args[0].as_str() {
            "bp1" => TensorKind::Mass,
            "bp3" => TensorKind::Diffusion { alpha },
            _ => TensorKind::CollocatedDiffusion { alpha },
        };
        let p: usize = args[1].parse().expect("order");
        let mut cfg = BpConfig::new(kind);
        cfg.interior_last = true;
        if has("otf") {
            cfg.geo = ferrofem_cuda::bp::GeoMode::OnTheFly;
        }
        cfg.register_columns = has("registers");
        cfg.persistent = has("persistent");
        cfg.direct_geometry = has("direct");
        cfg.elems_per_block = flag(&args, "epb");
        cfg.min_blocks = flag(&args, "minb").map(|m| m as u32);
        cfg.even_odd = !has("plain");
        cfg.evict_first_geometry = has("cs");
        cfg.late_indices = has("late");
        cfg.geo_prefetch = if has("pfl1") {
            GeoPrefetch::L1
        } else if has("pfl2") {
            GeoPrefetch::L2
        } else if has("pfreg") {
            GeoPrefetch::Registers
        } else {
            GeoPrefetch::None
        };
        cfg.skeleton_zeroing = if has("oz") {
            SkeletonZeroing::Owner
        } else if has("la") {
            SkeletonZeroing::Lookahead
        } else if has("lal") {
            SkeletonZeroing::LookaheadLate
        } else if has("pl") {
            SkeletonZeroing::Pipelined
        } else if has("ov") {
            SkeletonZeroing::Overlapped
        } else {
            SkeletonZeroing::Host
        };
        cfg.groups_in_sequence = flag(&args, "chunk").unwrap_or(1);
        if has("tuned") {
            // the tuned stored kernel (its cap and block unless minb= / epb= are given)
            let t = BpConfig::tuned(kind, cfg.geo, p);
            cfg = BpConfig {
                min_blocks: cfg.min_blocks.or(t.min_blocks),
                elems_per_block: cfg.elems_per_block.or(t.elems_per_block),
                skeleton_zeroing: cfg.skeleton_zeroing,
                groups_in_sequence: cfg.groups_in_sequence,
                ..t
            };
        }
        cfg.pencil_weights |= has("pw");
        cfg.conflict_free_pitches |= has("cf");
        if has("table") {
            cfg.slot_arithmetic = false;
        }
        if let Some(b) = args.iter().find_map(|a| a.strip_prefix("brick=")) {
            let d: Vec<usize> = b
                .split('x')
                .map(|x| x.parse().expect("brick=AxBxC"))
                .collect();
            cfg = cfg.with_bricks([d[0], d[1], d[2]], p);
        }
        if let Some(b) = args.iter().find_map(|a| a.strip_prefix("lattice=")) {
            // the lattice kernel (v26, BP1) on bricks of this shape
            let d: Vec<usize> = b
                .split('x')
                .map(|x| x.parse().expect("lattice=AxBxC"))
                .collect();
            cfg = BpConfig::lattice([d[0], d[1], d[2]]);
            cfg.min_blocks = flag(&args, "minb").map(|m| m as u32);
            cfg.conflict_free_pitches = has("cf");
            cfg.rolled_element_loops = has("rolled");
            // v51: only these phases' element loops rolled (rp=23: phases 2 and 3)
            if let Some(d) = args.iter().find_map(|a| a.strip_prefix("rp=")) {
                cfg.rolled_phases = d
                    .chars()
                    .map(|c| match c.to_digit(10) {
                        Some(k @ 1..=5) => 1u8 << (k - 1),
                        _ => panic!("rp=DIGITS: lattice phases 1..5"),
                    })
                    .fold(0, |m, b| m | b);
            }
            // v31: the brick walked in this many steps along z (lattice= is the column)
            cfg.lattice_steps = flag(&args, "steps").unwrap_or(1);
            // v33: the boundary's offsets in shared memory (so), and staged (st)
            if has("so") {
                cfg.lattice_boundary = LatticeBoundary::SharedOffsets;
            } else if has("st") {
                cfg.lattice_boundary = LatticeBoundary::Staged;
            }
            // v34: lines split across threads
            cfg.split_lines = has("split");
            // v35: the brick boundary's slots in ring order
            if has("ring") {
                cfg.lattice_slots = ferrofem_space::SlotOrder::Ring;
            }
            // v39: the brick's weights prefetched into L2 at the block's start
            if has("pfl2") {
                cfg.geo_prefetch = GeoPrefetch::L2;
            }
            // v41: or bulk-copied into shared memory
            if has("pfsm") {
                cfg.geo_prefetch = GeoPrefetch::Shared;
            }
            // v48: one lattice array
            cfg.one_lattice_array = has("onearr");
            // v42: the gather's data asked of L2 this many bricks ahead
            cfg.gather_lookahead = flag(&args, "ga").unwrap_or(0) as u32;
            // v40: the weights loaded evict-first
            cfg.evict_first_geometry = has("cs");
            if has("oz") {
                cfg.skeleton_zeroing = SkeletonZeroing::Owner;
            } else if has("ov") {
                cfg.skeleton_zeroing = SkeletonZeroing::Overlapped;
            }
        }
        let k = if args[2] == "f32" {
            bp_kernel::<f32>(cfg, p)
        } else {
            bp_kernel::<f64>(cfg, p)
        };
        let mut spec = k.expect("kernel").spec;
        for a in &args {
            if let Some(d) = a.strip_prefix("D=") {
                // D=NAME (1) or D=NAME=VALUE
                spec = match d.split_once('=') {
                    Some((name, v)) => spec.define(name, v.parse::<i64>().expect("D=NAME=INTEGER")),
                    None => spec.define(d, 1),
                };
            }
        }
        spec
    };
    if has("source") {
        // the generated CUDA source (to read a compiler error's line)
        print!("{}", spec.source);
        return;
    }
    if has("ptx") {
        // the PTX instead of the ptxas report (to read what the contractions compile to)
        let out = compile_uncached(&spec, Target::Ptx(90)).unwrap_or_else(|e| panic!("{e}"));
        print!("{}", String::from_utf8_lossy(&out.image));
        return;
    }
    let out = compile_uncached(&spec, Target::Cubin(90)).unwrap_or_else(|e| panic!("{e}"));
    if let Some(path) = args.iter().find_map(|a| a.strip_prefix("cubin=")) {
        // the machine code, for nvdisasm (to read what the scheduler made of it)
        std::fs::write(path, &out.image).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    println!("{}", spec.name);
    for l in out.log.lines().filter(|l| !l.trim().is_empty()) {
        println!("  {}", l.trim());
    }
}

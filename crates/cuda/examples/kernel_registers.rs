//! Prints what ptxas (inside NVRTC) reports for kernel specialisations: registers, spills,
//! shared memory. A development aid that needs NVRTC but no GPU.
//!
//! ```text
//! cargo run --release -p ferrofem-cuda --example kernel_registers -- tuned [f32] [p=N] [bp1|bp3|bp35]
//! cargo run --release -p ferrofem-cuda --example kernel_registers -- bp1 7 f64 [otf] [mass] [q=N] [PLAN] [D=NAME | D=NAME=VALUE] [ptx|source|cubin=PATH]
//! cargo run --release -p ferrofem-cuda --example kernel_registers -- residual elasticity 3 f32 [b=8] [n=4] [t=1] [global] [per-cell]
//! ```
//!
//! `tuned`: every tuned plan of the H200 and H100 SXM device classes (the pencil plans of
//! every operator and geometry, and BP1's lattice plans on bricks), each specialisation
//! once with the classes whose plan it is; f64 unless `f32`.
//!
//! One bake-off specialisation (`bp1`, `bp3` or `bp35`, the order, the precision; `mass`:
//! the screened operator, α = 1.5; `q=N`: N Gauss points per direction), where `PLAN` is
//! - `slice2d`: the paper's slice kernel;
//! - `lattice=AxBxC [minb=N] [rp=DIGITS] [wshared] [ahead=N]`: the lattice kernel on bricks of
//!   that shape (its register cap, the phases whose loops stay rolled, the weights in shared
//!   memory, the gather's lookahead in bricks), or `lattice [h100]`: the tuned one;
//! - otherwise the pencil kernel: `[tuned [h100]] [columns] [persistent] [direct] [pw]
//!   [banks] [table] [overlap] [epb=N] [minb=N]` (the H200's or the H100's tuned plan, with
//!   the named choices switched on and the block or cap given).

use ferrofem_cuda::bp::{
    bp_kernel, BpOperator, BpPlan, DeviceClass, LatticePlan, PencilPlan, TESTED_KINDS,
};
use ferrofem_cuda::compile::{compile_uncached, KernelSpec, Target};
use ferrofem_cuda::residual::{bench_qdegree, Output, ResidualCase, ResidualConfig, Strategy};
use ferrofem_geometry::GeometrySource;
use ferrofem_operator::tensor::TensorKind;

/// The device classes with tuned plans, and their names.
const CLASSES: [(DeviceClass, &str); 2] = [
    (DeviceClass::H200, "H200"),
    (DeviceClass::H100_SXM, "H100 SXM"),
];

fn flag(args: &[String], key: &str) -> Option<usize> {
    args.iter().find_map(|a| {
        a.strip_prefix(&format!("{key}="))
            .and_then(|v| v.parse().ok())
    })
}

/// The bake-off operator named `bp1`, `bp3` or `bp35` (screened with α = `alpha`).
fn kind_of(name: &str, alpha: f64) -> TensorKind {
    match name {
        "bp1" => TensorKind::Mass,
        "bp3" => TensorKind::Diffusion { alpha },
        "bp35" => TensorKind::CollocatedDiffusion { alpha },
        _ => panic!("{name}: bp1, bp3 or bp35"),
    }
}

/// The kernel specialisation of `op` and `plan` at order `p`.
fn bp_spec(op: &BpOperator, plan: &BpPlan, p: usize, f32: bool) -> KernelSpec {
    let k = if f32 {
        bp_kernel::<f32>(op, plan, p)
    } else {
        bp_kernel::<f64>(op, plan, p)
    };
    k.unwrap_or_else(|e| panic!("{op:?} {}: {e}", plan.describe()))
        .spec
}

/// Every tuned plan of [`CLASSES`] (for the orders and operators the filters keep), each
/// with its operator, order and the classes whose plan it is.
fn tuned_plans(args: &[String]) -> Vec<(BpOperator, BpPlan, usize, Vec<&'static str>)> {
    let order = flag(args, "p");
    let only: Vec<TensorKind> = ["bp1", "bp3", "bp35"]
        .iter()
        .filter(|k| args.iter().any(|a| a == *k))
        .map(|k| kind_of(k, 0.0))
        .collect();
    let same_operator =
        |a: TensorKind, b: TensorKind| std::mem::discriminant(&a) == std::mem::discriminant(&b);
    let mut plans: Vec<(BpOperator, BpPlan, usize, Vec<&'static str>)> = Vec::new();
    for kind in TESTED_KINDS {
        if !only.is_empty() && !only.iter().any(|&k| same_operator(k, kind)) {
            continue;
        }
        for geo in [GeometrySource::Stored, GeometrySource::OnTheFly] {
            let op = BpOperator::new(kind, geo);
            for p in (1..=8).filter(|&p| order.is_none_or(|o| o == p)) {
                for (class, name) in CLASSES {
                    let tuned = BpPlan::tuned(&class, &op, p);
                    for plan in
                        std::iter::once(tuned).chain(BpPlan::tuned_on_bricks(&class, &op, p))
                    {
                        match plans
                            .iter_mut()
                            .find(|(o, pl, q, _)| *o == op && *pl == plan && *q == p)
                        {
                            Some((.., classes)) => classes.push(name),
                            None => plans.push((op, plan, p, vec![name])),
                        }
                    }
                }
            }
        }
    }
    plans
}

/// Compiles every tuned plan's specialisation (in parallel: NVRTC is single-threaded per
/// call) and prints its name, its classes and what ptxas reports of registers and spills.
fn print_tuned(args: &[String]) {
    let f32 = args.iter().any(|a| a == "f32");
    let plans = tuned_plans(args);
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(8);
    let reports: Vec<(usize, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let plans = &plans;
                s.spawn(move || {
                    let mut out = Vec::new();
                    for (i, (op, plan, p, classes)) in
                        plans.iter().enumerate().skip(t).step_by(threads)
                    {
                        let spec = bp_spec(op, plan, *p, f32);
                        let c = compile_uncached(&spec, Target::Cubin(90))
                            .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
                        let mut report = format!(
                            "{} p={p} {} {}: {} [{}]\n",
                            op.kind.name(),
                            op.geo.tag(),
                            plan.describe(),
                            spec.name,
                            classes.join(", ")
                        );
                        for l in c
                            .log
                            .lines()
                            .filter(|l| l.contains("registers") || l.contains("spill"))
                        {
                            report += &format!("  {}\n", l.trim());
                        }
                        out.push((i, report));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a compile thread panicked"))
            .collect()
    });
    let mut reports = reports;
    reports.sort_by_key(|r| r.0);
    for (_, r) in reports {
        print!("{r}");
    }
}

/// The plan `args` spell for `op` at order `p` (see the file's doc comment).
fn plan_of(args: &[String], op: &BpOperator, p: usize) -> BpPlan {
    let has = |s: &str| args.iter().any(|a| a == s);
    let class = if has("h100") {
        DeviceClass::H100_SXM
    } else {
        DeviceClass::H200
    };
    let min_blocks = flag(args, "minb").map(|m| m as u32);
    if has("slice2d") {
        return BpPlan::Slice2d;
    }
    if has("lattice") {
        return BpPlan::tuned_on_bricks(&class, op, p)
            .expect("no tuned lattice plan for this operator and order");
    }
    if let Some(b) = args.iter().find_map(|a| a.strip_prefix("lattice=")) {
        let d: Vec<usize> = b
            .split('x')
            .map(|x| x.parse().expect("lattice=AxBxC"))
            .collect();
        let rolled_phases = args
            .iter()
            .find_map(|a| a.strip_prefix("rp="))
            .map_or(0, |digits| {
                digits
                    .chars()
                    .map(|c| match c.to_digit(10) {
                        Some(k @ 1..=5) => 1u8 << (k - 1),
                        _ => panic!("rp=DIGITS: lattice phases 1..5"),
                    })
                    .fold(0, |m, b| m | b)
            });
        let plan = LatticePlan {
            brick: [d[0], d[1], d[2]],
            min_blocks,
            rolled_phases,
            weights_in_shared: has("wshared"),
            lookahead: flag(args, "ahead").unwrap_or(0) as u32,
        };
        return BpPlan::Lattice(plan);
    }
    let base = if has("tuned") {
        match BpPlan::tuned(&class, op, p) {
            BpPlan::Pencil(t) => t,
            other => panic!("tuned plan {} is not a pencil plan", other.describe()),
        }
    } else {
        PencilPlan::new()
    };
    BpPlan::Pencil(PencilPlan {
        elems_per_block: flag(args, "epb").or(base.elems_per_block),
        min_blocks: min_blocks.or(base.min_blocks),
        direct_geometry: base.direct_geometry || has("direct"),
        persistent: base.persistent || has("persistent"),
        register_columns: base.register_columns || has("columns"),
        pencil_weights: base.pencil_weights || has("pw"),
        bank_pitches: base.bank_pitches || has("banks"),
        slot_table: base.slot_table || has("table"),
        overlapped_fill: base.overlapped_fill || has("overlap"),
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "tuned") {
        print_tuned(&args);
        return;
    }
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
        let kind = kind_of(&args[0], if has("mass") { 1.5 } else { 0.0 });
        let p: usize = args[1].parse().expect("order");
        let geo = if has("otf") {
            GeometrySource::OnTheFly
        } else {
            GeometrySource::Stored
        };
        let op = BpOperator {
            q1d: flag(&args, "q"),
            ..BpOperator::new(kind, geo)
        };
        let plan = plan_of(&args, &op, p);
        let mut spec = bp_spec(&op, &plan, p, args[2] == "f32");
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

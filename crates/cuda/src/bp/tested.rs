//! The specialisations the tests and the CI compile check cover: every tuned plan of every
//! tabled device class, the paper's slice kernel, and the plans' neighbours (each tuned
//! choice switched off or on), in both precisions.

use super::plan::{BpOperator, BpPlan, LatticePlan, PencilPlan};
use super::tuned::DeviceClass;
use ferrofem_geometry::GeometrySource;
use ferrofem_operator::tensor::TensorKind;

/// The operators the tests and the CI compile check cover: BP1, BP3 and BP3.5, pure and
/// screened (α = 1.5).
pub const TESTED_KINDS: [TensorKind; 5] = [
    TensorKind::Mass,
    TensorKind::Diffusion { alpha: 0.0 },
    TensorKind::Diffusion { alpha: 1.5 },
    TensorKind::CollocatedDiffusion { alpha: 0.0 },
    TensorKind::CollocatedDiffusion { alpha: 1.5 },
];

/// The brick shapes the lattice kernel is tested with at order `p`, the tuned one first.
pub fn lattice_shapes(p: usize) -> Vec<[usize; 3]> {
    match p {
        1 | 2 => vec![[4, 4, 4], [4, 4, 2]],
        3 => vec![[4, 4, 2], [2, 2, 2], [4, 2, 2]],
        4 => vec![[2, 2, 1], [4, 4, 2], [2, 2, 2]],
        5..=7 => vec![[2, 2, 1], [2, 2, 2]],
        _ => vec![[2, 2, 1]],
    }
}

/// One tested specialisation: operator, plan, order, and whether in f32 (else f64).
pub type Tested = (BpOperator, BpPlan, usize, bool);

/// Every tested specialisation, without repeats.
pub fn tested_configurations() -> Vec<Tested> {
    let mut v: Vec<Tested> = Vec::new();
    let mut both = |op: BpOperator, plan: BpPlan, p: usize| {
        for f32 in [false, true] {
            let t = (op, plan, p, f32);
            if !v.iter().any(|x| format!("{x:?}") == format!("{t:?}")) {
                v.push(t);
            }
        }
    };
    for kind in TESTED_KINDS {
        for geo in [GeometrySource::Stored, GeometrySource::OnTheFly] {
            let op = BpOperator::new(kind, geo);
            let stored = geo == GeometrySource::Stored;
            for p in 1..=8 {
                both(op, BpPlan::Slice2d, p);
                both(op, BpPlan::Pencil(PencilPlan::new()), p);
                if stored {
                    both(op, BpPlan::Pencil(PencilPlan::new().direct()), p);
                }
                both(op, BpPlan::Pencil(PencilPlan::new().persistent()), p);
                if kind == TensorKind::Mass {
                    both(op, BpPlan::Pencil(PencilPlan::new().columns()), p);
                }
                for class in DeviceClass::TABLED {
                    let BpPlan::Pencil(t) = BpPlan::tuned(&class, &op, p) else {
                        unreachable!("the tuned plans of the table are pencil plans")
                    };
                    both(op, BpPlan::Pencil(t), p);
                    // the other way to the skeleton slots and the other pitches, uncapped
                    // (under some tuned caps the other way spills)
                    let free = PencilPlan {
                        min_blocks: None,
                        ..t
                    };
                    both(
                        op,
                        BpPlan::Pencil(PencilPlan {
                            slot_table: !t.slot_table,
                            ..free
                        }),
                        p,
                    );
                    both(
                        op,
                        BpPlan::Pencil(PencilPlan {
                            bank_pitches: !t.bank_pitches,
                            ..free
                        }),
                        p,
                    );
                    if t.register_columns && stored {
                        both(
                            op,
                            BpPlan::Pencil(PencilPlan {
                                pencil_weights: !t.pencil_weights,
                                ..free
                            }),
                            p,
                        );
                    }
                    // a solve's own rules: one point fewer and one more (BP1, BP3)
                    if !kind.is_collocated() {
                        for q in [p + 1, p + 3] {
                            let op = BpOperator { q1d: Some(q), ..op };
                            both(op, BpPlan::tuned(&class, &op, p), p);
                        }
                    }
                    if let Some(l) = BpPlan::tuned_on_bricks(&class, &op, p) {
                        both(op, l, p);
                    }
                }
                // the lattice kernel on other bricks, with and without its choices
                if kind == TensorKind::Mass && stored {
                    for brick in lattice_shapes(p) {
                        let l = LatticePlan {
                            brick,
                            min_blocks: None,
                            rolled_phases: 0,
                            weights_in_shared: false,
                            lookahead: 0,
                        };
                        both(op, BpPlan::Lattice(l), p);
                        both(
                            op,
                            BpPlan::Lattice(LatticePlan {
                                rolled_phases: 31,
                                lookahead: 264,
                                ..l
                            }),
                            p,
                        );
                        if p >= 3 {
                            both(
                                op,
                                BpPlan::Lattice(LatticePlan {
                                    weights_in_shared: true,
                                    ..l
                                }),
                                p,
                            );
                        }
                    }
                }
            }
        }
    }
    v
}

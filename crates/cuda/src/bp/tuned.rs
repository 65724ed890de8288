//! The tuned plans: a table keyed by device class and (operator, geometry, order), and a
//! plan derived from the device for classes not in it.
//!
//! The rows were chosen by measuring every candidate plan on the device, f64, meshes of
//! about 4·10⁷ DoFs (docs/bp-gpu.md). `F` marks the geometry measured fastest for an
//! operator and order, which [`BpPlan::fastest`] takes.

use super::plan::{BpOperator, BpPlan, LatticePlan, PencilPlan};
use crate::GpuDevice;
use ferrofem_geometry::GeometrySource;
use ferrofem_operator::tensor::TensorKind;

/// Peak memory bandwidth classes that tuned plans are keyed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BandwidthClass {
    /// Below 2.5 TB/s.
    Below2_5,
    /// 2.5 to 4 TB/s (HBM3: H100 SXM, 3.35 TB/s).
    From2_5To4,
    /// 4 TB/s and above (HBM3e: H200, 4.8 TB/s).
    From4,
}

impl BandwidthClass {
    /// The class of a peak bandwidth in bytes per second.
    pub fn of(peak_bytes_per_second: f64) -> BandwidthClass {
        if peak_bytes_per_second >= 4.0e12 {
            BandwidthClass::From4
        } else if peak_bytes_per_second >= 2.5e12 {
            BandwidthClass::From2_5To4
        } else {
            BandwidthClass::Below2_5
        }
    }

    fn rank(self) -> i32 {
        self as i32
    }
}

/// What the tuned plans depend on: the architecture, the number of multiprocessors and the
/// memory bandwidth.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceClass {
    /// Compute capability (major, minor).
    pub arch: (i32, i32),
    /// Multiprocessors.
    pub sms: usize,
    /// Peak memory bandwidth class.
    pub bandwidth: BandwidthClass,
}

impl DeviceClass {
    /// NVIDIA H100 SXM: sm_90, 132 multiprocessors, HBM3.
    pub const H100_SXM: DeviceClass = DeviceClass {
        arch: (9, 0),
        sms: 132,
        bandwidth: BandwidthClass::From2_5To4,
    };
    /// NVIDIA H200: sm_90, 132 multiprocessors, HBM3e.
    pub const H200: DeviceClass = DeviceClass {
        arch: (9, 0),
        sms: 132,
        bandwidth: BandwidthClass::From4,
    };
    /// The classes with rows of their own.
    pub const TABLED: [DeviceClass; 2] = [DeviceClass::H100_SXM, DeviceClass::H200];

    /// The class of `dev`.
    pub fn of(dev: &GpuDevice) -> DeviceClass {
        DeviceClass {
            arch: dev.compute_capability(),
            sms: dev.sm_count(),
            bandwidth: BandwidthClass::of(dev.peak_bandwidth()),
        }
    }
}

/// The operators the table is keyed by: the screened forms (`α ≠ 0`) have rows of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TunedOp {
    Bp1,
    Bp3,
    Bp3Screened,
    Bp35,
    Bp35Screened,
}

impl TunedOp {
    fn of(kind: TensorKind) -> TunedOp {
        match kind {
            TensorKind::Mass => TunedOp::Bp1,
            TensorKind::Diffusion { alpha } if alpha != 0.0 => TunedOp::Bp3Screened,
            TensorKind::Diffusion { .. } => TunedOp::Bp3,
            TensorKind::CollocatedDiffusion { alpha } if alpha != 0.0 => TunedOp::Bp35Screened,
            TensorKind::CollocatedDiffusion { .. } => TunedOp::Bp35,
        }
    }
}

/// Whether a row's geometry is the one measured fastest for its operator and order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fastest {
    /// The fastest geometry.
    F,
    /// Not the fastest.
    N,
}

/// (operator, geometry, order, fastest geometry, plan).
type Row = (TunedOp, GeometrySource, usize, Fastest, PencilPlan);

/// A lattice row: its brick, register cap, rolled phases, weights in shared memory, and
/// the gather's lookahead in blocks per multiprocessor (one wave of resident blocks).
struct LatticeRow {
    brick: [usize; 3],
    min_blocks: Option<u32>,
    rolled_phases: u8,
    weights_in_shared: bool,
    ahead_per_sm: u32,
}

const fn lattice(
    brick: [usize; 3],
    min_blocks: Option<u32>,
    rolled_phases: u8,
    weights_in_shared: bool,
    ahead_per_sm: u32,
) -> LatticeRow {
    LatticeRow {
        brick,
        min_blocks,
        rolled_phases,
        weights_in_shared,
        ahead_per_sm,
    }
}

/// Tuned rows for one device class.
struct Tuning {
    class: DeviceClass,
    rows: &'static [Row],
    /// Rows measured on this class that replace the same (operator, geometry, order) in
    /// `rows` (shared with a class of the same multiprocessors).
    overrides: &'static [Row],
    /// BP1 with stored weights on meshes sorted into bricks: (order, plan).
    lattice: &'static [(usize, LatticeRow)],
}

use Fastest::{F, N};
use GeometrySource::{OnTheFly, Stored};
use TunedOp::{Bp1, Bp3, Bp35, Bp35Screened, Bp3Screened};
const P: PencilPlan = PencilPlan::new();

/// Measured on one H200 (BENCHMARKS.md).
#[rustfmt::skip]
const H200_ROWS: &[Row] = &[
    (Bp1, Stored, 1, F, P),
    (Bp1, Stored, 2, F, P.columns()),
    (Bp1, Stored, 3, F, P.columns().direct().cap(12).pencil_weights().bank_pitches().slot_table()),
    (Bp1, Stored, 4, F, P.columns().direct().cap(12).pencil_weights().bank_pitches()),
    (Bp1, Stored, 5, F, P.columns().direct().cap(8).elems(3).pencil_weights().bank_pitches()),
    (Bp1, Stored, 6, F, P.columns().cap(8).pencil_weights().bank_pitches().slot_table()),
    (Bp1, Stored, 7, F, P.columns().direct().cap(12).pencil_weights().bank_pitches().overlapped_fill()),
    (Bp1, Stored, 8, F, P.columns().direct().cap(8).bank_pitches().overlapped_fill()),
    (Bp1, OnTheFly, 1, N, P.columns()),
    (Bp1, OnTheFly, 2, N, P.columns()),
    (Bp1, OnTheFly, 3, N, P.columns().cap(8)),
    (Bp1, OnTheFly, 4, N, P.columns().cap(8)),
    (Bp1, OnTheFly, 5, N, P.columns().cap(8)),
    (Bp1, OnTheFly, 6, N, P.columns().cap(8)),
    (Bp1, OnTheFly, 7, N, P.columns().cap(10)),
    (Bp1, OnTheFly, 8, N, P.columns().cap(8)),
    (Bp3, Stored, 1, F, P),
    (Bp3, Stored, 2, N, P.persistent()),
    (Bp3, Stored, 3, N, P.direct().cap(8).bank_pitches().slot_table()),
    (Bp3, Stored, 4, F, P.direct().cap(7).bank_pitches()),
    (Bp3, Stored, 5, N, P.direct().cap(6).elems(3).bank_pitches()),
    (Bp3, Stored, 6, N, P.direct().cap(6).bank_pitches()),
    (Bp3, Stored, 7, N, P.direct().cap(8).bank_pitches().slot_table()),
    (Bp3, Stored, 8, N, P.direct().cap(5).bank_pitches()),
    (Bp3, OnTheFly, 1, N, P),
    (Bp3, OnTheFly, 2, F, P),
    (Bp3, OnTheFly, 3, F, P.bank_pitches()),
    (Bp3, OnTheFly, 4, N, P.bank_pitches()),
    (Bp3, OnTheFly, 5, F, P.elems(1).bank_pitches()),
    (Bp3, OnTheFly, 6, F, P.elems(1).bank_pitches()),
    (Bp3, OnTheFly, 7, F, P.elems(3).bank_pitches()),
    (Bp3, OnTheFly, 8, F, P.elems(1).bank_pitches()),
    (Bp3Screened, Stored, 1, F, P),
    (Bp3Screened, Stored, 2, N, P.persistent()),
    (Bp3Screened, Stored, 3, N, P.direct().cap(8).bank_pitches().slot_table()),
    (Bp3Screened, Stored, 4, F, P.direct().cap(7).bank_pitches()),
    (Bp3Screened, Stored, 5, N, P.direct().cap(5).bank_pitches()),
    (Bp3Screened, Stored, 6, N, P.direct().cap(5).bank_pitches()),
    (Bp3Screened, Stored, 7, N, P.direct().cap(6).bank_pitches().slot_table()),
    (Bp3Screened, Stored, 8, N, P.direct().cap(4).bank_pitches()),
    (Bp3Screened, OnTheFly, 1, N, P),
    (Bp3Screened, OnTheFly, 2, F, P),
    (Bp3Screened, OnTheFly, 3, F, P.bank_pitches()),
    (Bp3Screened, OnTheFly, 4, N, P.bank_pitches()),
    (Bp3Screened, OnTheFly, 5, F, P.elems(1).bank_pitches()),
    (Bp3Screened, OnTheFly, 6, F, P.elems(1).bank_pitches()),
    (Bp3Screened, OnTheFly, 7, F, P.elems(1).bank_pitches()),
    (Bp3Screened, OnTheFly, 8, F, P.elems(1).bank_pitches()),
    (Bp35, Stored, 1, N, P.persistent()),
    (Bp35, Stored, 2, F, P),
    (Bp35, Stored, 3, N, P.direct().cap(8)),
    (Bp35, Stored, 4, N, P.direct().cap(6)),
    (Bp35, Stored, 5, N, P.direct().cap(6).slot_table()),
    (Bp35, Stored, 6, N, P.direct().cap(4)),
    (Bp35, Stored, 7, N, P.direct().elems(1).slot_table()),
    (Bp35, Stored, 8, N, P.direct().cap(6).elems(1)),
    (Bp35, OnTheFly, 1, F, P),
    (Bp35, OnTheFly, 2, N, P),
    (Bp35, OnTheFly, 3, F, P.persistent().elems(2)),
    (Bp35, OnTheFly, 4, F, P),
    (Bp35, OnTheFly, 5, F, P),
    (Bp35, OnTheFly, 6, F, P.elems(1)),
    (Bp35, OnTheFly, 7, F, P.elems(1)),
    (Bp35, OnTheFly, 8, F, P.cap(5).elems(1)),
    (Bp35Screened, Stored, 1, N, P.persistent()),
    (Bp35Screened, Stored, 2, F, P),
    (Bp35Screened, Stored, 3, N, P.direct().cap(8)),
    (Bp35Screened, Stored, 4, N, P.direct().cap(6)),
    (Bp35Screened, Stored, 5, N, P.direct().cap(6).slot_table()),
    (Bp35Screened, Stored, 6, N, P.direct().cap(4)),
    (Bp35Screened, Stored, 7, N, P.direct().cap(7).elems(1).slot_table()),
    (Bp35Screened, Stored, 8, N, P.direct().cap(6).elems(1)),
    (Bp35Screened, OnTheFly, 1, F, P),
    (Bp35Screened, OnTheFly, 2, N, P),
    (Bp35Screened, OnTheFly, 3, F, P.persistent().elems(2)),
    (Bp35Screened, OnTheFly, 4, F, P),
    (Bp35Screened, OnTheFly, 5, F, P),
    (Bp35Screened, OnTheFly, 6, F, P.elems(1)),
    (Bp35Screened, OnTheFly, 7, F, P.cap(8).elems(1).slot_table()),
    (Bp35Screened, OnTheFly, 8, F, P.elems(1)),
];

/// Measured on one H200: the lattice kernel beats the pencil kernel for BP1
/// with stored weights at p = 3..8 on bricked meshes.
#[rustfmt::skip]
const H200_LATTICE: &[(usize, LatticeRow)] = &[
    (3, lattice([4, 4, 2], Some(4), 0, false, 4)),
    (4, lattice([2, 2, 1], Some(12), 0, false, 0)),
    (5, lattice([2, 2, 1], None, 0b100, false, 0)),
    (6, lattice([2, 2, 1], Some(6), 0, true, 0)),
    (7, lattice([2, 2, 1], Some(4), 0, true, 3)),
    (8, lattice([2, 2, 1], Some(3), 0b110, true, 0)),
];

/// Measured on one H100 SXM: where its register-cap measurement (none, 4, 6, 8, 10
/// blocks per SM at p = 3..8) found a plan faster than the H200's row by more than 1 %.
#[rustfmt::skip]
const H100_OVERRIDES: &[Row] = &[
    (Bp3, Stored, 7, N, P.direct().cap(6).bank_pitches().slot_table()),
];

/// The table. The H100 SXM shares the H200's multiprocessors, shared memory, registers and
/// L2, and on an H100 the H200's rows reach the byte model's roofline (BENCHMARKS.md), so
/// it takes them but where its own measurement found a faster plan.
const TUNINGS: [Tuning; 2] = [
    Tuning {
        class: DeviceClass::H200,
        rows: H200_ROWS,
        overrides: &[],
        lattice: H200_LATTICE,
    },
    Tuning {
        class: DeviceClass::H100_SXM,
        rows: H200_ROWS,
        overrides: H100_OVERRIDES,
        lattice: H200_LATTICE,
    },
];

impl Tuning {
    /// The row of `op` with geometry `geo` at order `p`: an override, else the shared row.
    fn row(&self, op: TunedOp, geo: GeometrySource, p: usize) -> Option<&'static Row> {
        let key = |r: &&Row| r.0 == op && r.1 == geo && r.2 == p;
        self.overrides
            .iter()
            .find(key)
            .or_else(|| self.rows.iter().find(key))
    }
}

/// The tuning for `class`: its own, else the nearest of the same architecture by memory
/// bandwidth; `None` for an architecture with none (the derived plans).
fn tuning(class: &DeviceClass) -> Option<&'static Tuning> {
    TUNINGS.iter().find(|t| t.class == *class).or_else(|| {
        TUNINGS
            .iter()
            .filter(|t| t.class.arch == class.arch)
            .min_by_key(|t| (t.class.bandwidth.rank() - class.bandwidth.rank()).abs())
    })
}

impl BpPlan {
    /// The tuned pencil plan for `op` at order `p` on a device of `class`: the class's row,
    /// else (another device of the architecture of a tabled class) the nearest class's row,
    /// else one derived from the device: direct geometry loads (no bulk copies before
    /// sm_90), register columns for BP1, the block sized for occupancy by its threads and
    /// shared memory, no register cap. Register caps apply to the `p + 2`-point rule they
    /// were measured with only.
    pub fn tuned(class: &DeviceClass, op: &BpOperator, p: usize) -> BpPlan {
        let row = tuning(class)
            .and_then(|t| t.row(TunedOp::of(op.kind), op.geo, p))
            .map(|r| r.4);
        let mut plan = row.unwrap_or_else(|| {
            let derived = if op.geo == GeometrySource::Stored {
                P.direct()
            } else {
                P
            };
            if op.kind == TensorKind::Mass {
                derived.columns()
            } else {
                derived
            }
        });
        if !op.default_rule(p) {
            plan.min_blocks = None;
        }
        BpPlan::Pencil(plan)
    }

    /// The geometry measured fastest for `kind` at order `p` on `class` (stored where the
    /// table has no choice).
    pub fn fastest_geometry(class: &DeviceClass, kind: TensorKind, p: usize) -> GeometrySource {
        tuning(class)
            .and_then(|t| {
                [GeometrySource::Stored, GeometrySource::OnTheFly]
                    .into_iter()
                    .find(|&g| t.row(TunedOp::of(kind), g, p).is_some_and(|r| r.3 == F))
            })
            .unwrap_or(GeometrySource::Stored)
    }

    /// [`BpPlan::tuned`] with the [`BpPlan::fastest_geometry`]: what the solvers use when
    /// nothing else is asked.
    pub fn fastest(
        class: &DeviceClass,
        kind: TensorKind,
        q1d: Option<usize>,
        p: usize,
    ) -> (BpOperator, BpPlan) {
        let op = BpOperator {
            kind,
            geo: BpPlan::fastest_geometry(class, kind, p),
            q1d,
        };
        (op, BpPlan::tuned(class, &op, p))
    }

    /// The tuned lattice plan where it beats the pencil kernel on a mesh that can be
    /// sorted into bricks (BP1 with stored weights, the default rule); `None` elsewhere.
    /// The lookahead is one wave of resident blocks on `class`'s multiprocessors.
    pub fn tuned_on_bricks(class: &DeviceClass, op: &BpOperator, p: usize) -> Option<BpPlan> {
        if op.kind != TensorKind::Mass || op.geo != GeometrySource::Stored || !op.default_rule(p) {
            return None;
        }
        let (_, l) = tuning(class)?.lattice.iter().find(|(q, _)| *q == p)?;
        Some(BpPlan::Lattice(LatticePlan {
            brick: l.brick,
            min_blocks: l.min_blocks,
            rolled_phases: l.rolled_phases,
            weights_in_shared: l.weights_in_shared,
            lookahead: l.ahead_per_sm * class.sms as u32,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tabled class has a row for every operator, geometry and order 1..=8, exactly
    /// one fastest geometry per operator and order, and plans its kernels accept.
    #[test]
    fn the_table_is_complete_and_every_row_is_a_valid_plan() {
        for t in &TUNINGS {
            for op in [Bp1, Bp3, Bp3Screened, Bp35, Bp35Screened] {
                for p in 1..=8 {
                    let rows: Vec<&Row> = t.rows.iter().filter(|r| r.0 == op && r.2 == p).collect();
                    assert_eq!(rows.len(), 2, "{op:?} p = {p}: one row per geometry");
                    assert_eq!(
                        rows.iter().filter(|r| r.3 == F).count(),
                        1,
                        "{op:?} p = {p}"
                    );
                }
            }
            for o in t.overrides {
                assert!(
                    t.rows
                        .iter()
                        .any(|r| (r.0, r.1, r.2, r.3) == (o.0, o.1, o.2, o.3)),
                    "{o:?} overrides a row of the same fastest-geometry mark"
                );
            }
            for r in t.rows.iter().chain(t.overrides) {
                let kind = match r.0 {
                    Bp1 => TensorKind::Mass,
                    Bp3 => TensorKind::Diffusion { alpha: 0.0 },
                    Bp3Screened => TensorKind::Diffusion { alpha: 1.5 },
                    Bp35 => TensorKind::CollocatedDiffusion { alpha: 0.0 },
                    Bp35Screened => TensorKind::CollocatedDiffusion { alpha: 1.5 },
                };
                let plan = BpPlan::Pencil(r.4);
                plan.check(&BpOperator::new(kind, r.1), r.2)
                    .unwrap_or_else(|e| panic!("{r:?}: {e}"));
            }
        }
    }

    /// Each class gets its own measured rows: the H100's override replaces the H200's row
    /// for that operator, geometry and order only.
    #[test]
    fn the_h100_takes_its_own_rows_where_measured() {
        let op = BpOperator::new(TensorKind::Diffusion { alpha: 0.0 }, Stored);
        let cap = |class: &DeviceClass, p| match BpPlan::tuned(class, &op, p) {
            BpPlan::Pencil(c) => c.min_blocks,
            other => panic!("{other:?}"),
        };
        assert_eq!(cap(&DeviceClass::H200, 7), Some(8));
        assert_eq!(cap(&DeviceClass::H100_SXM, 7), Some(6));
        for p in [3, 4, 5, 6, 8] {
            assert_eq!(cap(&DeviceClass::H200, p), cap(&DeviceClass::H100_SXM, p));
        }
    }

    /// A device of a tabled class gets its rows; another Hopper the nearest class's, with
    /// the lattice lookahead scaled to its multiprocessors; another architecture a derived
    /// plan without register caps; other rules lose the caps measured for p + 2 points.
    #[test]
    fn lookup_falls_back_by_bandwidth_then_derives() {
        let op = BpOperator::new(TensorKind::Mass, GeometrySource::Stored);
        let h200 = BpPlan::tuned_on_bricks(&DeviceClass::H200, &op, 3).unwrap();
        let BpPlan::Lattice(l) = h200 else {
            panic!("BP1 p = 3 on bricks is the lattice kernel")
        };
        assert_eq!(l.lookahead, 4 * 132);
        let pcie = DeviceClass {
            sms: 114,
            bandwidth: BandwidthClass::Below2_5,
            ..DeviceClass::H100_SXM
        };
        let BpPlan::Lattice(lp) = BpPlan::tuned_on_bricks(&pcie, &op, 3).unwrap() else {
            panic!("another Hopper takes the nearest class's lattice rows")
        };
        assert_eq!((lp.brick, lp.lookahead), (l.brick, 4 * 114));
        let ampere = DeviceClass {
            arch: (8, 0),
            sms: 108,
            bandwidth: BandwidthClass::Below2_5,
        };
        assert!(BpPlan::tuned_on_bricks(&ampere, &op, 3).is_none());
        let BpPlan::Pencil(d) = BpPlan::tuned(&ampere, &op, 7) else {
            panic!("derived plans are pencil plans")
        };
        assert!(d.direct_geometry && d.register_columns && d.min_blocks.is_none());
        let BpPlan::Pencil(capped) = BpPlan::tuned(&DeviceClass::H200, &op, 7) else {
            panic!()
        };
        assert!(capped.min_blocks.is_some());
        let other = BpOperator {
            q1d: Some(10),
            ..op
        };
        let BpPlan::Pencil(free) = BpPlan::tuned(&DeviceClass::H200, &other, 7) else {
            panic!()
        };
        assert_eq!(free.min_blocks, None);
        assert_eq!(BandwidthClass::of(3.35e12), BandwidthClass::From2_5To4);
        assert_eq!(BandwidthClass::of(4.8e12), BandwidthClass::From4);
    }
}

#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .device-bin/ carried along (see
# scripts/build-device-bin.sh): the GPU tests against their CPU twins, then the benchmarks;
# writes full logs and JSON records under $OUT and prints a short table last.
#   scripts/gpu-check.sh [MODE ...]   (default: quick; several modes run in sequence;
#   NOTEST=1 skips the tests; mode `tests` runs only them; an unknown mode is an error)
set -u
BIN=.device-bin
OUT=${OUT:-/tmp/ferrofem-out}
mkdir -p "$OUT"
# NVRTC of the machine's CUDA toolkit
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export FERROFEM_REQUIRE_GPU=1
export FERROFEM_KERNEL_CACHE="${FERROFEM_KERNEL_CACHE:-/tmp/ferrofem-kernel-cache}"
echo "== revision $(cat $BIN/REVISION 2>/dev/null)  date $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader
"$BIN/ferrofem" info 2>&1 | tee "$OUT/info.txt"

status=0
[ -n "${NOTEST:-}" ] || { echo "== GPU tests"; }
for t in "$BIN"/tests/*; do
  [ -n "${NOTEST:-}" ] && break
  # TESTFILTER: only the tests whose names contain it (kernels already tested)
  "$t" --test-threads=1 --nocapture ${TESTFILTER:-} > "$OUT/test-$(basename "$t").log" 2>&1
  rc=$?
  grep -E "^test |test result" "$OUT/test-$(basename "$t").log"
  [ $rc -ne 0 ] && { status=1; tail -40 "$OUT/test-$(basename "$t").log"; }
done

REC="$OUT/bench.jsonl"
bench() { echo "== ferrofem bench $*"; "$BIN/ferrofem" bench "$@" --record "$REC" 2>&1 | tee -a "$OUT/bench.log"; }
# the headline residual set: P1, 12 M cells, both precisions and dimensions, for each
# physics named
res_p1() {
  for prec in f64 f32; do
    for dim in 2 3; do
      for phys in "$@"; do
        bench residual --backend cuda --dim $dim --physics $phys --order 1 --precision $prec --cells 1.2e7 --reps 10
      done
    done
  done
}
# the hexahedral GPU solves of the README's problem: generated box at Q5..Q7, Gmsh mesh
HEX_SOLVES=("--box hex:24x24x24 --order 7" "--box hex:24x24x24 --order 6" "--box hex:24x24x24 --order 5"
            "--mesh tests/data/gmsh/box_hex_v41_binary.msh --dirichlet xmin,ymin --order 7")
# `ferrofem solve --backend cuda --problem poisson ARGS --solver pcg` for each ARGS given
solve_pcg() {
  for m in "$@"; do
    echo "== ferrofem solve --backend cuda --problem poisson $m --solver pcg"
    "$BIN/ferrofem" solve --backend cuda --problem poisson $m --solver pcg 2>&1 | tail -6
  done
}
# Nsight Compute on one steady-state bp_apply launch of `ferrofem bench ARGS` into FILE: L2
# sectors by operation, the L2 fabric, DRAM, the LSU pipe, occupancy, instructions, time
# (NCU_EXTRA: more options, e.g. sections)
NCU_L2="lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_red.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__ltcfabric2ltc_cycles_active.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,gpu__time_duration.sum"
ncu_apply() {
  local f=$1; shift
  ncu --clock-control none -k regex:bp_apply --launch-skip 1 --launch-count 1 --metrics "$NCU_L2" ${NCU_EXTRA:-} \
      "$BIN/ferrofem" bench "$@" --reps 1 --warmup 1 > "$f" 2>&1
}
for MODE in "${@:-quick}"; do
case "$MODE" in
  quick)
    bench bp3.5 --backend cuda --order 3,7 --reps 10
    bench bp1 --backend cuda --order 7 --reps 10
    bench bp3 --backend cuda --order 7 --reps 10
    ;;
  v2)
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 3..8; done
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 7 --kernel slice2d; done
    bench bp3.5 --backend cuda --order 7 --geo stored --solve 1e-8 --alpha 1
    bench bp3 --backend cuda --order 7 --geo stored --precision f32
    ;;
  v4)
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 3..8 --geo-load both; done
    bench bp3.5 --backend cuda --order 3..8 --geo stored --elems-per-block 1 --geo-load both
    ;;
  res)
    res_p1 poisson-varcoef elasticity
    bench residual --backend cuda --dim 3 --physics poisson-varcoef --order 2 --precision f64 --cells 2e6 --reps 10
    ;;
  final)
    for prec in f64 f32; do
      for dim in 2 3; do
        bench residual --backend cuda --dim $dim --physics poisson-varcoef --order 1 --precision $prec --cells 1.2e7 --reps 10
      done
      bench residual --backend cuda --dim 3 --physics elasticity --order 1 --precision $prec --cells 1.2e7 --reps 10
    done
    bench residual --backend cuda --dim 2 --physics elasticity --order 1 --precision f64 --cells 1.2e7 --reps 10
    echo "== solves (GPU, then CPU for comparison)"
    for args in "--problem poisson --box hex:32x32x32,perturb=0.2 --order 3" \
                "--problem elasticity --box tet:24x24x24,perturb=0.2 --order 2" \
                "--problem poisson-varcoef tests/data/gmsh/box_tet_v41_binary.msh --dirichlet xmin,ymin --order 2"; do
      for be in cuda cpu; do
        echo "-- ferrofem solve $args --solver pcg --backend $be"
        "$BIN/ferrofem" solve $args --solver pcg --backend $be --json | tee -a "$OUT/solve.jsonl"
      done
    done
    echo "== kernel cache: the second run compiles nothing"
    bench bp3.5 --backend cuda --order 7 --geo stored --reps 5
    bench bp3.5 --backend cuda --order 7 --geo stored --reps 5
    ;;
  recheck)
    for prec in f64 f32; do
      for dim in 2 3; do
        bench residual --backend cuda --dim $dim --physics poisson-varcoef --order 1 --precision $prec --cells 1.2e7 --reps 10
      done
    done
    for be in cuda cpu; do
      "$BIN/ferrofem" solve --problem poisson-varcoef tests/data/gmsh/box_tet_v41_binary.msh --dirichlet xmin,ymin --order 2 --solver pcg --backend $be --json | tee -a "$OUT/solve.jsonl"
    done
    ;;
  v5)
    # v5 (persistent, pipelined) against v2/v4 (tuned pencil), same process, stored geometry
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 3..8 --geo stored --kernel pencil,persistent; done
    bench bp3.5 --backend cuda --order 3,7,8 --geo otf --kernel pencil,persistent
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 1,2 --geo stored --kernel pencil,persistent; done
    ;;
  res3)
    # residual v3 (asynchronous double-buffered batches), stored and vertex geometry
    for prec in f64 f32; do
      for dim in 2 3; do
        bench residual --backend cuda --dim $dim --physics poisson-varcoef --order 1 --precision $prec --cells 1.2e7 --reps 10 --geometry both
      done
      bench residual --backend cuda --dim 3 --physics elasticity --order 1 --precision $prec --cells 1.2e7 --reps 10 --geometry both
    done
    bench residual --backend cuda --dim 2 --physics elasticity --order 1 --precision f64 --cells 1.2e7 --reps 10 --geometry both
    ;;
  res3b)
    # the residual benchmarks left: f32, elasticity
    for dim in 2 3; do
      bench residual --backend cuda --dim $dim --physics poisson-varcoef --order 1 --precision f32 --cells 1.2e7 --reps 10 --geometry both
    done
    for prec in f64 f32; do
      bench residual --backend cuda --dim 3 --physics elasticity --order 1 --precision $prec --cells 1.2e7 --reps 10
    done
    bench residual --backend cuda --dim 2 --physics elasticity --order 1 --precision f64 --cells 1.2e7 --reps 10
    ;;
  res4)
    # scalar P1 with contiguous 16-byte batch copies (v4 of the transposition)
    for prec in f32 f64; do
      for dim in 2 3; do
        bench residual --backend cuda --dim $dim --physics poisson-varcoef --order 1 --precision $prec --cells 1.2e7 --reps 10
      done
    done
    ;;
  res5)
    # component-major element vectors: elasticity batches as contiguous runs too
    for prec in f64 f32; do
      bench residual --backend cuda --dim 3 --physics elasticity --order 1 --precision $prec --cells 1.2e7 --reps 10
    done
    bench residual --backend cuda --dim 2 --physics elasticity --order 1 --precision f64 --cells 1.2e7 --reps 10
    bench residual --backend cuda --dim 2 --physics poisson-varcoef --order 1 --precision f32 --cells 1.2e7 --reps 10
    ;;
  v6)
    # v6: BP1 with register columns against the tuned pencil kernel; residual with fluxes
    # mapped to the reference cell (third session)
    bench bp1 --backend cuda --order 2..8 --geo stored --kernel pencil,registers
    bench bp1 --backend cuda --order 7 --geo stored --kernel registers --geo-load direct
    bench bp1 --backend cuda --order 3,7 --geo stored --kernel registers --elems-per-block 2
    bench bp1 --backend cuda --order 3,7 --geo otf --kernel pencil,registers
    res_p1 poisson-varcoef elasticity
    ;;
  v7)
    # residual elasticity with the threads-per-cell candidates; BP1 v6 with capped registers
    res_p1 elasticity
    bench bp1 --backend cuda --order 7 --geo stored --kernel pencil,registers --min-blocks 8
    bench bp1 --backend cuda --order 8 --geo stored --kernel pencil,registers --min-blocks 6
    ;;
  v8)
    # occupancy scan: direct geometry loads (no staged geometry in shared memory) with
    # registers capped by --min-blocks, against the tuned defaults
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 3..8 --geo stored; done
    for mb in 4 6 8; do bench bp3 --backend cuda --order 5..8 --geo stored --geo-load direct --min-blocks $mb; done
    for mb in 4 6 8; do bench bp3.5 --backend cuda --order 3..6 --geo stored --geo-load direct --min-blocks $mb; done
    for mb in 12 16; do bench bp1 --backend cuda --order 3..8 --geo stored --geo-load direct --min-blocks $mb; done
    bench bp1 --backend cuda --order 3..8 --geo stored --kernel registers --geo-load direct --min-blocks 8
    bench bp3 --backend cuda --order 3..8 --geo otf
    bench bp3 --backend cuda --order 7 --geo otf --min-blocks 4
    ;;
  final3)
    # the third session's tuned defaults and residual kernels, from one build
    bench bp1 --backend cuda --order 2..8 --geo stored
    for bp in bp3 bp3.5; do bench $bp --backend cuda --order 3..8 --geo stored; done
    res_p1 poisson-varcoef elasticity
    ;;
  v9)
    # v7 even-odd contractions (the default) against the plain products, tuned shapes
    bench bp1 --backend cuda --order 2..8 --geo stored
    bench bp1 --backend cuda --order 2..8 --geo stored --plain-contractions
    for bp in bp3 bp3.5; do
      bench $bp --backend cuda --order 3..8 --geo stored
      bench $bp --backend cuda --order 3..8 --geo stored --plain-contractions
    done
    ;;
  v9scan)
    # occupancy and prefetch scan of the even-odd kernels where BP1 and BP3 are below 85 %
    B="--backend cuda --geo stored --geo-load direct"
    for mb in 6 10 12; do bench bp1 $B --order 3..8 --kernel registers --min-blocks $mb; done
    for pf in l1 l2 registers; do bench bp1 $B --order 3..8 --kernel registers --min-blocks 8 --geo-prefetch $pf; done
    bench bp1 $B --order 7,8 --min-blocks 8
    for mb in 5 6 8; do bench bp3 $B --order 3,4,5 --min-blocks $mb; done
    bench bp3 $B --order 3 --min-blocks 10
    bench bp3 $B --order 8 --min-blocks 5
    bench bp3 $B --order 3,4,5,7 --min-blocks 8 --geo-prefetch l2
    bench bp3 $B --order 8 --min-blocks 4 --geo-prefetch l2
    bench bp3.5 --backend cuda --order 7 --geo stored --solve 1e-8 --alpha 1
    if command -v ncu >/dev/null; then
      S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats --section ComputeWorkloadAnalysis --section SchedulerStats"
      for bp in "bp1 7" "bp3 8" "bp3 4"; do
        set -- $bp
        ncu --clock-control none -k regex:bp_apply -c 1 $S "$BIN/ferrofem" bench $1 --backend cuda --order $2 --geo stored \
            --reps 1 --warmup 0 > "$OUT/ncu-$1-p$2-eo.txt" 2>&1
        echo "== ncu $1 p=$2"
        grep -E "DRAM Throughput|L1/TEX Cache|L2 Cache Throughput|Duration|Achieved Occupancy|Theoretical Occupancy|Registers Per|Warp Cycles Per Issued|Compute \(SM\)|Block Limit|Issue Slots|highest-utilized|Stall" "$OUT/ncu-$1-p$2-eo.txt" | head -30
      done
    fi
    ;;
  v10)
    # elements per block (lanes used per warp) with spill-free register caps, even-odd
    B="--backend cuda --geo stored --geo-load direct"
    R="$B --kernel registers"
    for c in "7 3 4" "7 2 6" "7 1 12" "5 5 4" "5 5 5" "5 2 12" "4 8 3" "4 8 4" "3 10 4" "3 10 5" "6 4 4" "6 2 8"; do
      set -- $c; bench bp1 $R --order $1 --elems-per-block $2 --min-blocks $3
    done
    bench bp1 $R --order 8 --min-blocks 8
    bench bp1 $R --order 8 --min-blocks 8 --geo-prefetch l2
    for c in "4 8 2" "4 8 3" "4 3 6" "5 3 5" "5 3 4" "5 5 3" "5 2 8" "3 10 4" "3 5 8" "8 1 5"; do
      set -- $c; bench bp3 $B --order $1 --elems-per-block $2 --min-blocks $3
    done
    ;;
  final4)
    # the fourth session's tuned defaults (even-odd contractions), from one build
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 1..8 --geo stored; done
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 7 --geo stored --precision f32; done
    bench bp3.5 --backend cuda --order 7 --geo stored --solve 1e-8 --alpha 1
    bench bp3 --backend cuda --order 7 --geo stored --solve 1e-8 --alpha 1
    ;;
  v11)
    # BP1 register columns with staged (bulk-copied) geometry under the even-odd caps;
    # BP3 p = 4, 6 and BP3.5 p = 7, 8 one cap further; the screened solves with caps
    for mb in 8 10 12; do bench bp1 --backend cuda --order 3..8 --geo stored --kernel registers --geo-load shared --min-blocks $mb; done
    D="--backend cuda --geo stored --geo-load direct"
    bench bp3 $D --order 4,6 --min-blocks 7
    for mb in 5 7; do bench bp3.5 $D --order 7 --elems-per-block 1 --min-blocks $mb; done
    for mb in 5 6; do bench bp3.5 $D --order 8 --elems-per-block 1 --min-blocks $mb; done
    bench bp3.5 --backend cuda --geo stored --geo-load shared --order 8 --min-blocks 5
    for mb in 5 7; do bench bp3.5 $D --order 7 --elems-per-block 1 --min-blocks $mb --solve 1e-8 --alpha 1; done
    ;;
  v12)
    # fifth session (v8): the skeleton zeroed by a fill before the launch, or by its owners
    # in the kernel (blocks in index order, flags acquired at the scatter), on one mesh per order
    for bp in bp1 bp3 bp3.5; do
      bench $bp --backend cuda --order 3..8 --geo stored --skeleton-zeroing host,owner
    done
    ;;
  v13)
    # v8 with the flags' cost spread: 1, 4 or 8 element groups per block in sequence, with
    # either zeroing, on one mesh per order (as run: under the tuned caps the chunked BP3
    # p = 7, 8 kernels spill, so CI compiles the chunked tuned kernels uncapped instead)
    for bp in bp1 bp3 bp3.5; do
      bench $bp --backend cuda --order 3..8 --geo stored --skeleton-zeroing host,owner --groups-in-sequence 1,4,8
    done
    ;;
  ncu12)
    # DRAM bytes of BP1 p = 7 with the owners zeroing the skeleton (against
    # notes/ncu-bp1-p7-l2-2026-11-21.txt, the fill before the launch)
    if command -v ncu >/dev/null; then
      for z in owner host; do
        ncu --clock-control none -k regex:bp_apply -c 1 \
            --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,lts__t_sectors_srcunit_tex_op_red.sum,lts__t_sector_hit_rate.pct \
            "$BIN/ferrofem" bench bp1 --backend cuda --order 7 --geo stored --reps 1 --warmup 0 \
            --skeleton-zeroing $z > "$OUT/ncu-bp1-p7-$z.txt" 2>&1
        echo "== ncu bp1 p=7 skeleton zeroing $z"
        grep -E "dram__|gpu__time|lts__" "$OUT/ncu-bp1-p7-$z.txt"
      done
    else
      echo "ncu not found"
    fi
    ;;
  v14a)
    # v9 (sixth session): on-the-fly geometry. BP1 with det J a quadratic along each column
    # of points; caps and block shapes of all three on the fly (never scanned since v5),
    # and the stored defaults of the same build for reference (two parts: v14a BP1, v14b the
    # rest, each within one device call)
    O="--backend cuda --geo otf"
    bench bp1 $O --order 3..8 --kernel pencil,registers --min-blocks 0,8,10,12
    bench bp1 $O --order 3,5,7 --kernel registers --elems-per-block 1,2,3,4 --min-blocks 0,10
    bench bp1 $O --order 1,2 --kernel pencil,registers
    ;;
  v14b)
    O="--backend cuda --geo otf"
    bench bp3.5 $O --order 3..8 --elems-per-block 1,2 --min-blocks 0,4,5
    bench bp3 $O --order 3..8 --elems-per-block 1,2 --min-blocks 0,4
    for bp in bp1 bp3 bp3.5; do bench $bp $O --order 7 --precision f32; done
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --geo stored --order 3,7; done
    if command -v ncu >/dev/null; then
      S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats --section ComputeWorkloadAnalysis"
      for c in "bp1 7 --kernel registers --min-blocks 12" "bp3.5 7"; do
        set -- $c
        ncu --clock-control none -k regex:bp_apply -c 1 $S "$BIN/ferrofem" bench $1 --order $2 "${@:3}" --backend cuda --geo otf \
            --reps 1 --warmup 0 > "$OUT/ncu-$1-p$2-otf.txt" 2>&1
        echo "== ncu $1 p=$2 otf"
        grep -E "DRAM Throughput|L1/TEX Cache|L2 Cache Throughput|Duration|Achieved Occupancy|Theoretical Occupancy|Registers Per|Warp Cycles Per Issued|Compute \(SM\)|Block Limit|Issue Slots|highest-utilized|Stall" "$OUT/ncu-$1-p$2-otf.txt" | head -30
      done
    fi
    ;;
  v15)
    # BP3.5 / BP3 on the fly with the shape heuristic's elements per block (v14 forced 1, 2)
    bench bp3.5 --backend cuda --geo otf --order 3..5 --elems-per-block 3,5,8
    bench bp3 --backend cuda --geo otf --order 3,4 --elems-per-block 3,5
    # the tuned defaults, stored and on the fly, from one build; f32 on the fly at p = 7
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 3..8 --geo all; done
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 7 --geo otf --precision f32; done
    bench bp3.5 --backend cuda --order 7 --geo all --solve 1e-8 --alpha 1
    solve_pcg "--box hex:24x24x24 --order 7" "--box hex:24x24x24 --order 6" \
             "--mesh tests/data/gmsh/box_hex_v41_binary.msh --dirichlet xmin,ymin --order 6"
    ;;
  v16)
    # v10: the on-the-fly metric by the column's adjugate polynomials, transposed phase in
    # place (three shared regions): the tuned on-the-fly and stored defaults, caps and shapes
    for bp in bp3.5 bp3; do bench $bp --backend cuda --order 3..8 --geo all; done
    bench bp3.5 --backend cuda --geo otf --order 5..8 --min-blocks 0,9
    bench bp3.5 --backend cuda --geo otf --order 4..8 --elems-per-block 1,2
    bench bp3 --backend cuda --geo otf --order 3..8 --elems-per-block 1,2
    for bp in bp3 bp3.5; do bench $bp --backend cuda --order 7 --geo otf --precision f32; done
    bench bp3.5 --backend cuda --order 7 --geo otf --solve 1e-8 --alpha 1
    ;;
  v17)
    # after v16 (three shared regions): BP3 stored block shapes and register caps where it
    # is below 85 % (p = 5, 8) and around the tuned ones elsewhere; the GPU solves with the
    # new fastest choice (BP3 on the fly at p = 7, 8)
    bench bp3 --backend cuda --geo stored --order 5 --elems-per-block 1,2,3 --min-blocks 7,8,9
    bench bp3 --backend cuda --geo stored --order 8 --elems-per-block 1 --min-blocks 4,5,6,7
    bench bp3 --backend cuda --geo stored --order 3 --elems-per-block 5,8 --min-blocks 8,10
    bench bp3 --backend cuda --geo stored --order 4 --elems-per-block 3,4 --min-blocks 7,8,9
    bench bp3 --backend cuda --geo stored --order 6 --elems-per-block 2,3 --min-blocks 6,7
    solve_pcg "${HEX_SOLVES[@]}"
    ;;
  final8)
    # the seventh session's build: the reverse-order skeleton fill against the memset on
    # every stored kernel, the on-the-fly kernels, f32 at p = 7, the full BP
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 3..8 --geo stored --skeleton-zeroing host,memset; done
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 3..8 --geo otf; done
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 7 --geo all --precision f32; done
    bench bp3.5 --backend cuda --order 7 --geo otf --solve 1e-8 --alpha 1 --min-blocks 0,8
    ;;
  solves9)
    # the seventh session's last build: the screened BP3.5 p = 7 on the fly with its cap
    # (full BP), and the hexahedral GPU solves with BP3 on the fly at Q5..Q7
    bench bp3.5 --backend cuda --order 7 --geo otf --solve 1e-8 --alpha 1
    solve_pcg "${HEX_SOLVES[@]}"
    ;;
  review7)
    # after the review's mends (kernel names, the fill's chunk from the host): the screened
    # BP3.5 p = 8 on the fly, now uncapped, in the full BP; the hexahedral solves
    bench bp3.5 --backend cuda --order 8 --geo otf --solve 1e-8 --alpha 1 --min-blocks 0,4
    solve_pcg "${HEX_SOLVES[@]}"
    ;;
  v18)
    # v12 (eighth session): lookahead zeroing against the reverse fill on every stored kernel,
    # one mesh per order; how far ahead (50 / 200 % of a wave) where it matters most
    for bp in bp1 bp3 bp3.5; do
      bench $bp --backend cuda --order 3..8 --geo stored --skeleton-zeroing host,lookahead,lookahead-late
    done
    bench bp1 --backend cuda --order 3,7 --geo stored --skeleton-zeroing lookahead --zero-ahead 50,200
    bench bp3 --backend cuda --order 5,8 --geo stored --skeleton-zeroing lookahead --zero-ahead 50,200
    ;;
  v19)
    # v13: evict-first factor loads against plain ones on every stored kernel (one mesh per
    # order); on the fly against stored at p = 1, 2; the full BP and the hexahedral solves
    # with the Jacobi diagonal computed on the device
    for bp in bp1 bp3 bp3.5; do
      bench $bp --backend cuda --order 3..8 --geo stored --evict-first false,true
    done
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 1,2 --geo all; done
    bench bp3.5 --backend cuda --order 7 --geo otf --solve 1e-8 --alpha 1
    solve_pcg "${HEX_SOLVES[@]}"
    ;;
  v20)
    # BP3 stored where it is below 85 % (p = 3, 5, 8): blocks of more elements, so that the
    # warps are full (p = 5: 49 threads per element, p = 8: 100, p = 3: 25), with the caps
    # that keep them spill-free (checked with examples/kernel_registers)
    bench bp3 --backend cuda --geo stored --order 5 --elems-per-block 2,4,5,6 --min-blocks 3,4,7
    bench bp3 --backend cuda --geo stored --order 8 --elems-per-block 1,2,3 --min-blocks 2,5
    bench bp3 --backend cuda --geo stored --order 3 --elems-per-block 5,10,13 --min-blocks 3,4,5,8
    ;;
  final9)
    # the eighth session's build: stored and on the fly at p = 3..8 on one mesh per order,
    # f32 at p = 7, BP3 stored at p = 5, 8 with staged geometry and persistent (three shared
    # regions since v10), the full BP at p = 7 and 8 with the diagonal from the device, and
    # the hexahedral solves (Q2 now on the fly)
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 3..8 --geo all; done
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 7 --geo all --precision f32; done
    bench bp3 --backend cuda --geo stored --order 5,8 --geo-load both
    bench bp3 --backend cuda --geo stored --order 5,8 --kernel persistent --min-blocks 0,2,3
    bench bp3.5 --backend cuda --order 7,8 --geo otf --solve 1e-8 --alpha 1
    solve_pcg "${HEX_SOLVES[@]}" "--box hex:48x48x48 --order 2"
    ;;
  review8)
    # the eighth session's last build (one occupancy helper for the persistent grid and the
    # lookahead distance): the kernels that use it, and the hexahedral solves
    bench bp3 --backend cuda --order 2 --geo stored
    bench bp3.5 --backend cuda --order 3 --geo otf
    bench bp1 --backend cuda --order 7 --geo stored --skeleton-zeroing host,lookahead
    solve_pcg "${HEX_SOLVES[@]}"
    ;;
  v21)
    # v14: the scatter's indices reloaded (late indices), and the tighter caps that opens
    bench bp3 --backend cuda --geo stored --order 8 --late-indices false,true --min-blocks 5,6,7
    bench bp3 --backend cuda --geo stored --order 7 --late-indices false,true --min-blocks 8,9,10
    bench bp3 --backend cuda --geo stored --order 5 --late-indices false,true --min-blocks 7,8,9
    bench bp3 --backend cuda --geo stored --order 3,4,6 --late-indices false,true
    bench bp1 --backend cuda --geo stored --order 3,7 --late-indices false,true --min-blocks 12,14,16
    bench bp1 --backend cuda --geo stored --order 8 --late-indices false,true --min-blocks 8,10
    ;;
  ncu13)
    # hardware counters of the stored kernels still below 85 %: BP3 p = 5 and 8 (tuned), and
    # BP1 p = 3 (70 % of the copy bandwidth in real bytes)
    if command -v ncu >/dev/null; then
      for c in "bp3 5" "bp3 8" "bp1 3"; do
        set -- $c
        ncu --clock-control none -k regex:bp_apply -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
            --section Occupancy --section WarpStateStats --section LaunchStats --section ComputeWorkloadAnalysis \
            --section SchedulerStats --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct \
            "$BIN/ferrofem" bench $1 --backend cuda --order $2 --geo stored --reps 1 --warmup 0 > "$OUT/ncu-$1-p$2.txt" 2>&1
        echo "== ncu $1 p=$2"
        grep -E "DRAM Throughput|Memory Throughput|Duration|L2 Hit|L1/TEX Hit|Achieved Occupancy|Theoretical Occupancy|Registers Per|Warp Cycles Per Issued|Compute \(SM\)|Issue Slots|pipeline|dram__bytes|Block Limit|Eligible|No Eligible|stalled" "$OUT/ncu-$1-p$2.txt" | head -40
      done
    else
      echo "ncu not found"
    fi
    ;;
  v22)
    # v15: the box's cells along a Morton curve against the generator's lexicographic order
    # (one mesh per order and ordering), stored, and on the fly with Morton order
    for bp in bp3 bp3.5 bp1; do
      for ro in none morton; do bench $bp --backend cuda --order 3..8 --geo stored --reorder $ro; done
    done
    for bp in bp3 bp3.5; do bench $bp --backend cuda --order 5..8 --geo otf --reorder morton; done
    ;;
  ncu14)
    # where BP3 stored p = 5's DRAM bytes beyond the model come from: L2 sector misses by
    # operation (loads: the gather and the factors; reductions: the atomics) and DRAM totals
    if command -v ncu >/dev/null; then
      for c in "bp3 5" "bp3 8"; do
        set -- $c
        ncu --clock-control none -k regex:bp_apply -c 1 \
            --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,lts__t_sectors_srcunit_tex_op_red.sum,lts__t_sectors_srcunit_tex_op_red_lookup_miss.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_write_lookup_miss.sum \
            "$BIN/ferrofem" bench $1 --backend cuda --order $2 --geo stored --reps 1 --warmup 0 > "$OUT/ncu-$1-p$2-l2.txt" 2>&1
        echo "== ncu $1 p=$2 (L2 sectors by operation)"
        grep -E "dram__|gpu__time|lts__" "$OUT/ncu-$1-p$2-l2.txt"
      done
    else
      echo "ncu not found"
    fi
    ;;
  review9)
    # after the review (one node_index for the apply and diagonal kernels): the tuned stored
    # kernels at p = 5, 7 and the hexahedral solves
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 5,7 --geo stored; done
    solve_pcg "${HEX_SOLVES[@]}"
    ;;
  v23)
    # v16 (ninth session): pipelined skeleton zeroing (launches in chunks, each zeroing the
    # next one's skeleton, programmatic dependent launch) against the reverse fill on every
    # stored kernel, one mesh per order; the launch count where it matters most; on the fly
    for bp in bp1 bp3 bp3.5; do
      bench $bp --backend cuda --order 3..8 --geo stored --skeleton-zeroing host,pipelined
    done
    bench bp1 --backend cuda --order 3,7 --geo stored --skeleton-zeroing pipelined --pipeline-chunks 8,32,256
    bench bp3 --backend cuda --order 5,8 --geo stored --skeleton-zeroing pipelined --pipeline-chunks 16,64,512
    bench bp3.5 --backend cuda --order 7 --geo otf --skeleton-zeroing host,pipelined
    bench bp1 --backend cuda --order 7 --geo otf --skeleton-zeroing host,pipelined
    ;;
  v24)
    # v17 (ninth session): the output vector in compressible memory against plain memory,
    # every stored kernel (one mesh per order), on the fly at p = 7, and with the memset
    for bp in bp1 bp3 bp3.5; do
      bench $bp --backend cuda --order 3..8 --geo stored --compressible-output false,true
    done
    bench bp1 --backend cuda --order 7 --geo otf --compressible-output false,true
    bench bp3.5 --backend cuda --order 7 --geo otf --compressible-output false,true
    bench bp1 --backend cuda --order 3,7 --geo stored --skeleton-zeroing memset --compressible-output false,true
    ;;
  ncu15)
    # v17's look-back: does the output in compressible memory take the fill's zeros off
    # DRAM? DRAM bytes of the fill and of the apply, plain and compressible output
    if command -v ncu >/dev/null; then
      for c in "bp1 7" "bp3 5"; do
        set -- $c
        for cmp in false true; do
          ncu --clock-control none -k regex:"bp_apply|bp_zero_skeleton" -c 4 \
              --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,lts__t_sectors_srcunit_tex_op_red_lookup_miss.sum \
              "$BIN/ferrofem" bench $1 --backend cuda --order $2 --geo stored --reps 1 --warmup 1 --compressible-output $cmp > "$OUT/ncu-$1-p$2-cmp-$cmp.txt" 2>&1
          echo "== ncu $1 p=$2 compressible=$cmp (fill, apply, fill, apply)"
          grep -E "bp_apply|bp_zero|dram__|gpu__time|lts__" "$OUT/ncu-$1-p$2-cmp-$cmp.txt"
        done
      done
    else
      echo "ncu not found"
    fi
    ;;
  v25)
    # v18 (ninth session): the fill overlapped with the apply (a pipeline of one launch,
    # programmatic dependent launch after the fill) against the fill before the launch
    for bp in bp1 bp3 bp3.5; do
      bench $bp --backend cuda --order 3..8 --geo stored --skeleton-zeroing host,pipelined --pipeline-chunks 1
    done
    bench bp1 --backend cuda --order 3,7 --geo stored --skeleton-zeroing pipelined --pipeline-chunks 2,4
    bench bp3 --backend cuda --order 5,8 --geo stored --skeleton-zeroing pipelined --pipeline-chunks 2,4
    for bp in bp1 bp3 bp3.5; do
      bench $bp --backend cuda --order 7 --geo otf --skeleton-zeroing host,pipelined --pipeline-chunks 1
    done
    ;;
  v26)
    # v19 (tenth session): a block per brick of elements against one element per block, on
    # the same box (cells sorted into 2x2x2 bricks)
    bench bp1 --backend cuda --order 3..8 --geo stored --bricks none,2x1x1,2x2x1,2x2x2
    ;;
  v27)
    bench bp3 --backend cuda --order 3..8 --geo stored --bricks none,2x1x1,2x2x1,2x2x2
    bench bp3.5 --backend cuda --order 3..8 --geo stored --bricks none,2x2x1,2x2x2
    ;;
  ncu16)
    # v19's look-back: what a brick costs BP1 (one element per block against 2x1x1 / 2x2x1)
    if command -v ncu >/dev/null; then
      for c in "7 none" "7 2x1x1" "3 none" "3 2x2x1"; do
        set -- $c
        ncu --clock-control none -k regex:bp_apply --launch-skip 1 --launch-count 1 \
            --section SpeedOfLight --section Occupancy --section WarpStateStats \
            --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
            --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_red.sum,lts__t_sectors_srcunit_tex_op_read.sum,smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum \
            "$BIN/ferrofem" bench bp1 --backend cuda --order $1 --geo stored --reps 1 --warmup 1 --bricks $2 > "$OUT/ncu-bp1-p$1-bricks-$2.txt" 2>&1
        echo "== ncu bp1 p=$1 bricks=$2"
        grep -E "Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\)|Achieved Occupancy|Warp Cycles Per Issued|Issue Slots Busy|Registers Per|dram__bytes|lts__t_sectors|smsp__inst_executed|l1tex__data_pipe|Block Limit|Stall" "$OUT/ncu-bp1-p$1-bricks-$2.txt" | head -40
      done
    else
      echo "ncu not found"
    fi
    ;;
  ncu17)
    # eleventh session: which sub-unit of L1/shared and of L2 binds the tuned stored
    # kernels (throughput breakdowns, shared bank conflicts, global requests and sectors per
    # operation, stall reasons), BP1 p = 3, 7 and BP3 p = 5, 8
    if command -v ncu >/dev/null; then
      for c in "bp1 3" "bp1 7" "bp3 5" "bp3 8"; do
        set -- $c
        f="$OUT/ncu17-$1-p$2"
        ncu --clock-control none -k regex:bp_apply --launch-skip 1 --launch-count 1 \
            --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section WarpStateStats \
            --section InstructionStats --section SourceCounters --print-details all \
            "$BIN/ferrofem" bench $1 --backend cuda --order $2 --geo stored --reps 1 --warmup 1 > "$f-sections.txt" 2>&1
        ncu --clock-control none -k regex:bp_apply --launch-skip 1 --launch-count 1 \
            --metrics breakdown:l1tex__throughput.avg.pct_of_peak_sustained_elapsed,breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_red.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg \
            "$BIN/ferrofem" bench $1 --backend cuda --order $2 --geo stored --reps 1 --warmup 1 > "$f-metrics.txt" 2>&1
        echo "== ncu17 $1 p=$2"
        grep -E "Duration|Throughput|bank_conflicts|wavefronts|inst_executed|t_requests|t_sectors|lts__|l1tex__|Stall|ERR" "$f-metrics.txt" | head -60
      done
    else
      echo "ncu not found"
    fi
    ;;
  v28)
    # v20 (eleventh session): BP1's register-column kernel with its weights in pencil order
    # and conflict-free shared pitches, each and both, against the tuned kernel
    bench bp1 --backend cuda --order 3..8 --geo stored --pencil-weights false,true --conflict-free false,true
    ;;
  ncu18)
    # v20's look-back: global sectors, shared wavefronts and the LSU data pipe with both
    if command -v ncu >/dev/null; then
      for p in 3 7; do
        f="$OUT/ncu18-bp1-p$p"
        ncu --clock-control none -k regex:bp_apply --launch-skip 1 --launch-count 1 \
            --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section SourceCounters --print-details all \
            --metrics breakdown:l1tex__throughput.avg.pct_of_peak_sustained_elapsed,breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,dram__bytes_read.sum \
            "$BIN/ferrofem" bench bp1 --backend cuda --order $p --geo stored --reps 1 --warmup 1 --pencil-weights true --conflict-free true > "$f.txt" 2>&1
        echo "== ncu18 bp1 p=$p pencil weights, conflict-free"
        grep -E "Duration|l1tex__data_pipe_lsu_wavefronts.avg|ltcfabric|lts__t_tag|bank_conflicts|t_sectors_pipe|dram__bytes|Theoretical Sectors Global|L1 Wavefronts Shared" "$f.txt" | head -20
      done
    else
      echo "ncu not found"
    fi
    ;;
  v29)
    # v20's defaults (eleventh session): BP1 stored as tuned now, and BP1 on the fly with
    # and without the conflict-free pitches
    bench bp1 --backend cuda --order 3..8 --geo stored
    bench bp1 --backend cuda --order 3..8 --geo otf --conflict-free false,true
    ;;
  v30)
    # v20b (eleventh session): the pitches searched with the half-warp bank model (p = 4,
    # 5, 6 changed), against the pencil weights alone, BP1 stored
    bench bp1 --backend cuda --order 3..8 --geo stored --conflict-free false,true
    ;;
  v31)
    # v20c (eleventh session): BP3's shared pitches from the half-warp bank model, stored
    # at p = 3..8 and on the fly at p = 5, 8, against the tuned kernel
    bench bp3 --backend cuda --order 3..8 --geo stored --conflict-free false,true
    bench bp3 --backend cuda --order 5,8 --geo otf --conflict-free false,true
    ;;
  v32)
    # v20c's defaults (eleventh session): BP3 stored as tuned now, a block-shape and cap
    # scan at p = 5 (the order still short of 85 %), BP3.5 stored (unchanged kernels)
    bench bp3 --backend cuda --order 3..8 --geo stored
    bench bp3 --backend cuda --order 5 --geo stored --min-blocks 6,7,8 --elems-per-block 1,2
    bench bp3.5 --backend cuda --order 3..8 --geo stored
    ;;
  v33)
    # v20c with the barrier its layouts need (sC over sS): BP3 stored as tuned
    bench bp3 --backend cuda --order 3..8 --geo stored
    ;;
  v34)
    # v21 (twelfth session): BP3's transposed sC in R0, so the pitches need no barrier:
    # BP3 with and without them at every order, stored and on the fly; a block-shape and
    # cap scan at p = 5 with them; BP1 and BP3.5 stored defaults of this build
    bench bp3 --backend cuda --order 3..8 --geo stored --conflict-free false,true
    bench bp3 --backend cuda --order 3..8 --geo otf --conflict-free false,true
    bench bp3 --backend cuda --order 5 --geo stored --conflict-free true --min-blocks 6,7,8 --elems-per-block 1,2,3
    bench bp1 --backend cuda --order 3..8 --geo stored
    bench bp3.5 --backend cuda --order 3..8 --geo stored
    ;;
  v35)
    # v22 (twelfth session): blocks without idle lanes, BP3 with the pitches and BP1
    bench bp3 --backend cuda --order 4 --geo stored --elems-per-block 3,8 --min-blocks 3,4,7 --conflict-free false,true
    bench bp3 --backend cuda --order 5 --geo stored --elems-per-block 3 --min-blocks 5,6 --conflict-free false,true
    bench bp3 --backend cuda --order 7 --geo stored --elems-per-block 1,3 --min-blocks 2,3,8 --conflict-free true
    bench bp3 --backend cuda --order 8 --geo stored --elems-per-block 1,3 --min-blocks 2,5 --conflict-free true
    bench bp3 --backend cuda --order 5..8 --geo otf --elems-per-block 1,3 --conflict-free true
    bench bp1 --backend cuda --order 4 --geo stored --elems-per-block 3,8 --min-blocks 4,12
    bench bp1 --backend cuda --order 5 --geo stored --elems-per-block 2,3 --min-blocks 8,12
    bench bp1 --backend cuda --order 7 --geo stored --elems-per-block 1,3 --min-blocks 4,12
    bench bp1 --backend cuda --order 8 --geo stored --elems-per-block 1,3 --min-blocks 3,8
    ;;
  v36)
    # the twelfth session's defaults (v21, v22): BP3 stored and on the fly, the screened
    # BP3 choices at p = 5 (stored) and 7 (on the fly), BP1 stored, the p = 7 floors and
    # aims on the fly, the full-BP solves and the README's GPU solves
    bench bp3 --backend cuda --order 3..8 --geo stored
    bench bp3 --backend cuda --order 3..8 --geo otf
    bench bp3 --backend cuda --order 5 --geo stored --alpha 1 --elems-per-block 2,3 --min-blocks 5,6
    bench bp3 --backend cuda --order 7 --geo otf --alpha 1 --elems-per-block 1,3
    bench bp1 --backend cuda --order 3..8 --geo stored
    bench bp3.5 --backend cuda --order 7 --geo otf
    bench bp3 --backend cuda --order 5,7 --geo otf --solve 1e-8
    solve_pcg "--box hex:24x24x24 --order 7" "--box hex:24x24x24 --order 5"
    ;;
  v37)
    # BP3 stored block shapes not yet scanned with the pitches: p = 4 (85.2 % in v36), the
    # two-element blocks at p = 7, 8; the screened p = 5 default (two elements, cap 5)
    bench bp3 --backend cuda --order 4 --geo stored --elems-per-block 2 --min-blocks 7,8,9,10
    bench bp3 --backend cuda --order 4 --geo stored --elems-per-block 3 --min-blocks 6,7,8
    bench bp3 --backend cuda --order 4 --geo stored --elems-per-block 4 --min-blocks 5,6,7
    bench bp3 --backend cuda --order 4 --geo stored --elems-per-block 5 --min-blocks 5,6
    bench bp3 --backend cuda --order 7 --geo stored --elems-per-block 2 --min-blocks 3,4
    bench bp3 --backend cuda --order 8 --geo stored --elems-per-block 2 --min-blocks 2
    bench bp3 --backend cuda --order 5 --geo stored --alpha 1
    bench bp3 --backend cuda --order 4 --geo stored
    ;;
  ncu19)
    # twelfth session: what crosses the fabric between the two L2 partitions, by source
    # and operation, in a plain copy (the roofline's own kernel) and the tuned BP1 p = 3,
    # 7 and BP3 p = 5; only the metrics this ncu knows are asked for
    if command -v ncu >/dev/null; then
      ncu --query-metrics --chip gh100 > "$OUT/ncu19-query.txt" 2>&1 || true
      grep -i fabric "$OUT/ncu19-query.txt" | head -40
      want="lts__ltcfabric2ltc_cycles_active.avg.pct_of_peak_sustained_elapsed lts__t_sectors.sum lts__t_sectors_srcunit_ltcfabric.sum lts__t_sectors_srcunit_tex.sum lts__t_sectors_srcunit_ltcfabric_op_read.sum lts__t_sectors_srcunit_ltcfabric_op_write.sum lts__t_sectors_srcunit_ltcfabric_op_red.sum lts__t_sectors_srcunit_ltcfabric_op_atom.sum lts__t_sectors_srcunit_tex_op_read.sum lts__t_sectors_srcunit_tex_op_write.sum lts__t_sectors_srcunit_tex_op_red.sum lts__t_sectors_srcunit_tex_lookup_hit.sum lts__t_sectors_srcunit_tex_lookup_miss.sum dram__bytes_read.sum dram__bytes_write.sum gpu__time_duration.sum"
      M=""
      for m in $want; do
        b="${m%%.*}"
        if grep -qw "$b" "$OUT/ncu19-query.txt"; then M="$M${M:+,}$m"; else echo "ncu19: no metric $b"; fi
      done
      ncu --clock-control none -k regex:ff_copy --launch-skip 2 --launch-count 1 --metrics "$M" \
          "$BIN/ferrofem" bench stream > "$OUT/ncu19-copy.txt" 2>&1
      echo "== ncu19 copy"; grep -E "ff_copy|lts__|dram__|gpu__|ERR" "$OUT/ncu19-copy.txt" | head -30
      for c in "bp1 3" "bp1 7" "bp3 5"; do
        set -- $c
        f="$OUT/ncu19-$1-p$2.txt"
        ncu --clock-control none -k regex:bp_apply --launch-skip 1 --launch-count 1 --metrics "$M" \
            "$BIN/ferrofem" bench $1 --backend cuda --order $2 --geo stored --reps 1 --warmup 1 > "$f" 2>&1
        echo "== ncu19 $1 p=$2"; grep -E "lts__|dram__|gpu__|ERR" "$f" | head -30
      done
    else
      echo "ncu not found"
    fi
    ;;
  v38)
    # v24 (twelfth session): v19's bricks with v20's pencil weights and pitches (BP1),
    # against one element per block on the same bricked box
    bench bp1 --backend cuda --order 3..8 --geo stored --bricks none,2x1x1,2x2x1
    ;;
  ncu20)
    # twelfth session: what binds the two p = 7 aims on the fly (BP1 >= 90: 67-69 GDOF/s,
    # BP3.5 >= 100: 62.6), for the next session's design: speed of light, stall reasons,
    # instruction mix, the LSU pipe and the L2 side as in ncu19
    if command -v ncu >/dev/null; then
      M="l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_red.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__ltcfabric2ltc_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum"
      for c in "bp1 7" "bp3.5 7"; do
        set -- $c
        f="$OUT/ncu20-$1-p$2-otf"
        ncu --clock-control none -k regex:bp_apply --launch-skip 1 --launch-count 1 \
            --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis \
            "$BIN/ferrofem" bench $1 --backend cuda --order $2 --geo otf --reps 1 --warmup 1 > "$f-sections.txt" 2>&1
        ncu --clock-control none -k regex:bp_apply --launch-skip 1 --launch-count 1 --metrics "$M" \
            "$BIN/ferrofem" bench $1 --backend cuda --order $2 --geo otf --reps 1 --warmup 1 > "$f-metrics.txt" 2>&1
        echo "== ncu20 $1 p=$2 otf"
        grep -E "Duration|Throughput|Busy|Pipe|Stall|Occupancy|Registers|Warp Cycles|Issued|lts__|l1tex__|sm__|smsp__|gpu__|ERR" "$f-sections.txt" "$f-metrics.txt" | head -60
      done
    else
      echo "ncu not found"
    fi
    ;;
  v39)
    # v25 (twelfth session): skeleton slots by arithmetic against the constant table
    bench bp1 --backend cuda --order 3..8 --geo stored --slot-arithmetic false,true
    bench bp1 --backend cuda --order 3,5,7,8 --geo otf --slot-arithmetic false,true
    bench bp3 --backend cuda --order 3..8 --geo stored --slot-arithmetic false,true
    bench bp3.5 --backend cuda --order 3..8 --geo otf --slot-arithmetic false,true
    bench bp3.5 --backend cuda --order 3..8 --geo stored --slot-arithmetic false,true
    ;;
  v40)
    # v26 (thirteenth session): BP1 on the brick lattice, per order the candidate shapes
    # (one command per family of shapes that tile one sorted box) and register caps
    L="bench bp1 --backend cuda --geo stored --kernel lattice"
    $L --order 3 --bricks 4x4x2,4x4x4 --min-blocks 0,3,4
    $L --order 3 --bricks 2x2x2 --min-blocks 0,6
    $L --order 3 --bricks 4x2x2 --min-blocks 0
    $L --order 4 --bricks 2x2x2 --min-blocks 0,4,6
    $L --order 4 --bricks 4x4x2 --min-blocks 0,3
    $L --order 5 --bricks 2x2x1,2x2x2 --min-blocks 0,3,4
    $L --order 6 --bricks 2x2x1,2x2x2 --min-blocks 0,3
    $L --order 7 --bricks 2x2x1,2x2x2 --min-blocks 0,2,3
    $L --order 7 --bricks 4x2x1 --min-blocks 0
    $L --order 8 --bricks 2x2x1,2x2x2 --min-blocks 0,2
    ;;
  v41)
    # v27 (thirteenth session): the lattice kernel's conflict-free plane pitches at the
    # tuned shapes, then BP1's new defaults (the lattice on a brick-sorted box at p = 3..6)
    L="bench bp1 --backend cuda --geo stored --kernel lattice"
    $L --order 3 --bricks 4x4x2 --min-blocks 3 --conflict-free false,true
    $L --order 4 --bricks 4x4x2 --min-blocks 0 --conflict-free false,true
    $L --order 5,6 --bricks 2x2x1 --min-blocks 3 --conflict-free false,true
    bench bp1 --backend cuda --order 3..8 --geo stored
    ;;
  v42)
    # v28 (thirteenth session): bricks along the Morton curve, against lexicographic, for
    # the lattice kernel's new defaults (p = 3..6, conflict-free pitches), then register
    # caps and the high orders on the Morton order
    bench bp1 --backend cuda --order 3..8 --geo stored
    bench bp1 --backend cuda --order 3..6 --geo stored --brick-order lexicographic
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true"
    $L --order 3 --bricks 4x4x2,4x4x4 --min-blocks 3 --brick-order lexicographic
    $L --order 3 --bricks 4x4x2 --min-blocks 2,4,5
    $L --order 4 --bricks 4x4x2 --min-blocks 2,3
    $L --order 4 --bricks 2x2x2 --min-blocks 6,8
    $L --order 5,6 --bricks 2x2x1 --min-blocks 0,6,8
    $L --order 5,6 --bricks 2x2x2 --min-blocks 0,3
    $L --order 7 --bricks 2x2x1 --min-blocks 3,4
    $L --order 8 --bricks 2x2x1 --min-blocks 2
    ;;
  v43)
    # v29 (thirteenth session): the lattice kernel's element loops rolled (fewer registers)
    # against unrolled, with register caps, at every order
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true"
    $L --order 3 --bricks 4x4x2 --min-blocks 4 --rolled false
    $L --order 3 --bricks 4x4x2 --min-blocks 0,6,8 --rolled true
    $L --order 4 --bricks 4x4x2 --min-blocks 0,3 --rolled true
    $L --order 4 --bricks 2x2x2 --min-blocks 0,8,10 --rolled true
    $L --order 5,6 --bricks 2x2x1,2x2x2 --min-blocks 0,4,5,8 --rolled true
    $L --order 7,8 --bricks 2x2x1,2x2x2 --min-blocks 0,2,3,4 --rolled true
    ;;
  ncu21)
    # thirteenth session: what binds the lattice kernel (v26-v29) at p = 3 (86 %), p = 6
    # (79 %) and p = 7 (where it loses to the one-element kernel): speed of light, stall
    # reasons, occupancy, the LSU pipe and the L2 sectors by operation as in ncu19/ncu20
    if command -v ncu >/dev/null; then
      M="l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_red.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__ltcfabric2ltc_cycles_active.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum"
      for c in "3 --order 3" "6 --order 6" "7 --order 7 --kernel lattice --bricks 2x2x1 --min-blocks 3 --conflict-free true"; do
        set -- $c
        f="$OUT/ncu21-bp1-p$1-lattice"
        shift
        ncu --clock-control none -k regex:bp_apply --launch-skip 1 --launch-count 1 \
            --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
            "$BIN/ferrofem" bench bp1 --backend cuda --geo stored "$@" --reps 1 --warmup 1 > "$f-sections.txt" 2>&1
        ncu --clock-control none -k regex:bp_apply --launch-skip 1 --launch-count 1 --metrics "$M" \
            "$BIN/ferrofem" bench bp1 --backend cuda --geo stored "$@" --reps 1 --warmup 1 > "$f-metrics.txt" 2>&1
        echo "== ncu21 bp1 $*"
        grep -E "Duration|Throughput|Busy|Pipe|Stall|Occupancy|Registers|Warp Cycles|Issued|lts__|l1tex__|sm__|smsp__|gpu__|dram__|ERR" "$f-sections.txt" "$f-metrics.txt" | head -70
      done
    else
      echo "ncu not found"
    fi
    ;;
  v44)
    # v30 (thirteenth session): the lattice kernel zeroing the brick boundaries in the
    # kernel by owner brick, against the fill before the launch, at the tuned defaults
    bench bp1 --backend cuda --order 3..6 --geo stored --skeleton-zeroing host,owner
    ;;
  v46)
    # v31 (fourteenth session): the lattice kernel walking columns of bricks along z
    # (--lattice-steps), against one brick per block (1) in the same run, at the tuned
    # step bricks, uncapped and at the tuned caps
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true"
    $L --order 3 --bricks 4x4x2 --min-blocks 0,4 --lattice-steps 1,2,4,8
    $L --order 4 --bricks 4x4x2 --min-blocks 0,3 --lattice-steps 1,4,8
    $L --order 5 --bricks 2x2x1 --rolled true,false --lattice-steps 1,8,16
    $L --order 6 --bricks 2x2x1 --min-blocks 0,6 --lattice-steps 1,8,16
    $L --order 7 --bricks 2x2x1 --min-blocks 0,3 --lattice-steps 1,8,16
    $L --order 8 --bricks 2x2x1 --lattice-steps 1,8,16
    ;;
  ncu22)
    # v31 (fourteenth session): why the lattice columns lose (v46): the steps' index
    # settled at compile time again, benched against one brick per block; then L2 sectors,
    # DRAM bytes, stalls and occupancy of p = 6, 2x2x1, cap 6, in 1 and 8 steps
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true"
    $L --order 3 --bricks 4x4x2 --min-blocks 0,4 --lattice-steps 1,4
    $L --order 6 --bricks 2x2x1 --min-blocks 0,6 --lattice-steps 1,8
    if command -v ncu >/dev/null; then
      M="lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_red.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_lookup_miss.sum,lts__ltcfabric2ltc_cycles_active.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,gpu__time_duration.sum"
      for st in 1 8; do
        f="$OUT/ncu22-bp1-p6-s$st"
        A="--order 6 --kernel lattice --bricks 2x2x1 --min-blocks 6 --conflict-free true --lattice-steps $st"
        ncu --clock-control none -k regex:bp_apply --launch-skip 1 --launch-count 1 \
            --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
            "$BIN/ferrofem" bench bp1 --backend cuda --geo stored $A --reps 1 --warmup 1 > "$f-sections.txt" 2>&1
        ncu --clock-control none -k regex:bp_apply --launch-skip 1 --launch-count 1 --metrics "$M" \
            "$BIN/ferrofem" bench bp1 --backend cuda --geo stored $A --reps 1 --warmup 1 > "$f-metrics.txt" 2>&1
        echo "== ncu22 bp1 p6 steps $st"
        grep -E "Duration|Throughput|Busy|Stall|Occupancy|Registers|Warp Cycles|Issued|Hit Rate|lts__|l1tex__|sm__|smsp__|gpu__|dram__|ERR" "$f-sections.txt" "$f-metrics.txt" | head -60
      done
    else
      echo "ncu not found"
    fi
    ;;
  v47)
    # v32 (fourteenth session): the fill overlapped with the apply (programmatic dependent
    # launch) against the fill before it, at the defaults: BP1 stored p = 3..8 (lattice at
    # 3..6, v2 at 7, 8)
    bench bp1 --backend cuda --order 3..8 --geo stored --skeleton-zeroing host,overlapped
    ;;
  v48)
    # v32: the same for BP3 and BP3.5 stored, and BP1 p = 7 on the fly
    for bp in bp3 bp3.5; do bench $bp --backend cuda --order 3..8 --geo stored --skeleton-zeroing host,overlapped; done
    bench bp1 --backend cuda --order 7 --geo otf --skeleton-zeroing host,overlapped
    # and BP1 stored again at three orders (v47's second sample)
    bench bp1 --backend cuda --order 3,6,7 --geo stored --skeleton-zeroing host,overlapped
    ;;
  v49)
    # v33 (fifteenth session): the lattice brick's boundary offsets kept in shared memory
    # (shared) and its sums staged and added in slot order (staged), against the offsets
    # read again (global), at the defaults, BP1 stored p = 3..6, twice
    for rep in 1 2; do
      bench bp1 --backend cuda --order 3..6 --geo stored --lattice-boundary global,shared,staged
    done
    if command -v ncu >/dev/null; then
      for lb in global shared staged; do
        f="$OUT/ncu23-bp1-p6-$lb"
        ncu_apply "$f-metrics.txt" bp1 --backend cuda --geo stored --order 6 --lattice-boundary $lb
        echo "== ncu23 bp1 p6 $lb"
        grep -E "lts__|l1tex__|sm__|smsp__|gpu__|dram__|ERR" "$f-metrics.txt" | head -20
      done
    else
      echo "ncu not found"
    fi
    ;;
  v50)
    # v33: the lattice kernel's shapes, caps and loop forms again with the boundary's
    # offsets in shared memory (and staged), overlapped fill; BP1 stored p = 3..8
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true --skeleton-zeroing overlapped"
    $L --order 3 --bricks 4x4x2 --min-blocks 0,3,4,5 --lattice-boundary shared
    $L --order 4 --bricks 4x4x2 --min-blocks 0,3 --lattice-boundary shared,staged
    $L --order 4 --bricks 2x2x2 --min-blocks 0,6,8 --lattice-boundary shared,staged
    $L --order 4 --bricks 2x2x1 --min-blocks 0,12 --lattice-boundary shared,staged
    $L --order 4 --bricks 4x2x2 --min-blocks 0,4 --lattice-boundary shared
    $L --order 5 --bricks 2x2x1 --rolled true,false --min-blocks 0,6,8 --lattice-boundary shared,staged
    $L --order 5 --bricks 2x2x2 --min-blocks 0,4 --lattice-boundary shared
    $L --order 6 --bricks 2x2x1 --rolled false,true --min-blocks 0,5,6,7 --lattice-boundary shared
    $L --order 6 --bricks 2x2x2 --min-blocks 0,3 --lattice-boundary shared
    $L --order 7 --bricks 2x2x1 --min-blocks 3,4 --lattice-boundary shared
    $L --order 8 --bricks 2x2x1 --min-blocks 2,3 --lattice-boundary shared
    bench bp1 --backend cuda --order 7,8 --geo stored
    ;;
  v51)
    # v34: lattice lines split across threads (one element of a line per item), offsets
    # in shared memory, overlapped fill: p = 7, 8 against the register-column kernel, and
    # p = 4..6 against v33's best
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true --skeleton-zeroing overlapped --lattice-boundary shared"
    $L --order 7 --bricks 2x2x1 --split-lines true --min-blocks 0,3,4,5
    $L --order 7 --bricks 2x2x2,4x2x1 --split-lines true --min-blocks 0,2,3
    $L --order 8 --bricks 2x2x1 --split-lines true --min-blocks 0,3,4
    $L --order 8 --bricks 2x2x2 --split-lines true --min-blocks 0,2
    $L --order 6 --bricks 2x2x1 --split-lines true,false --min-blocks 0,4,6
    $L --order 5 --bricks 2x2x1 --split-lines true --min-blocks 0,4,6
    $L --order 4 --bricks 2x2x1 --split-lines true,false --min-blocks 0,6,12
    $L --order 4 --bricks 4x4x2 --split-lines true --min-blocks 0,2
    $L --order 3 --bricks 4x4x2 --split-lines true --min-blocks 0,2
    bench bp1 --backend cuda --order 7,8 --geo stored
    ;;
  v52)
    # v35: the brick boundary in ring slot order against lexicographic: the defaults
    # p = 3..6 twice, the caps again with ring slots, p = 7, 8 on the lattice, and Nsight
    # Compute's L2 sectors at p = 6 for both orders
    for rep in 1 2; do bench bp1 --backend cuda --order 3..6 --geo stored --slot-order lexicographic,ring; done
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true --skeleton-zeroing overlapped"
    $L --order 3 --bricks 4x4x2 --min-blocks 0,3,5 --lattice-boundary shared --slot-order ring
    $L --order 4 --bricks 2x2x1 --min-blocks 0,10 --lattice-boundary shared --slot-order ring
    $L --order 4 --bricks 4x4x2 --min-blocks 0,3 --lattice-boundary shared,staged --slot-order ring
    $L --order 5 --bricks 2x2x1 --rolled true,false --min-blocks 0,6 --lattice-boundary shared --slot-order ring
    $L --order 6 --bricks 2x2x1 --min-blocks 0,5,7 --lattice-boundary shared --slot-order ring
    $L --order 6 --bricks 2x2x1 --min-blocks 6 --lattice-boundary staged --slot-order ring
    $L --order 7 --bricks 2x2x1 --min-blocks 3,4 --lattice-boundary shared --slot-order lexicographic,ring
    $L --order 8 --bricks 2x2x1 --min-blocks 2,3 --lattice-boundary shared --slot-order lexicographic,ring
    bench bp1 --backend cuda --order 7,8 --geo stored
    if command -v ncu >/dev/null; then
      for o in lexicographic ring; do
        f="$OUT/ncu25-bp1-p6-$o"
        ncu_apply "$f.txt" bp1 --backend cuda --geo stored --order 6 --slot-order $o
        echo "== ncu25 bp1 p6 $o"
        grep -E "Duration|lts__|dram__|ERR" "$f.txt" | head -20
      done
    fi
    ;;
  v53)
    # (v36's option was removed after this run: notes/gpu-bp.md, v36 outcome)
    # v36: the skeleton kept in L2's persisting set-aside around the apply, BP1 stored
    # p = 3..8 defaults (ring slots at 3..6) twice, BP3 and BP3.5 at p = 4, 7; Nsight Compute's DRAM
    # bytes at p = 6 both ways (caches not flushed, so the window's effect shows)
    "$BIN/ferrofem" info | grep -i "gpu 0"
    for rep in 1 2; do bench bp1 --backend cuda --order 3..8 --geo stored --l2-resident false,true; done
    for bp in bp3 bp3.5; do bench $bp --backend cuda --order 4,7 --geo stored --l2-resident false,true; done
    if command -v ncu >/dev/null; then
      for r in false true; do
        f="$OUT/ncu26-bp1-p6-l2r-$r"
        NCU_EXTRA="--cache-control none" ncu_apply "$f.txt" bp1 --backend cuda --geo stored --order 6 --l2-resident $r
        echo "== ncu26 bp1 p6 l2-resident $r"
        grep -E "gpu__time|lts__t_sectors_srcunit_tex.sum|dram__|ERR" "$f.txt" | head -20
      done
    fi
    ;;
  v54)
    # v37: output and restriction offsets in compressible memory, plain / output / offsets /
    # both, BP1 stored p = 3..8 defaults twice; BP3 and BP3.5 stored plain / both; Nsight
    # Compute's DRAM bytes of the apply at p = 6 each way (caches as the bench leaves them)
    C="--compressible-output false,true --compressible-indices false,true"
    for rep in 1 2; do bench bp1 --backend cuda --order 3..8 --geo stored $C; done
    for bp in bp3 bp3.5; do
      bench $bp --backend cuda --order 3..8 --geo stored
      bench $bp --backend cuda --order 3..8 --geo stored --compressible-output true --compressible-indices true
    done
    if command -v ncu >/dev/null; then
      for co in false true; do for ci in false true; do
        f="$OUT/ncu27-bp1-p6-out$co-idx$ci"
        NCU_EXTRA="--cache-control none" ncu_apply "$f.txt" bp1 --backend cuda --geo stored --order 6 \
          --compressible-output $co --compressible-indices $ci
        echo "== ncu27 bp1 p6 compressible output $co indices $ci"
        grep -E "gpu__time|lts__t_sectors_srcunit_tex.sum|fabric|dram__|ERR" "$f.txt" | head -20
      done; done
    fi
    ;;
  v55)
    # v38: the skeleton fill as a driver memset on compressible memory against the reverse
    # fill kernel, overlapped or not, BP1 stored p = 3..8 twice; the caps at p = 7, 8
    for rep in 1 2; do bench bp1 --backend cuda --order 3..8 --geo stored --skeleton-zeroing overlapped,memset,host; done
    bench bp1 --backend cuda --order 7 --geo stored --min-blocks 10,12,14,16
    bench bp1 --backend cuda --order 8 --geo stored --min-blocks 6,8,10
    ;;
  v56)
    # v39: the lattice brick's weights prefetched into L2 at the block's start: defaults
    # p = 3..6 twice, the lattice at p = 7, 8, the one-element kernel's per-line prefetch at
    # p = 7, 8; Nsight Compute at p = 7 (lattice cap 3) without and with, stalls included
    for rep in 1 2; do bench bp1 --backend cuda --order 3..6 --geo stored --geo-prefetch none,l2; done
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true --skeleton-zeroing overlapped --lattice-boundary shared --slot-order ring"
    $L --order 7 --bricks 2x2x1 --min-blocks 3,4 --geo-prefetch none,l2
    $L --order 8 --bricks 2x2x1 --min-blocks 2,3 --geo-prefetch none,l2
    $L --order 7 --bricks 2x2x2 --min-blocks 0,2 --geo-prefetch l2
    bench bp1 --backend cuda --order 7,8 --geo stored --geo-prefetch none,l2
    if command -v ncu >/dev/null; then
      for pf in none l2; do
        f="$OUT/ncu28-bp1-p7-lat-cap3-pf$pf"
        NCU_EXTRA="--section WarpStateStats --section Occupancy" \
          ncu_apply "$f.txt" bp1 --backend cuda --geo stored --order 7 --kernel lattice --conflict-free true \
            --skeleton-zeroing overlapped --lattice-boundary shared --slot-order ring --bricks 2x2x1 --min-blocks 3 --geo-prefetch $pf
        echo "== ncu28 bp1 p7 lattice cap 3 prefetch $pf"
        grep -E "Stall Long|Stall Barrier|Warp Cycles Per Issued|Achieved Occupancy|gpu__time|lts__t_sectors_srcunit_tex.sum|fabric|dram__|ERR" "$f.txt" | head -20
      done
    fi
    ;;
  v57)
    # v40: the lattice's weights loaded evict-first, BP1 stored p = 3..7 defaults twice
    for rep in 1 2; do bench bp1 --backend cuda --order 3..7 --geo stored --evict-first false,true; done
    ;;
  v58)
    # v39/v40 at p = 6, 7, each run in both orders (the first variant on a fresh mesh has
    # measured slower at times): L2 prefetch none/l2 x evict-first false/true
    for rep in 1 2; do
      bench bp1 --backend cuda --order 6,7 --geo stored --geo-prefetch none,l2 --evict-first false,true
      bench bp1 --backend cuda --order 6,7 --geo stored --geo-prefetch l2,none --evict-first true,false
    done
    ;;
  user17)
    # as a user calls it, on the final defaults: the README's main job (auto-selects the
    # GPU), and the GPU solves of the hexahedral problems, the Gmsh mesh among them
    echo "== README main job"
    "$BIN/ferrofem" solve --problem poisson --box hex:24x24x24,perturb=0.2 --order 2 --solver pcg --output "$OUT/solution.vtu" 2>&1 | tail -12
    ls -la "$OUT/solution.vtu"
    solve_pcg "${HEX_SOLVES[@]}"
    ;;
  ncu30)
    # where the p = 7 lattice (the eighteenth session's default: weights in shared memory,
    # lookahead 396) and the p = 8 one-element kernel spend their warps' cycles: stall
    # reasons per issued instruction, pipes, and the source lines with the most samples
    STALLS=""
    for r in barrier long_scoreboard short_scoreboard mio_throttle lg_throttle wait math_pipe_throttle not_selected selected dispatch_stall membar drain imc_miss no_instruction branch_resolving sleeping tex_throttle; do
      STALLS="$STALLS,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
    done
    NCU_L2="$NCU_L2$STALLS,sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_global_ld.sum"
    for p in 7 8; do
      f="$OUT/ncu30-bp1-p$p-default"
      NCU_EXTRA="--section WarpStateStats --section SourceCounters" ncu_apply "$f.txt" bp1 --backend cuda --geo stored --order $p
      echo "== ncu30 bp1 p$p default"
      grep -E "stalled|gpu__time|issue_active|fp64|shared_ld|global_ld|bank_conf|ERR" "$f.txt" | head -40
    done
    ;;
  v66)
    # (needs the binaries of branch exp-contract2, whose bench has --paired-elements)
    # v46: phase 3's two elements contracted together, on the
    # defaults p = 4..7 in both orders; p = 7 at caps 2 and 3; the lattice at p = 8
    for px in false,true true,false; do bench bp1 --backend cuda --order 4..7 --geo stored --paired-elements $px; done
    bench bp1 --backend cuda --order 7 --geo stored --paired-elements true --min-blocks 2,3
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true --skeleton-zeroing overlapped --lattice-boundary shared --slot-order ring"
    $L --order 8 --bricks 2x2x1 --min-blocks 2 --geo-prefetch shared --paired-elements false,true
    ;;
  final23)
    # the twenty-third session's defaults (v51: p = 8 with phases 2 and 3 rolled) after all
    # GPU tests: the README's main job, BP1 stored p = 3..8 on the box twice, p = 5 with only
    # phase 3 rolled against its default again (v72: +1.1 %, one run), p = 8's neighbours
    # (every phase unrolled, phase 3 only)
    echo "== README main job"
    "$BIN/ferrofem" solve --problem poisson --box hex:24x24x24,perturb=0.2 --order 2 --solver pcg --output "$OUT/solution.vtu" 2>&1 | tail -12
    for rep in 1 2; do bench bp1 --backend cuda --order 3..8 --geo stored; done
    bench bp1 --backend cuda --order 5 --geo stored --rolled false,true --rolled-phases 3
    bench bp1 --backend cuda --order 8 --geo stored --rolled-phases none,3,23
    ;;
  final23b)
    # BP1 stored p = 3..8 on the refined plate (refine auto), BP3 and BP3.5 stored on the box
    # (their kernels unchanged), the hexahedral GPU solves and the plate's
    # (run after p = 5's default became phase 3 rolled, with TESTFILTER="lattice defaults
    # compressible": the tests whose lists derive from the lattice defaults; and p = 5 on the
    # box again)
    PLATE=tests/data/gmsh/plate_hole_hex_v41_binary.msh
    bench bp1 --backend cuda --order 5 --geo stored
    bench bp1 --backend cuda --order 3..8 --geo stored --mesh $PLATE
    bench bp3 --backend cuda --order 3..8 --geo stored
    bench bp3.5 --backend cuda --order 3..8 --geo stored
    solve_pcg "${HEX_SOLVES[@]}" "--mesh $PLATE --refine 1 --dirichlet outer,hole --order 5"
    ;;
  final22)
    # the twenty-second session's defaults (v48: one lattice array, p = 7 at the cap 4, the
    # lattice at p = 8) after all GPU tests: the README's main job, BP1 stored p = 3..8 on the
    # box twice and on the refined plate, the p = 8 lattice's neighbours (rolled, the
    # lookahead, the one-element kernel), BP3 and BP3.5 stored on the box, the hexahedral GPU
    # solves and the plate's
    PLATE=tests/data/gmsh/plate_hole_hex_v41_binary.msh
    echo "== README main job"
    "$BIN/ferrofem" solve --problem poisson --box hex:24x24x24,perturb=0.2 --order 2 --solver pcg --output "$OUT/solution.vtu" 2>&1 | tail -12
    for rep in 1 2; do bench bp1 --backend cuda --order 3..8 --geo stored; done
    bench bp1 --backend cuda --order 3..8 --geo stored --mesh $PLATE
    bench bp1 --backend cuda --order 8 --geo stored --rolled false,true --gather-lookahead 0,264
    bench bp1 --backend cuda --order 8 --geo stored --bricks none
    bench bp3 --backend cuda --order 3..8 --geo stored
    bench bp3.5 --backend cuda --order 3..8 --geo stored
    solve_pcg "${HEX_SOLVES[@]}" "--mesh $PLATE --refine 1 --dirichlet outer,hole --order 5"
    ;;
  final22b)
    # what final22 did not reach in its 600 s (run with TESTFILTER=compressible_output, the
    # test whose count final22 found one lattice default short): BP3.5 stored on the box, the
    # hexahedral GPU solves and the plate's
    PLATE=tests/data/gmsh/plate_hole_hex_v41_binary.msh
    bench bp3.5 --backend cuda --order 3..8 --geo stored
    solve_pcg "${HEX_SOLVES[@]}" "--mesh $PLATE --refine 1 --dirichlet outer,hole --order 5"
    ;;
  v72)
    # v51: only some phases' element loops rolled (`--rolled-phases`): p = 8 (the default
    # spills 48 bytes in phase 3, unrolled) with phase 3, phases 2-3, phases 2-4 rolled, in
    # both orders; p = 7, 3, 4, 6 with phase 3 / phases 2-3; p = 5 (rolled by default) with
    # every phase unrolled but 3 / 2-3 / 2-5; then ncu38 on p = 8 with phases 2-3 rolled
    bench bp1 --backend cuda --order 8 --geo stored --rolled-phases none,3,23,234
    bench bp1 --backend cuda --order 8 --geo stored --rolled-phases 23,3,none
    bench bp1 --backend cuda --order 7 --geo stored --rolled-phases none,3,23
    bench bp1 --backend cuda --order 5 --geo stored
    bench bp1 --backend cuda --order 5 --geo stored --rolled false --rolled-phases 3,23,2345,none
    bench bp1 --backend cuda --order 3,4,6 --geo stored --rolled-phases none,3,23
    for v in "default:" "rp23:--rolled-phases 23"; do
      ncu_apply "$OUT/ncu-$MODE-bp1-p8-${v%%:*}.txt" bp1 --backend cuda --geo stored --order 8 ${v#*:}
      echo "== ncu $MODE bp1 p8 ${v%%:*}"
      grep -E "bp_apply|dram__|lts__|l1tex|sm__warps|smsp__inst|gpu__time|ERR" "$OUT/ncu-$MODE-bp1-p8-${v%%:*}.txt" | cut -c1-200 | head -20
    done
    ;;
  v71)
    # v50: lattice bricks two elements deep along z (2x1x2, 1x2x2: the same nodes shared as
    # 2x2x1's, other lines per phase and threads per block), rolled / unrolled, uncapped and
    # capped: p = 8 and 7 with the weights in shared memory, p = 4 and 5 without (and 2x2x2);
    # the defaults first and last; then the p = 8 default's stall reasons (ncu37)
    bench bp1 --backend cuda --order 4,5,7,8 --geo stored
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true --skeleton-zeroing overlapped --lattice-boundary shared --slot-order ring --one-lattice-array true"
    for b in 2x1x2 1x2x2; do
      $L --order 8 --bricks $b --rolled true,false --min-blocks 0,3 --geo-prefetch shared
      $L --order 7 --bricks $b --rolled true,false --min-blocks 0,3,4 --geo-prefetch shared --gather-lookahead 0,396
    done
    for b in 2x1x2 1x2x2 2x2x2; do
      $L --order 5 --bricks $b --rolled true,false --min-blocks 0
      $L --order 4 --bricks $b --rolled true,false --min-blocks 0,8
    done
    bench bp1 --backend cuda --order 4,5,7,8 --geo stored
    # (the local-memory rows of the memory tables: where the default's 48 spilled bytes go)
    for v in "default:" "rolled-cap3:--kernel lattice --conflict-free true --skeleton-zeroing overlapped --lattice-boundary shared --slot-order ring --one-lattice-array true --bricks 2x2x1 --rolled true --min-blocks 3 --geo-prefetch shared"; do
      NCU_L2="$NCU_L2,$(echo smsp__average_warps_issue_stalled_{barrier,long_scoreboard,short_scoreboard,mio_throttle,lg_throttle,math_pipe_throttle,wait,not_selected,selected,dispatch_stall,membar,drain,no_instruction,branch_resolving,sleeping,tex_throttle,imc_miss,misc}_per_issue_active.ratio | tr ' ' ',')" \
        NCU_EXTRA="--section MemoryWorkloadAnalysis_Tables" \
        ncu_apply "$OUT/ncu-$MODE-bp1-p8-${v%%:*}.txt" bp1 --backend cuda --geo stored --order 8 ${v#*:}
      echo "== ncu $MODE bp1 p8 ${v%%:*}"
      grep -E "bp_apply|dram__|lts__|sm__warps|smsp__inst|gpu__time|stalled|Local|ERR" "$OUT/ncu-$MODE-bp1-p8-${v%%:*}.txt" | cut -c1-200 | head -40
    done
    ;;
  v70)
    # v49: a fourth p = 8 lattice block (40 warps per SM) where registers and shared memory
    # allow it: rolled at the cap 4 (48 registers) with the weights out of shared memory;
    # the neighbours (rolled / unrolled, caps 3 / 4, weights none / l2 / shared), 2x1x1 at the
    # caps 5 / 6, p = 7 rolled / unrolled at the caps 4 / 5 with l2 / shared; the defaults
    # first and last; then Nsight Compute's warp states on the p = 8 default and the rolled cap
    # 4 with the L2 prefetch (ncu36)
    bench bp1 --backend cuda --order 7,8 --geo stored
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true --skeleton-zeroing overlapped --lattice-boundary shared --slot-order ring --one-lattice-array true"
    $L --order 8 --bricks 2x2x1 --rolled false,true --min-blocks 3,4 --geo-prefetch none,l2,shared
    $L --order 8 --bricks 2x1x1 --rolled true --min-blocks 5,6 --geo-prefetch l2,shared
    bench bp1 --backend cuda --order 7 --geo stored --rolled false,true --min-blocks 4,5 --geo-prefetch l2,shared
    bench bp1 --backend cuda --order 7,8 --geo stored
    for v in "default:" "rolled-cap4-l2:--kernel lattice --bricks 2x2x1 --rolled true --min-blocks 4 --geo-prefetch l2"; do
      NCU_EXTRA="--section WarpStateStats --section Occupancy --section LaunchStats" \
        ncu_apply "$OUT/ncu-$MODE-bp1-p8-${v%%:*}.txt" bp1 --backend cuda --geo stored --order 8 ${v#*:}
      echo "== ncu $MODE bp1 p8 ${v%%:*}"
      grep -E "bp_apply|dram__|lts__|l1tex|sm__warps|smsp__inst|gpu__time|Stall|Occupancy|Block Limit|Registers|ERR" "$OUT/ncu-$MODE-bp1-p8-${v%%:*}.txt" | cut -c1-200 | head -40
    done
    ;;
  v69)
    # v48: the lattice's two shared arrays as one (`--one-lattice-array`), so that p = 6 and 7
    # (weights in shared memory) fit one more block per SM: BP1 stored p = 3..8 (the
    # defaults) without and with, in both orders; p = 7 with at caps 3 and 4 (4: 64
    # registers, the fourth block), the cap 4's lookahead at the old and the new wave (396,
    # 528), and rolled (60 registers uncapped); p = 3 with at caps 5 and 6 (spill-free; shared memory no longer binds); the lattice at
    # p = 8 with (cap 3: 48 bytes spilled, measured for the record only); then Nsight Compute
    # on p = 7 with one array at cap 4 against the default (ncu35)
    for oa in false,true true,false; do bench bp1 --backend cuda --order 3..8 --geo stored --one-lattice-array $oa; done
    bench bp1 --backend cuda --order 7 --geo stored --one-lattice-array true --min-blocks 3,4 --gather-lookahead 396,528
    bench bp1 --backend cuda --order 7 --geo stored --one-lattice-array true --rolled true --min-blocks 0,4 --gather-lookahead 528
    bench bp1 --backend cuda --order 3 --geo stored --one-lattice-array true --min-blocks 5,6
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true --skeleton-zeroing overlapped --lattice-boundary shared --slot-order ring"
    $L --order 8 --bricks 2x2x1 --min-blocks 2,3 --geo-prefetch shared --one-lattice-array false,true
    for v in "default:" "one-cap4:--one-lattice-array true --min-blocks 4 --gather-lookahead 528"; do
      ncu_apply "$OUT/ncu-$MODE-bp1-p7-${v%%:*}.txt" bp1 --backend cuda --geo stored --order 7 ${v#*:}
      echo "== ncu $MODE bp1 p7 ${v%%:*}"
      grep -E "bp_apply|dram__|lts__|l1tex|sm__warps|smsp__inst|gpu__time|ERR" "$OUT/ncu-$MODE-bp1-p7-${v%%:*}.txt" | cut -c1-200 | head -20
    done
    ;;
  v67|v68)
    # (needs the binaries of branch exp-tensor, whose bench has --tensor-cores: v67 its first
    # commit, v68 its last)
    # v47 (v67: m8n8k4; v68: v47b, m16n8k8 / m16n8k4, two lines a lane): phases 2-4 on the
    # FP64 tensor cores: BP1 stored p = 3..7 (the defaults) without and with, in both orders; p = 7 with at caps 2 and 4; the lattice at p = 8 (2x2x1, weights in
    # shared memory) without and with at caps 2 and 3; the SASS opcode counts of the p = 7
    # default and its tensor-core twin (.device-exp/*.cubin)
    for tc in false,true true,false; do bench bp1 --backend cuda --order 3..7 --geo stored --tensor-cores $tc; done
    bench bp1 --backend cuda --order 7 --geo stored --tensor-cores true --min-blocks 2,4
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true --skeleton-zeroing overlapped --lattice-boundary shared --slot-order ring"
    $L --order 8 --bricks 2x2x1 --min-blocks 2,3 --geo-prefetch shared --tensor-cores false,true
    bench bp1 --backend cuda --order 8 --geo stored
    scripts/sass-opcodes.sh
    # ncu33 (v67), ncu34 (v68): the p = 7 default with tensor cores: speed of light, stalls,
    # instructions
    f="$OUT/ncu-$MODE-bp1-p7-tc"
    ncu --clock-control none -k regex:bp_apply --launch-skip 1 --launch-count 1 \
        --section SpeedOfLight --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis \
        --metrics sass__inst_executed_per_opcode,smsp__inst_executed.sum \
        --print-metric-instances details \
        "$BIN/ferrofem" bench bp1 --backend cuda --geo stored --order 7 --reps 1 --warmup 1 --tensor-cores true > "$f.txt" 2>&1
    echo "== ncu $MODE bp1 p7 tc"
    grep -E "Duration|Throughput|Issued|Eligible|Stall|sass__inst|smsp__inst|Registers|Occupancy|ERR" "$f.txt" | cut -c1-600 | head -40
    ;;
  final19|final20)
    # a session's final code (final19: v44 kept, v43, v45 not; final20: main's kernels unchanged
    # since 011fc62, v47 not kept) after all GPU tests: the
    # README's main job, BP1 stored p = 3..8 twice, BP3 and BP3.5 stored p = 3..8, the
    # hexahedral GPU solves (the Gmsh mesh among them)
    echo "== README main job"
    "$BIN/ferrofem" solve --problem poisson --box hex:24x24x24,perturb=0.2 --order 2 --solver pcg --output "$OUT/solution.vtu" 2>&1 | tail -12
    for rep in 1 2; do bench bp1 --backend cuda --order 3..8 --geo stored; done
    bench bp3 --backend cuda --order 3..8 --geo stored
    bench bp3.5 --backend cuda --order 3..8 --geo stored
    solve_pcg "${HEX_SOLVES[@]}"
    ;;
  final21)
    # the twenty-first session's final code after all GPU tests (the Gmsh plate's among them):
    # the README's main job, BP1 stored p = 3..8 on the box and on the refined plate, the
    # hexahedral GPU solves and the plate's
    PLATE=tests/data/gmsh/plate_hole_hex_v41_binary.msh
    echo "== README main job"
    "$BIN/ferrofem" solve --problem poisson --box hex:24x24x24,perturb=0.2 --order 2 --solver pcg --output "$OUT/solution.vtu" 2>&1 | tail -12
    bench bp1 --backend cuda --order 3..8 --geo stored
    bench bp1 --backend cuda --order 3..8 --geo stored --mesh $PLATE
    solve_pcg "${HEX_SOLVES[@]}" "--mesh $PLATE --refine 1 --dirichlet outer,hole --order 5"
    ;;
  review21)
    # after the twenty-first session's review (refinement's child corners built once, the
    # bench's mesh read once): BP1 stored p = 3..8 on the refined plate (run with
    # TESTFILTER=gmsh_mesh: the plate's GPU test first)
    bench bp1 --backend cuda --order 3..8 --geo stored --mesh tests/data/gmsh/plate_hole_hex_v41_binary.msh
    ;;
  s21a|s21b)
    # twenty-first session: the Gmsh plate with a hole (unstructured hexahedra,
    # tests/data/gmsh), refined uniformly to ~4e7 DoFs per order (`--refine auto`), BP1's
    # lattice on each cell's children. s21a: BP1 stored p = 3..8 on the plate (file order,
    # then Morton order of the coarse cells), its one-element defaults (`--bricks none`), and
    # on the generated box in the same process. s21b: BP3 and BP3.5 stored on the plate, the
    # GPU solves on the plate refined once and twice
    PLATE=tests/data/gmsh/plate_hole_hex_v41_binary.msh
    if [ "$MODE" = s21a ]; then
      bench bp1 --backend cuda --order 3..8 --geo stored --mesh $PLATE
      bench bp1 --backend cuda --order 3..8 --geo stored --mesh $PLATE --reorder morton
      bench bp1 --backend cuda --order 3..7 --geo stored --mesh $PLATE --bricks none
      bench bp1 --backend cuda --order 3..8 --geo stored
    else
      bench bp3 --backend cuda --order 3..8 --geo stored --mesh $PLATE
      bench bp3.5 --backend cuda --order 3..8 --geo stored --mesh $PLATE
      solve_pcg "--mesh $PLATE --refine 1 --dirichlet outer,hole --order 5" \
                "--mesh $PLATE --refine 2 --dirichlet outer,hole --order 3"
    fi
    ;;
  v65)
    # v45: the 1-D matrices as `__constant__ const` (coefficients folded as immediates),
    # against v44's binary (.device-exp/ferrofem-v44) in the same call: BP1 stored p = 3..8,
    # new, old, new; the SASS opcode counts of the p = 7 BP1 default (v65b: BP3, BP3.5)
    [ -f .device-exp/ferrofem-v44.gz ] && gunzip -kf .device-exp/ferrofem-v44.gz && chmod +x .device-exp/ferrofem-v44
    bench bp1 --backend cuda --order 3..8 --geo stored
    echo "== v44 binary: ferrofem bench bp1"
    .device-exp/ferrofem-v44 bench bp1 --backend cuda --order 3..8 --geo stored --record "$OUT/bench-v44.jsonl" 2>&1 | tee -a "$OUT/bench.log"
    bench bp1 --backend cuda --order 3..8 --geo stored
    scripts/sass-opcodes.sh
    ;;
  v65b)
    [ -f .device-exp/ferrofem-v44.gz ] && gunzip -kf .device-exp/ferrofem-v44.gz && chmod +x .device-exp/ferrofem-v44
    for bp in bp3 bp3.5; do
      bench $bp --backend cuda --order 3..8 --geo stored
      echo "== v44 binary: ferrofem bench $bp"
      .device-exp/ferrofem-v44 bench $bp --backend cuda --order 3..8 --geo stored --record "$OUT/bench-v44.jsonl" 2>&1 | tee -a "$OUT/bench.log"
    done
    ;;
  ncu32)
    # the p = 7 default's executed instructions by opcode (where the issue slots go)
    f="$OUT/ncu32-bp1-p7-opcodes"
    ncu --clock-control none -k regex:bp_apply --launch-skip 1 --launch-count 1 \
        --metrics sass__inst_executed_per_opcode,smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_dfma_pred_on.sum,smsp__sass_thread_inst_executed_op_integer_pred_on.sum \
        --print-metric-instances details \
        "$BIN/ferrofem" bench bp1 --backend cuda --geo stored --order 7 --reps 1 --warmup 1 > "$f.txt" 2>&1
    echo "== ncu32 bp1 p7 opcodes"
    grep -E "sass__inst|smsp__|ERR" "$f.txt" | cut -c1-2000 | head -20
    f="$OUT/ncu32-bp1-p7-source"
    ncu --clock-control none -k regex:bp_apply --launch-skip 1 --launch-count 1 --section InstructionStats \
        --print-details all "$BIN/ferrofem" bench bp1 --backend cuda --geo stored --order 7 --reps 1 --warmup 1 > "$f.txt" 2>&1
    grep -iE "opcode|inst" "$f.txt" | head -60
    ;;
  v64)
    # v44: the lattice's weights in shared memory read through a shared pointer: the
    # defaults p = 3..8 twice; p = 6, 7 against the weights through L2 (same process); the
    # lattice at p = 8 (cap 2, weights in shared memory, lookahead 0 / 264) against the
    # one-element default
    for rep in 1 2; do bench bp1 --backend cuda --order 3..8 --geo stored; done
    bench bp1 --backend cuda --order 6,7 --geo stored --geo-prefetch shared,l2 --gather-lookahead 0
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true --skeleton-zeroing overlapped --lattice-boundary shared --slot-order ring"
    $L --order 8 --bricks 2x2x1 --min-blocks 2 --geo-prefetch shared --gather-lookahead 0,264
    bench bp1 --backend cuda --order 8 --geo stored
    ;;
  v63)
    # (needs the binaries of branch exp-pipeline, whose bench has --lattice-pipeline)
    # v43: the pipelined (persistent) lattice kernel against one block per brick on the
    # defaults, p = 3..7 in both orders; p = 7 pipelined with lookaheads 0, 396, 792; the
    # lattice at p = 8 (cap 2, weights in shared memory) both ways against the one-element
    # default
    for pp in false,true true,false; do bench bp1 --backend cuda --order 3..7 --geo stored --lattice-pipeline $pp; done
    bench bp1 --backend cuda --order 7 --geo stored --lattice-pipeline true --gather-lookahead 0,396,792
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true --skeleton-zeroing overlapped --lattice-boundary shared --slot-order ring"
    $L --order 8 --bricks 2x2x1 --min-blocks 2 --geo-prefetch shared --lattice-pipeline true,false --gather-lookahead 0,264
    bench bp1 --backend cuda --order 8 --geo stored
    ;;
  ncu31)
    # (needs the binaries of branch exp-pipeline, whose bench has --lattice-pipeline)
    # v43's look-back: the p = 7 default against the same kernel pipelined (persistent),
    # one apply each under Nsight Compute; and the pipelined kernel's weights by each path
    for pp in false true; do
      f="$OUT/ncu31-bp1-p7-pp-$pp"
      NCU_EXTRA="--section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis" \
        ncu_apply "$f.txt" bp1 --backend cuda --geo stored --order 7 --lattice-pipeline $pp
      echo "== ncu31 bp1 p7 pipelined $pp"
      grep -E "stalled|Stall|gpu__time|Issue Slots|Eligible|Active Warps|dram__|fabric|lts__t_sectors|Bank|Shared|L1/TEX Hit|ERR" "$f.txt" | head -40
    done
    bench bp1 --backend cuda --order 7 --geo stored --lattice-pipeline true --gather-lookahead 0 --geo-prefetch none,l2,shared
    ;;
  user18)
    # the review's check as a user calls it, on the final code: the README's main job, the
    # hexahedral GPU solves (the Gmsh mesh among them), and BP1 stored p = 3..8 once
    echo "== README main job"
    "$BIN/ferrofem" solve --problem poisson --box hex:24x24x24,perturb=0.2 --order 2 --solver pcg --output "$OUT/solution.vtu" 2>&1 | tail -12
    ls -la "$OUT/solution.vtu"
    solve_pcg "${HEX_SOLVES[@]}"
    bench bp1 --backend cuda --order 3..8 --geo stored
    ;;
  final18)
    # the eighteenth session's defaults (v41: the weights copied into shared memory at
    # p = 6, 7; v42: the gather's lookahead at p = 3, 7) after all GPU tests: BP1 stored
    # p = 3..8 twice, BP3 and BP3.5 stored p = 3..8 once, the full-BP solves at p = 6, 7, and
    # the README's main job (final18b: BP3 and BP3.5)
    for rep in 1 2; do bench bp1 --backend cuda --order 3..8 --geo stored; done
    bench bp1 --backend cuda --order 6,7 --geo stored --solve 1e-8
    echo "== README main job"
    "$BIN/ferrofem" solve --problem poisson --box hex:24x24x24,perturb=0.2 --order 2 --solver pcg --output "$OUT/solution.vtu" 2>&1 | tail -12
    ;;
  final18b)
    # BP3 and BP3.5 stored p = 3..8 on the same defaults (their kernels share the moved
    # bulk-copy helpers)
    bench bp3 --backend cuda --order 3..8 --geo stored
    bench bp3.5 --backend cuda --order 3..8 --geo stored
    ;;
  v61)
    # the lattice on 2x1x1 bricks at p = 7, 8 (160 / 192 threads: phases 2-4 use more of the
    # block than 2x2x1's, more blocks per SM); v42's lookahead again at p = 3, 7
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true --skeleton-zeroing overlapped --lattice-boundary shared --slot-order ring"
    $L --order 7 --bricks 2x1x1 --min-blocks 0,4,5 --geo-prefetch shared,l2 --gather-lookahead 0,660
    $L --order 8 --bricks 2x1x1 --min-blocks 3,4 --rolled false,true --geo-prefetch shared,l2
    bench bp1 --backend cuda --order 7 --geo stored --gather-lookahead 396,264,0
    bench bp1 --backend cuda --order 3 --geo stored --gather-lookahead 528,0,264
    ;;
  v60)
    # v42: the gather's offsets and interior nodes asked of L2 D bricks ahead (D: 0, one
    # wave W of resident blocks, two), on the v41 defaults, p = 7 in both orders; the lattice
    # at p = 8 (cap 2, weights in shared memory) against the one-element default
    for la in 0,396,792 792,396,0; do bench bp1 --backend cuda --order 7 --geo stored --gather-lookahead $la; done
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true --skeleton-zeroing overlapped --lattice-boundary shared --slot-order ring"
    $L --order 8 --bricks 2x2x1 --min-blocks 2 --geo-prefetch shared --gather-lookahead 0,264,528
    bench bp1 --backend cuda --order 8 --geo stored
    bench bp1 --backend cuda --order 6 --geo stored --gather-lookahead 0,660,1320
    bench bp1 --backend cuda --order 5 --geo stored --gather-lookahead 0,924
    bench bp1 --backend cuda --order 4 --geo stored --gather-lookahead 0,1584
    bench bp1 --backend cuda --order 3 --geo stored --gather-lookahead 0,528
    ;;
  v59)
    # v41: the lattice brick's weights bulk-copied into shared memory: the defaults p = 3..7
    # with --geo-prefetch none / l2 / shared in both orders, the lattice at p = 8 (caps 2, 3)
    # and at p = 7 (caps 2, 3) both ways; Nsight Compute at p = 7 (lattice cap 3, shared)
    for pf in shared,l2,none none,l2,shared; do
      bench bp1 --backend cuda --order 3..7 --geo stored --geo-prefetch $pf
    done
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true --skeleton-zeroing overlapped --lattice-boundary shared --slot-order ring"
    $L --order 8 --bricks 2x2x1 --min-blocks 2,3 --geo-prefetch shared,l2
    $L --order 7 --bricks 2x2x1 --min-blocks 2,3 --geo-prefetch shared
    bench bp1 --backend cuda --order 8 --geo stored
    if command -v ncu >/dev/null; then
      f="$OUT/ncu29-bp1-p7-lat-cap3-pfsm"
      NCU_EXTRA="--section WarpStateStats --section Occupancy" \
        ncu_apply "$f.txt" bp1 --backend cuda --geo stored --order 7 --kernel lattice --conflict-free true \
          --skeleton-zeroing overlapped --lattice-boundary shared --slot-order ring --bricks 2x2x1 --min-blocks 3 --geo-prefetch shared
      echo "== ncu29 bp1 p7 lattice cap 3 prefetch shared"
      grep -E "Stall Long|Stall Barrier|Warp Cycles Per Issued|Achieved Occupancy|gpu__time|lts__t_sectors_srcunit_tex.sum|fabric|dram__|ERR" "$f.txt" | head -20
    fi
    ;;
  final17d)
    # the session's final defaults (v40 outcome: the L2 prefetch at p = 7 only) after all GPU
    # tests: BP1 stored p = 3..8 twice, the full-BP solve at p = 6
    for rep in 1 2; do bench bp1 --backend cuda --order 3..8 --geo stored; done
    bench bp1 --backend cuda --order 6 --geo stored --solve 1e-8
    ;;
  final17c)
    # v39's defaults (the lattice's weights prefetched into L2 at p = 6, 7; the lattice at
    # p = 7) after all GPU tests: BP1 stored p = 3..8 twice, p = 7 on the one-element kernel
    # twice (`--bricks none`), and the full-BP solves at p = 6, 7
    for rep in 1 2; do
      bench bp1 --backend cuda --order 3..8 --geo stored
      bench bp1 --backend cuda --order 7 --geo stored --bricks none
    done
    bench bp1 --backend cuda --order 6,7 --geo stored --solve 1e-8
    ;;
  final17)
    # the seventeenth session's defaults (v37: offsets and output in compressible memory)
    # after all GPU tests: BP1 stored p = 3..8 twice, and the full-BP solves at p = 4, 6, 7
    for rep in 1 2; do bench bp1 --backend cuda --order 3..8 --geo stored; done
    bench bp1 --backend cuda --order 4,6,7 --geo stored --solve 1e-8
    ;;
  final17b)
    # BP3 and BP3.5 stored p = 3..8 on the v37 defaults, the three BPs on the fly at p = 7
    # (the issue's aims), the lattice at p = 7, 8 with compression, and the lattice caps at
    # p = 4..6 again now that DRAM binds less
    for bp in bp3 bp3.5; do bench $bp --backend cuda --order 3..8 --geo stored; done
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 7 --geo otf; done
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true --skeleton-zeroing overlapped --lattice-boundary shared --slot-order ring"
    $L --order 7 --bricks 2x2x1 --min-blocks 3,4
    $L --order 8 --bricks 2x2x1 --min-blocks 2,3
    $L --order 4 --bricks 2x2x1 --min-blocks 10,12,14
    $L --order 5 --bricks 2x2x1 --rolled true --min-blocks 0,6
    $L --order 6 --bricks 2x2x1 --min-blocks 5,6,7
    ;;
  final16)
    # the sixteenth session's defaults as one run (after all GPU tests): BP1 stored p = 3..8
    # twice (lattice with ring slots at 3..6), and the full-BP solve at p = 4, 6
    for rep in 1 2; do bench bp1 --backend cuda --order 3..8 --geo stored; done
    bench bp1 --backend cuda --order 4,6 --geo stored --solve 1e-8
    ;;
  final15)
    # the fifteenth session's defaults as one run (after all GPU tests): BP1 stored p = 3..8
    # twice (lattice with the offsets in shared memory at 3..6, p = 4 on 2x2x1 bricks),
    # BP3 and BP3.5 stored, and the full-BP solve where the default kernel changed
    for rep in 1 2; do bench bp1 --backend cuda --order 3..8 --geo stored; done
    for bp in bp3 bp3.5; do bench $bp --backend cuda --order 3..8 --geo stored; done
    bench bp1 --backend cuda --order 4,6 --geo stored --solve 1e-8
    ;;
  ncu24)
    # v34's look-back: p = 7, the lattice kernel unsplit (cap 3) and split (cap 4), and the
    # one-element default: L2 sectors, instructions, occupancy and stalls
    if command -v ncu >/dev/null; then
      L="--kernel lattice --bricks 2x2x1 --conflict-free true --skeleton-zeroing overlapped --lattice-boundary shared"
      for v in "lat-cap3|$L --min-blocks 3" "split-cap4|$L --min-blocks 4 --split-lines true" "default|"; do
        name=${v%%|*}; args=${v#*|}
        f="$OUT/ncu24-bp1-p7-$name"
        NCU_EXTRA="--section WarpStateStats --section Occupancy" \
          ncu_apply "$f.txt" bp1 --backend cuda --geo stored --order 7 $args
        echo "== ncu24 bp1 p7 $name"
        grep -E "Stall|Occupancy|Registers|Warp Cycles|Issued|lts__|l1tex__|sm__|smsp__|gpu__|dram__|ERR" "$f.txt" | head -40
      done
    else
      echo "ncu not found"
    fi
    ;;
  review14)
    # the review's check after the launch paths were merged (overlapped and pipelined
    # through one function): the defaults (overlapped) and the pipelined zeroing, BP1
    bench bp1 --backend cuda --order 3 --geo stored --skeleton-zeroing overlapped,host
    bench bp1 --backend cuda --order 7 --geo stored --skeleton-zeroing overlapped,pipelined,host
    bench bp1 --backend cuda --order 7 --geo stored --solve 1e-8
    ;;
  final14)
    # the fourteenth session's final BP1 defaults (v32's overlapped fill at p = 3, 5..8)
    # as one run, the full-BP solves on them, BP1 on the fly at p = 7, and the README's GPU
    # solves; BP3 and BP3.5 kernels are v48's (unchanged since)
    bench bp1 --backend cuda --order 3..8 --geo stored
    bench bp1 --backend cuda --order 7 --geo otf
    bench bp1 --backend cuda --order 3,7 --geo stored --solve 1e-8
    solve_pcg "--box hex:24x24x24 --order 7" "--box hex:24x24x24 --order 5"
    ;;
  final13)
    # the thirteenth session's final defaults as one run (BP1 stored at p = 3..6 on the
    # lattice kernel, brick-sorted box), the other BPs and the on-the-fly defaults as in
    # final12, the full-BP solves, the README's GPU solves; then a last scan of p = 4, 5
    # shapes for the next session
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 3..8 --geo stored; done
    bench bp3 --backend cuda --order 3..8 --geo otf
    bench bp3.5 --backend cuda --order 3..8 --geo otf
    bench bp1 --backend cuda --order 7 --geo otf
    bench bp1 --backend cuda --order 3,6 --geo stored --solve 1e-8
    bench bp3 --backend cuda --order 5,7 --geo otf --solve 1e-8
    solve_pcg "--box hex:24x24x24 --order 7" "--box hex:24x24x24 --order 5"
    L="bench bp1 --backend cuda --geo stored --kernel lattice --conflict-free true"
    $L --order 4 --bricks 4x2x2 --min-blocks 0,3
    $L --order 4 --bricks 2x2x2 --min-blocks 6
    $L --order 5 --bricks 2x2x2 --min-blocks 4
    ;;
  final12)
    # the twelfth session's final defaults as one run (never run as such in that session:
    # its device time was spent): every BP stored, the on-the-fly defaults, the p = 7
    # aims, the full-BP solves and the README's GPU solves
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 3..8 --geo stored; done
    bench bp3 --backend cuda --order 3..8 --geo otf
    bench bp3.5 --backend cuda --order 3..8 --geo otf
    bench bp1 --backend cuda --order 7 --geo otf
    bench bp3 --backend cuda --order 5,7 --geo otf --solve 1e-8
    solve_pcg "--box hex:24x24x24 --order 7" "--box hex:24x24x24 --order 5"
    ;;
  final7)
    # the sixth session's on-the-fly defaults (after v14, v15) where they are the fastest
    bench bp3.5 --backend cuda --order 3..8 --geo otf
    bench bp3 --backend cuda --order 3,5,6 --geo otf
    solve_pcg "--box hex:24x24x24 --order 5"
    ;;
  solves8)
    # the hexahedral GPU solve on interior-last numbering (renumbered in and out), with the
    # benchmarks' fastest kernels: stored at Q7, on the fly at Q5, Q6
    solve_pcg "--box hex:24x24x24 --order 7" "--box hex:24x24x24 --order 6" "--box hex:24x24x24 --order 5" \
             "--mesh tests/data/gmsh/box_hex_v41_binary.msh --dirichlet xmin,ymin --order 6" \
             "--mesh tests/data/gmsh/box_hex_v41_binary.msh --dirichlet xmin,ymin --order 7"
    ;;
  final6)
    # the fifth session's figures of the (unchanged) tuned defaults on the owner-ordered
    # skeleton numbering, from one build
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 1..8 --geo stored; done
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 7 --geo stored --precision f32; done
    bench bp3.5 --backend cuda --order 7 --geo stored --solve 1e-8 --alpha 1
    solve_pcg "--box hex:24x24x24 --order 7" "--mesh tests/data/gmsh/box_hex_v41_binary.msh --dirichlet xmin,ymin --order 7"
    ;;
  final5)
    # the fourth session's tuned defaults after the v11 scan, from one build
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 1..8 --geo stored; done
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 7 --geo stored --precision f32; done
    bench bp3.5 --backend cuda --order 7 --geo stored --solve 1e-8 --alpha 1
    ;;
  ncu6)
    # counters: BP1 p = 7 with register columns; the residual transposition, 3-D f32
    # elasticity (the benchmark's first residual launch once the autotuner's choice is cached)
    if command -v ncu >/dev/null; then
      S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats --section ComputeWorkloadAnalysis"
      ncu --clock-control none -k regex:bp_apply -c 1 $S "$BIN/ferrofem" bench bp1 --backend cuda --order 7 --geo stored \
          --kernel registers --reps 1 --warmup 0 > "$OUT/ncu-bp1-registers.txt" 2>&1
      "$BIN/ferrofem" bench residual --backend cuda --dim 3 --physics elasticity --precision f32 --cells 1.2e7 --reps 2 > /dev/null 2>&1
      ncu --clock-control none -k regex:residual -c 1 $S "$BIN/ferrofem" bench residual --backend cuda --dim 3 \
          --physics elasticity --precision f32 --cells 1.2e7 --reps 1 --warmup 0 > "$OUT/ncu-residual-el3-f32.txt" 2>&1
      for f in "$OUT"/ncu-bp1-registers.txt "$OUT"/ncu-residual-el3-f32.txt; do
        echo "== $f"
        grep -E "DRAM Throughput|L1/TEX Cache|L2 Cache Throughput|Duration|Achieved Occupancy|Theoretical Occupancy|Registers Per|Warp Cycles Per Issued|Compute \(SM\)|Block Limit|Issue Slots|Shared" "$f" | head -30
      done
    else
      echo "ncu not found"
    fi
    ;;
  tuned)
    # the tuned defaults (BpConfig::tuned) at every order, stored geometry; the full BP solve
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 1..8 --geo stored; done
    bench bp3.5 --backend cuda --order 7 --geo stored --solve 1e-8 --alpha 1
    ;;
  ncu)
    # hardware counters of one BP1 and one BP3 application (p = 7)
    if command -v ncu >/dev/null; then
      for bp in bp1 bp3; do
        echo "== ncu $bp p=7"
        ncu --clock-control none -k regex:bp_apply -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
            --section Occupancy --section WarpStateStats --section LaunchStats \
            "$BIN/ferrofem" bench $bp --backend cuda --order 7 --geo stored --reps 1 --warmup 0 > "$OUT/ncu-$bp.txt" 2>&1
        grep -E "DRAM Throughput|Memory Throughput|Duration|L2 Hit|L1/TEX Hit|Achieved Occupancy|Theoretical Occupancy|Registers Per|Stall|Warp Cycles Per Issued|Compute \(SM\)|Mem Busy|Max Bandwidth|dram__bytes|Block Limit" "$OUT/ncu-$bp.txt" | head -40
      done
    else
      echo "ncu not found"
    fi
    ;;
  bp|full)
    for bp in bp1 bp3 bp3.5; do bench $bp --backend cuda --order 1..8; done
    bench bp3.5 --backend cuda --order 7 --geo stored --solve 1e-8 --alpha 1
    bench bp3 --backend cuda --order 7 --precision f32
    bench bp3.5 --backend cuda --order 3,7 --precision f32
    bench stream --backend cuda
    if [ "$MODE" = full ]; then
      for bp in bp1 bp3 bp3.5; do bench $bp --backend cpu --order 3,7 --reps 5; done
    fi
    ;;
  tests)
    # the GPU tests only (above; TESTFILTER narrows them)
    ;;
  *)
    echo "gpu-check: unknown mode '$MODE'" >&2
    status=1
    ;;
esac
done

echo "== summary (GDOF/s, % of the copy roofline by the model)"
python3 - "$REC" <<'PY'
import json, os, sys
# (modes that only profile write no records)
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()] if os.path.exists(sys.argv[1]) else []
for r in rows:
    if r.get("bench") == "residual":
        print(f"residual {r['physics']:15} d={r['dim']} P{r['order']} {r['precision']} cells={r['cells']:.2e} {(r['accumulation'] + ('+vtx' if r.get('geometry') == 'vertices' else ''))[:48]:48} "
              f"{r['residual_s']*1e3:8.3f} ms {r['gflops_per_s']:7.1f} GF/s  el {100*r['roofline_fraction_element_vectors']:5.1f}%  gl {100*r['roofline_fraction_global']:5.1f}%")
        continue
    if "order" not in r: continue
    extra = ""
    if r.get("solve_iterations"):
        extra = f"  PCG {r['solve_iterations']} it, {r['solve_dof_iters_per_s']/1e9:.1f} GDOF*it/s"
    kern = r.get('kernel', '') + ('+' + r['reorder'] if r.get('reorder') not in (None, '', 'none') else '')
    print(f"{r['bench']:6} {r['backend'][:4]:4} {kern[:48]:48} {r['precision']} {r['geometry']:6} p={r['order']} dofs={r['dofs']:.2e} "
          f"{r['gdofs_per_s']:7.2f} GDOF/s {r['gbytes_per_s']:7.0f} GB/s {100*r['roofline_fraction']:5.1f}%  "
          f"regs={r['registers']} epb={r['elems_per_block']}{extra}")
PY
exit $status

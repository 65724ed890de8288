#!/usr/bin/env bash
# Runs on a GPU machine, from the repository root, with .device-bin/ carried along (built
# by scripts/build-device-bin.sh on a machine with Rust): the GPU tests against their CPU
# twins, then the standard benchmarks; logs and JSON records go under $OUT.
#
#   scripts/gpu-check.sh [MODE ...]     modes run in sequence (default: tests bench)
#     tests              every GPU test executable in .device-bin/tests
#     bench              the standard set: stream, BP1/BP3/BP3.5 at p = 1..8 (stored and
#                        on-the-fly), BP1 on the refined Gmsh plate, the residual kernels,
#                        the GPU solves
#     bp                 the BP part of the standard set only
#     compare            the BP part with $BASE (another ferrofem binary) and this one,
#                        alternating per operator ($BPS, default all three), then the ratio
#                        per (operator, geometry, p)
#     ranks              on a machine with 2+ GPUs and a build with MPI (MPI=1
#                        scripts/build-device-bin.sh): the 3-D elastic step and the BP3.5
#                        solve on 1 GPU and on 2 (both halo transports), weak and strong
#     profile ARGS...    Nsight Compute on one steady-state bp_apply launch of
#                        `ferrofem bench ARGS` (must be the last mode)
set -u
BIN=${BIN:-.device-bin}
OUT=${OUT:-/tmp/ferrofem-out}
mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export FERROFEM_REQUIRE_GPU=1
export FERROFEM_KERNEL_CACHE="${FERROFEM_KERNEL_CACHE:-/tmp/ferrofem-kernel-cache}"
echo "== revision $(cat "$BIN/REVISION" 2>/dev/null)  date $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
  --format=csv,noheader
status=0

# `ferrofem bench ARGS` with binary $B (default this one), its records appended to $REC
B="$BIN/ferrofem"
REC="$OUT/bench.jsonl"
bench() {
  echo "== $(basename "$B") bench $*"
  "$B" bench "$@" --record "$REC" 2>&1 | tee -a "$OUT/bench.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
}

run_tests() {
  for t in "$BIN"/tests/*; do
    echo "== test $(basename "$t")"
    log="$OUT/test-$(basename "$t").log"
    "$t" --test-threads=1 > "$log" 2>&1
    rc=$?
    grep -E "^test |test result" "$log"
    [ $rc -eq 0 ] || { status=1; tail -40 "$log"; }
  done
}

bp_set() {
  for bp in bp1 bp3 bp3.5; do bench "$bp" --backend cuda --order 1..8; done
  bench bp1 --backend cuda --order 3..8 --geo stored --mesh tests/data/gmsh/plate_hole_hex_v41_binary.msh
}

bench_set() {
  bench stream --backend cuda
  bp_set
  for bp in bp1 bp3 bp3.5; do bench "$bp" --backend cuda --order 7 --kernel slice2d,auto --geo stored; done
  bench bp3.5 --backend cuda --order 7 --geo stored --solve 1e-8
  for prec in f64 f32; do
    for dim in 2 3; do
      for phys in poisson-varcoef elasticity; do
        bench residual --backend cuda --dim $dim --physics $phys --order 1 --precision $prec --cells 1.2e7 --reps 10
      done
    done
  done
  for args in "--box hex:24x24x24 --order 7" \
              "--mesh tests/data/gmsh/box_hex_v41_binary.msh --dirichlet xmin,ymin --order 7" \
              "--mesh tests/data/gmsh/box_tet_v41_binary.msh --dirichlet xmin,ymin --order 2"; do
    echo "== ferrofem solve --backend cuda --problem poisson $args --solver pcg"
    # shellcheck disable=SC2086
    "$BIN/ferrofem" solve --backend cuda --problem poisson $args --solver pcg --json \
      | tee -a "$OUT/solve.jsonl" || status=1
  done
}

compare() {
  [ -x "${BASE:-}" ] || { echo "compare: set BASE to the other ferrofem binary"; status=1; return; }
  local new="$BIN/ferrofem"
  for bp in ${BPS:-bp1 bp3 bp3.5}; do
    for who in base new; do
      if [ $who = base ]; then B=$BASE; else B=$new; fi
      REC="$OUT/compare-$who.jsonl" bench "$bp" --backend cuda --order 2..8
    done
  done
  B=$new
  python3 - "$OUT/compare-base.jsonl" "$OUT/compare-new.jsonl" <<'PY'
import json, sys
def load(path):
    return {(r["bench"], r["geometry"], r["order"]): r for r in map(json.loads, open(path))}
base, new = load(sys.argv[1]), load(sys.argv[2])
print(f"{'operator':8} {'geo':6} {'p':>2} {'base GDOF/s':>12} {'new GDOF/s':>11} {'new/base':>9}  new kernel")
worst = 1e9
for k in sorted(base.keys() & new.keys()):
    b, n = base[k]["gdofs_per_s"], new[k]["gdofs_per_s"]
    worst = min(worst, n / b)
    print(f"{k[0]:8} {k[1]:6} {k[2]:>2} {b:12.2f} {n:11.2f} {n / b:9.3f}  {new[k]['kernel']}")
print(f"slowest new/base: {worst:.3f}")
PY
}

# Runs "${@:2}" with its standard output appended to file $1, for at most $RANKS_LIMIT
# seconds (default 240): a run still going then has stalled, and the state of every thread
# of every ferrofem process (name, state, kernel wait channel, system call) is printed
# before they are killed.
watched() {
  local log=$1; shift
  "$@" >> "$log" &
  local pid=$! t=0
  while kill -0 $pid 2> /dev/null; do
    sleep 1; t=$((t + 1))
    if [ $t -ge "${RANKS_LIMIT:-240}" ]; then
      echo "STALLED after ${t}s: $*"
      for p in $(pgrep -x ferrofem); do
        echo " pid $p"
        for task in /proc/$p/task/*; do
          echo "  $(basename "$task") $(cat "$task/comm") $(awk '{print $3}' "$task/stat") \
wchan=$(cat "$task/wchan") syscall=$(cut -d' ' -f1-3 "$task/syscall")"
        done
      done
      pkill -9 -x ferrofem; kill -9 $pid 2> /dev/null; wait $pid 2> /dev/null
      return 1
    fi
  done
  wait $pid
}

# `ferrofem wave` on one GPU and `mpirun -np 2` with each halo transport, the elastic box
# example at the weak sizes (48³ per GPU) and the strong one (64³), f64 and f32; then the
# BP3.5 solve (p = 6) at 2·10⁷ DoFs per GPU (weak) and 4·10⁷ in all (strong).
ranks() {
  local box="$OUT/box.toml" run
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  for prec in f64 f32; do
    for size in "hex:48x48x48 0.5 1" "hex:64x64x64 0.5 1" "hex:64x64x64 0.5 2" \
                "hex:96x48x48,max=2:1:1 1.0 2"; do
      set -- $size
      sed -e "s/^box = .*/box = \"$1\"/" -e "s/^at = \[0.5, 0.5, 0.5\]/at = [$2, 0.5, 0.5]/" \
        -e "s/^at = \[0.5, 0.5, 0.8\]/at = [$2, 0.5, 0.8]/" examples/elastic_box.toml > "$box"
      for t in ${TRANSPORTS:-nccl host}; do
        if [ "$3" = 1 ]; then run=("$BIN/ferrofem"); t=one; else
          run=(env FERROFEM_GPU_EXCHANGE=$t mpirun --bind-to none -np 2 -x FERROFEM_GPU_EXCHANGE "$BIN/ferrofem"); fi
        echo "== wave $1 $prec on $3 GPU(s) ($t)"
        watched "$OUT/ranks-wave.jsonl" "${run[@]}" wave "$box" --backend cuda --precision $prec \
          --json || status=1
        tail -n 1 "$OUT/ranks-wave.jsonl"
        [ "$3" = 1 ] && break
      done
    done
  done
  for case in "1 2e7 one" "1 4e7 one" "2 4e7 nccl" "2 4e7 host" "2 8e7 nccl" "2 8e7 host"; do
    set -- $case
    echo "== bp3.5 --solve on $1 GPU(s), $2 DoFs ($3)"
    if [ "$1" = 1 ]; then run=("$BIN/ferrofem"); else
      run=(env FERROFEM_GPU_EXCHANGE=$3 mpirun --bind-to none -np "$1" -x FERROFEM_GPU_EXCHANGE "$BIN/ferrofem"); fi
    "${run[@]}" bench bp3.5 --backend cuda --order 6 --dofs "$2" --geo stored --solve 1e-8 \
      --record "$OUT/ranks-bp.jsonl" || status=1
  done
}

profile() {
  local metrics="lts__t_sectors_srcunit_tex.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,gpu__time_duration.sum"
  ncu --clock-control none -k regex:bp_apply --launch-skip 2 --launch-count 1 \
    --metrics "$metrics" ${NCU_EXTRA:-} "$BIN/ferrofem" bench "$@" --reps 1 \
    | tee "$OUT/profile.txt" || status=1
}

[ $# -gt 0 ] || set -- tests bench
while [ $# -gt 0 ]; do
  mode=$1; shift
  case "$mode" in
    tests) run_tests ;;
    bench) bench_set ;;
    bp) bp_set ;;
    compare) compare ;;
    ranks) ranks ;;
    profile) profile "$@"; set -- ;;
    *) echo "unknown mode '$mode'"; exit 2 ;;
  esac
done
exit $status

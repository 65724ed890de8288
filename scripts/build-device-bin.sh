#!/usr/bin/env bash
# Builds, on this machine, everything scripts/gpu-check.sh runs on the GPU machine (which
# has CUDA but no Rust): the ferrofem binary and the GPU crates' test executables, stripped,
# in .device-bin/ (git-ignored; name it in the device tool's `carry`).
#   MPI=1 scripts/build-device-bin.sh    with MPI (`--features mpi`) and the mpirun tests
set -euo pipefail
cd "$(dirname "$0")/.."
FEATURES=()
if [ "${MPI:-0}" = 1 ]; then FEATURES=(--features ferrofem-cli/mpi); fi
cargo build --release --bin ferrofem "${FEATURES[@]}"
mkdir -p .device-bin/tests
rm -f .device-bin/tests/*
cp target/release/ferrofem .device-bin/ferrofem
# test executables (cargo prints their paths as JSON artifacts): each GPU crate's
# `integration` as tests/<crate>, and the mpirun tests
cargo test --release --no-run -p ferrofem-cuda -p ferrofem-driver -p ferrofem-cli \
  "${FEATURES[@]}" --message-format=json 2>/dev/null \
  | python3 -c '
import json, sys, shutil
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") != "compiler-artifact" or not m.get("executable") or m["target"]["kind"] != ["test"]:
        continue
    name, crate = m["target"]["name"], m["package_id"].split("/")[-1].split("#")[0]
    if name == "integration":
        shutil.copy(m["executable"], ".device-bin/tests/" + crate)
        print("test binary:", crate)
    elif name == "mpi":
        shutil.copy(m["executable"], ".device-bin/tests/mpi")
        print("test binary: mpi")
'
strip .device-bin/ferrofem .device-bin/tests/* 2>/dev/null || true
git rev-parse --short HEAD > .device-bin/REVISION 2>/dev/null || true
du -sh .device-bin

#!/usr/bin/env bash
# Builds, on this machine, everything scripts/gpu-check.sh runs on the GPU machine (which
# has CUDA but no Rust): the ferrofem binary and the GPU test executables, stripped, in
# .device-bin/ (git-ignored; name it in the device tool's `carry`).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bin ferrofem
mkdir -p .device-bin/tests
rm -f .device-bin/tests/*
cp target/release/ferrofem .device-bin/ferrofem
# GPU test executables (cargo prints their paths as JSON artifacts)
cargo test --release --no-run -p ferrofem-cuda -p ferrofem-driver -p ferrofem-cli --message-format=json 2>/dev/null \
  | python3 -c '
import json, sys, shutil
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        name = m["target"]["name"]
        if name in ("gpu", "gpu_wave", "gpu_assembly", "gpu_assemble", "gpu_solve", "gpu_problem_files", "scaled_problems"):
            shutil.copy(m["executable"], ".device-bin/tests/" + name)
            print("test binary:", name)
'
strip .device-bin/ferrofem .device-bin/tests/* 2>/dev/null || true
git rev-parse --short HEAD > .device-bin/REVISION 2>/dev/null || true
du -sh .device-bin

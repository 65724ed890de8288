#!/usr/bin/env bash
# On a machine with cuobjdump / nvdisasm: the static opcode counts of bp_apply in each cubin
# under .device-exp/ (written without a GPU by `kernel_registers ... cubin=.device-exp/NAME.cubin`),
# with the full SASS written to the directory $OUT, and the count of FP64 multiply-adds that
# take a constant-bank operand. This is how the coefficient loads (ULDC) that feed every DFMA
# were counted: sm_90's DFMA takes its coefficient from a register (docs/bp-gpu.md).
export PATH=$PATH:/usr/local/cuda/bin
echo "tools: $(which cuobjdump nvdisasm 2>/dev/null | tr '\n' ' ')"
for c in .device-exp/*.cubin; do
  [ -f "$c" ] || continue
  s="$OUT/$(basename "$c").sass"
  echo "== $c"
  cuobjdump -sass "$c" > "$s" 2>&1 || nvdisasm "$c" > "$s" 2>&1
  awk '/Function : bp_apply/,/Function : [^b]|\.section/' "$s" | grep -oE "^\s+/\*[0-9a-f]+\*/\s+[A-Z0-9.]+" \
    | awk '{print $2}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -14
  echo "DFMA with a constant-bank operand: $(grep -c 'DFMA.*c\[0x3\]' "$s")"
done

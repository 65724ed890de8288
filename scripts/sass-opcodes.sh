#!/usr/bin/env bash
# On the GPU machine (which has cuobjdump / nvdisasm): the static opcode counts of bp_apply in
# each cubin under .device-exp/ (made here with `kernel_registers ... cubin=.device-exp/NAME.cubin`,
# see notes/gpu-bp.md), with the full SASS written to $OUT, and the count of FP64 multiply-adds
# that take a constant-bank operand.
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

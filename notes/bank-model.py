#!/usr/bin/env python3
"""Bank model of the register-column BP1 kernel's shared accesses (bp_pencil.cu, ZFIRST),
f64, default block shape (128 // Q^2 elements per block): wavefronts per element of its
eight shared accesses for given pitches, and the search that chose v20's pitches
(notes/gpu-bp.md, v20). A wavefront serves each of the 32 four-byte banks once; a warp's
access needs as many wavefronts as the most distinct words any bank holds. `half` serves
the two half-warps apart, and reproduces Nsight Compute's "L1 Wavefronts Shared" per
element (p = 3: 88 default, 75 with v20's pitches; p = 7: 446 and 420); `whole` lets the
32 lanes share the banks, and matched only p = 7's default (v20 chose with it).

    python3 notes/bank-model.py            # default and v20 pitches, p = 3..8
    python3 notes/bank-model.py search     # the search, half-warp model (a few minutes)
"""
import sys


def wf_whole(words):
    banks = {}
    for w in set(x for x in words if x is not None):
        for h in (0, 1):
            banks.setdefault((2 * w + h) % 32, set()).add(2 * w + h)
    return max((len(s) for s in banks.values()), default=0)


def wf_half(words):
    return wf_whole(words[:16]) + wf_whole(words[16:])


def ideal(words):
    n = len(set(x for x in words if x is not None))
    return (n * 8 + 127) // 128


def run(p, pitches, model=wf_whole):
    """(wavefronts, ideal, REG) per element for pitches (ZPR, ZPP, YPR, YPP)."""
    zpr, zpp, ypr, ypp = pitches
    n, q = p + 1, p + 2
    t1d = q
    reg = max(q * zpp, q * ypp)
    work = 2 * reg
    epb = max(1, 128 // (t1d * t1d))
    nthr = t1d * t1d * epb

    def sz(z, y, x, le):
        return le * work + z * zpp + y * zpr + x

    def sy(z, y, x, le):
        return le * work + reg + z * ypp + y * ypr + x

    accesses = [
        (lambda a, b: a < n and b < n, q, lambda a, b, le, i: sz(i, b, a, le)),  # z store
        (lambda a, b: a < n, n, lambda a, b, le, i: sz(b, i, a, le)),  # y load
        (lambda a, b: a < n, q, lambda a, b, le, i: sy(b, i, a, le)),  # y store
        (lambda a, b: True, n, lambda a, b, le, i: sy(b, a, i, le)),  # x load
        (lambda a, b: True, n, lambda a, b, le, i: sy(b, a, i, le)),  # x store
        (lambda a, b: a < n, q, lambda a, b, le, i: sy(b, i, a, le)),  # y^T load
        (lambda a, b: a < n, n, lambda a, b, le, i: sz(b, i, a, le)),  # y^T store
        (lambda a, b: a < n and b < n, q, lambda a, b, le, i: sz(i, b, a, le)),  # z^T load
    ]
    tot = idl = 0
    for act, cnt, addr in accesses:
        for w0 in range(0, nthr, 32):
            for i in range(cnt):
                words = []
                for t in range(w0, w0 + 32):
                    a, b, le = t % t1d, (t // t1d) % t1d, t // (t1d * t1d)
                    words.append(addr(a, b, le, i) if t < nthr and act(a, b) else None)
                tot += model(words)
                idl += ideal(words)
    return tot / epb, idl / epb, reg


def default(p):
    n, q = p + 1, p + 2
    padn = n + 1 if n % 2 == 0 else n
    return (padn, n * padn, padn, q * padn)


# v20's pitches (searched with the whole-warp model), and v20b's (the half-warp model,
# which matches Nsight Compute; bp.rs's zfirst_pitches)
V20 = {3: (4, 20, 7, 42), 4: (5, 38, 6, 43), 5: (6, 38, 9, 70),
       6: (7, 52, 7, 56), 7: (8, 72, 10, 105), 8: (9, 89, 9, 90)}
V20B = {3: (4, 20, 7, 42), 4: (6, 38, 6, 43), 5: (6, 38, 7, 54),
        6: (7, 55, 7, 56), 7: (8, 72, 10, 105), 8: (9, 89, 9, 90)}

if __name__ == "__main__":
    for p in range(3, 9):
        n, q = p + 1, p + 2
        if len(sys.argv) > 1 and sys.argv[1] == "search":
            best = None
            for zpr in range(n, n + 4):
                for ypr in range(n, n + 4):
                    for zp in range(16):
                        for yp in range(16):
                            pt = (zpr, n * zpr + zp, ypr, q * ypr + yp)
                            r = run(p, pt, wf_half)
                            key = (r[0], r[2])
                            if best is None or key < best[0]:
                                best = (key, pt)
            print(f"p={p} best {best[1]}: {best[0][0]:.0f} wavefronts, REG {best[0][1]}")
        else:
            d = run(p, default(p), wf_half)
            print(f"p={p} half-warp model: default {default(p)} {d[0]:.0f} (ideal {d[1]:.0f}, "
                  f"REG {d[2]}), v20 {V20[p]} {run(p, V20[p], wf_half)[0]:.0f}, "
                  f"v20b {V20B[p]} {run(p, V20B[p], wf_half)[0]:.0f} "
                  f"(REG {run(p, V20B[p], wf_half)[2]}); whole-warp model: default "
                  f"{run(p, default(p))[0]:.0f}, v20 {run(p, V20[p])[0]:.0f}")

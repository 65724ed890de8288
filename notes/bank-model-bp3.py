#!/usr/bin/env python3
"""Half-warp bank model of the v2 BP3 kernel's shared accesses (bp_pencil.cu, OP 3, not
ZFIRST), f64, default block shape, and the search behind v20c's pitches (bp.rs,
`bp3_pitches`; notes/gpu-bp.md v20c). It reproduces Nsight Compute's "L1 Wavefronts
Shared" of the tuned BP3 p = 5 kernel (908 per element, ideal 602). The arrays: sIn / sA
(RN, PN), sB (RB, PB), sU / sC (RQ, PQ), sR (RR, PR), sS (RS, PS): row and plane pitches.

    python3 notes/bank-model-bp3.py 5 8     # search at p = 5 and 8 (minutes each)
"""
import importlib.util
import os
import sys

_spec = importlib.util.spec_from_file_location(
    "bm", os.path.join(os.path.dirname(os.path.abspath(__file__)), "bank-model.py"))
bm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bm)
wf = bm.wf_half
ideal = bm.ideal
# default elements per block of the tuned kernels
EPB = {3: 5, 4: 3, 5: 2, 6: 2, 7: 1, 8: 1}


def model(p, RN, PN, RB, PB, RQ, PQ, epb, detail=False, RR=None, PR=None, RS=None, PS=None):
    RR = RQ if RR is None else RR; PR = PQ if PR is None else PR; RS = RQ if RS is None else RS; PS = PQ if PS is None else PS
    N=p+1; Q=p+2; T=Q
    REG=max(N*PN, N*PB, Q*PQ, Q*PR, Q*PS)
    WORK=3*REG
    R=[0,REG,2*REG]
    nthr=T*T*epb
    sIn=lambda z,y,x,le: le*WORK+R[0]+z*PN+y*RN+x
    sA=sIn
    sB=lambda z,y,x,le: le*WORK+R[1]+z*PB+y*RB+x
    sC=lambda z,y,x,le: le*WORK+R[2]+z*PQ+y*RQ+x
    sU=lambda z,y,x,le: le*WORK+R[0]+z*PQ+y*RQ+x
    sR=lambda z,y,x,le: le*WORK+R[1]+z*PR+y*RR+x
    sS=lambda z,y,x,le: le*WORK+R[2]+z*PS+y*RS+x
    own=lambda a,b: a<N and b<N
    allt=lambda a,b: True
    bN=lambda a,b: b<N
    acc=[("gather st",own,N,lambda a,b,le,i: sIn(i,b,a,le)),
         ("x ld",own,N,lambda a,b,le,i: sIn(b,a,i,le)),
         ("x st",own,Q,lambda a,b,le,i: sB(b,a,i,le)),
         ("y ld",bN,N,lambda a,b,le,i: sB(b,i,a,le)),
         ("y st",bN,Q,lambda a,b,le,i: sC(b,i,a,le)),
         ("z ld",allt,N,lambda a,b,le,i: sC(i,b,a,le)),
         ("U st",allt,Q,lambda a,b,le,i: sU(i,b,a,le)),
         ("row ld",allt,Q,lambda a,b,le,i: sU(b,a,i,le)),
         ("col ld",allt,Q,lambda a,b,le,i: sU(b,i,a,le)),
         ("R st",allt,Q,lambda a,b,le,i: sR(b,a,i,le)),
         ("S st",allt,Q,lambda a,b,le,i: sS(b,i,a,le)),
         ("pt R ld/st x2",allt,2*Q,lambda a,b,le,i: sR(i%Q,b,a,le)),
         ("pt S ld/st x2",allt,2*Q,lambda a,b,le,i: sS(i%Q,b,a,le)),
         ("T R ld/st x2",allt,2*Q,lambda a,b,le,i: sR(b,a,i%Q,le)),
         ("T S ld/st x2",allt,2*Q,lambda a,b,le,i: sS(b,i%Q,a,le)),
         ("fin R",allt,Q,lambda a,b,le,i: sR(i,b,a,le)),
         ("fin S",allt,Q,lambda a,b,le,i: sS(i,b,a,le)),
         ("zT st",allt,N,lambda a,b,le,i: sC(i,b,a,le)),
         ("yT ld",bN,Q,lambda a,b,le,i: sC(b,i,a,le)),
         ("yT st",bN,N,lambda a,b,le,i: sB(b,i,a,le)),
         ("xT ld",own,Q,lambda a,b,le,i: sB(b,a,i,le)),
         ("xT st",own,N,lambda a,b,le,i: sA(b,a,i,le)),
         ("scatter ld",own,N,lambda a,b,le,i: sA(i,b,a,le))]
    tot=0; idl=0; det=[]
    for name,act,cnt,addr in acc:
        w=0; d=0
        for w0 in range(0,nthr,32):
            for i in range(cnt):
                words=[]
                for t in range(w0,w0+32):
                    a,b,le=t%T,(t//T)%T,t//(T*T)
                    words.append(addr(a,b,le,i) if t<nthr and act(a,b) else None)
                w+=wf(words); d+=ideal(words)
        tot+=w; idl+=d; det.append("%s %d/%d"%(name,w/epb,d/epb))
    return tot/epb, idl/epb, REG, det

def ev(p,c,epb):
    return model(p,c[0],c[1],c[2],c[3],c[4],c[5],epb,False,c[6],c[7],c[8],c[9])


if __name__ == "__main__":
    for p in [int(x) for x in sys.argv[1:]]:
        N=p+1;Q=p+2;epb=EPB[p]
        PADN=N+1 if N%2==0 else N; PADQ=Q+1 if Q%2==0 else Q
        cur=[PADN,N*PADN,PADQ,N*PADQ,PADQ,Q*PADQ,PADQ,Q*PADQ,PADQ,Q*PADQ]
        base=ev(p,cur,epb)[0]
        for it in range(2):
            for g,(lo,rows) in enumerate([(N,N),(Q,N),(Q,Q),(Q,Q),(Q,Q)]):
                best=None
                for r in range(lo,lo+4):
                    for pad in range(0,16):
                        c=list(cur); c[2*g]=r; c[2*g+1]=rows*r+pad
                        m=ev(p,c,epb)
                        key=(m[0],m[2])
                        if best is None or key<best[0]: best=(key,c)
                cur=best[1]
        m=ev(p,cur,epb)
        print(p,"epb",epb,"default %.0f -> %.0f (ideal %.0f), REG %d, pitches RN,PN,RB,PB,RQ,PQ,RR,PR,RS,PS ="%(base,m[0],m[1],m[2]),cur, flush=True)

import itertools, sys
sys.path.insert(0,'/tmp/sim')
from bank import wavefronts, ideal
def run(p, PZ, PZP, PY, PYP, WPAD=0):
    N=p+1; Q=p+2; T=Q
    REG=max(Q*PZP, Q*PYP)
    WORK=2*REG+WPAD
    EPB=max(1,128//(T*T)); nthr=T*T*EPB
    def sZ(z,y,x,le): return le*WORK+z*PZP+y*PZ+x
    def sY(z,y,x,le): return le*WORK+REG+z*PYP+y*PY+x
    acc=[(lambda a,b: a<N and b<N, Q, lambda a,b,le,i: sZ(i,b,a,le)),
     (lambda a,b: a<N, N, lambda a,b,le,i: sZ(b,i,a,le)),
     (lambda a,b: a<N, Q, lambda a,b,le,i: sY(b,i,a,le)),
     (lambda a,b: True, N, lambda a,b,le,i: sY(b,a,i,le)),
     (lambda a,b: True, N, lambda a,b,le,i: sY(b,a,i,le)),
     (lambda a,b: a<N, Q, lambda a,b,le,i: sY(b,i,a,le)),
     (lambda a,b: a<N, N, lambda a,b,le,i: sZ(b,i,a,le)),
     (lambda a,b: a<N and b<N, Q, lambda a,b,le,i: sZ(i,b,a,le))]
    tot=0; idl=0
    for act,cnt,addr in acc:
        for w0 in range(0,nthr,32):
            for i in range(cnt):
                words=[addr(t%T,(t//T)%T,t//(T*T),i) if act(t%T,(t//T)%T) else None for t in range(w0,min(w0+32,nthr))]
                tot+=wavefronts(words); idl+=ideal(words)
    return tot/EPB, idl/EPB, REG
for p in range(3,9):
    N=p+1;Q=p+2
    PADN=N+1 if N%2==0 else N
    base=run(p,PADN,N*PADN,PADN,Q*PADN)
    best=None
    for PZ in range(N, N+4):
        for PY in range(N, N+4):
            for zp in range(0,16):
                for yp in range(0,16):
                    r=run(p,PZ,N*PZ+zp,PY,Q*PY+yp)
                    key=(r[0],r[2])
                    if best is None or key<best[0]: best=(key,(PZ,N*PZ+zp,PY,Q*PY+yp),r)
    print(p,"base %.0f (ideal %.0f) REG %d"%(base[0],base[1],base[2]),"best %.0f REG %d"%(best[2][0],best[2][2]),"pitches PZ,PZP,PY,PYP",best[1])

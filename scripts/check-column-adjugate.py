#!/usr/bin/env python3
# Checks the on-the-fly metric of bp_pencil.cu (column_adj / column_flux) against
# w det(J) J^-1 J^-T g of the trilinear map, on random perturbed elements (numpy only).
import numpy as np
rng=np.random.default_rng(1)
def cross_c(x,y,d):
    d1=(d+1)%3; d2=(d+2)%3
    return x[d1]*y[d2]-x[d2]*y[d1]
for trial in range(20):
    X=np.array([[0,1,0,1,0,1,0,1],[0,0,1,1,0,0,1,1],[0,0,0,0,1,1,1,1]],float)+0.2*rng.standard_normal((3,8))
    xi,eta=rng.uniform(-1,1,2)
    a0,a1=0.5*(1-xi),0.5*(1+xi); b0,b1=0.5*(1-eta),0.5*(1+eta)
    P0=np.zeros(3);P1=np.zeros(3);R0=np.zeros(3);R1=np.zeros(3);C2=np.zeros(3)
    for d in range(3):
        x=X[d]
        A0=(x[1]-x[0])*b0+(x[3]-x[2])*b1; A1=(x[5]-x[4])*b0+(x[7]-x[6])*b1
        B0=(x[2]-x[0])*a0+(x[3]-x[1])*a1; B1=(x[6]-x[4])*a0+(x[7]-x[5])*a1
        P0[d]=0.25*(A0+A1);P1[d]=0.25*(A1-A0);R0[d]=0.25*(B0+B1);R1[d]=0.25*(B1-B0)
        C2[d]=0.5*((x[4]-x[0])*a0*b0+(x[5]-x[1])*a1*b0+(x[6]-x[2])*a0*b1+(x[7]-x[3])*a1*b1)
    A0=np.array([cross_c(R0,C2,d) for d in range(3)]);A1=np.array([cross_c(R1,C2,d) for d in range(3)])
    B0=np.array([cross_c(C2,P0,d) for d in range(3)]);B1=np.array([cross_c(C2,P1,d) for d in range(3)])
    E0=np.array([cross_c(P0,R0,d) for d in range(3)]);E1=np.array([cross_c(P0,R1,d)+cross_c(P1,R0,d) for d in range(3)]);E2=np.array([cross_c(P1,R1,d) for d in range(3)])
    d0=P0@A0; d1=P0@A1+P1@A0; d2=P1@A1
    z=rng.uniform(-1,1); w=rng.uniform(0.1,1); g=rng.standard_normal(3)
    r0=A0+z*A1; r1=B0+z*B1; r2=E0+z*(E1+z*E2); det=d0+z*(d1+z*d2)
    s=w/det; gs=s*g; t=np.array([r0[i]*gs[0]+r1[i]*gs[1]+r2[i]*gs[2] for i in range(3)])
    flux=np.array([r0@t,r1@t,r2@t])
    # reference: trilinear map Jacobian at (xi,eta,z) directly
    def phys(p):
        xx,yy,zz=p; out=np.zeros(3)
        for v in range(8):
            vx,vy,vz=v&1,(v>>1)&1,(v>>2)&1
            out+=X[:,v]*(0.5*(1+(2*vx-1)*xx))*(0.5*(1+(2*vy-1)*yy))*(0.5*(1+(2*vz-1)*zz))
        return out
    h=1e-6; J=np.zeros((3,3))
    for j in range(3):
        e=np.zeros(3);e[j]=h; p=np.array([xi,eta,z]); J[:,j]=(phys(p+e)-phys(p-e))/(2*h)
    G=w*np.linalg.det(J)*np.linalg.inv(J)@np.linalg.inv(J).T
    assert abs(det-np.linalg.det(J))<1e-8*abs(det), (det,np.linalg.det(J))
    assert np.allclose(flux,G@g,rtol=1e-7,atol=1e-9),(flux,G@g)
print("ok: column_adj/column_flux equal w det J J^-1 J^-T g on 20 random trilinear maps")

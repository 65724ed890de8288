//! Per-element kernels of a pointwise weak form (Knepley, Rupp & Terrel 2016, eq. 2.2):
//! interpolate the element's coefficients to each quadrature point (`B`, `D_k` and
//! `J⁻ᵀ`), call the pointwise physics, and contract with the transposed basis.
//!
//! The kernels are monomorphised on the spatial dimension `D` and the number of
//! components `NC`, so that every per-point loop has compile-time bounds and all
//! per-point values live in small stack arrays; the only runtime loop bounds are the
//! numbers of basis functions and quadrature points. Nothing here allocates.

use super::aux::AuxData;
use ferrofem_base::Real;
use ferrofem_physics::{JacobianTerms, Physics, Point, ResidualTerms};

/// Most solution components a kernel handles (scalar, 2-D and 3-D vector fields).
pub const MAX_COMPONENTS: usize = 3;
/// Most auxiliary components a kernel handles.
pub const MAX_AUX: usize = 8;

/// A basis tabulated at the points of a quadrature rule, in the scalar type of the kernels.
#[derive(Clone, Debug)]
pub(crate) struct Tab<T> {
    /// Quadrature points.
    pub nq: usize,
    /// Basis functions.
    pub nb: usize,
    /// Values and reference gradients interleaved, `dim + 1` entries per point and basis
    /// function: `bd[(q * nb + i) * (dim + 1)] = φ_i(ξ_q)`,
    /// `bd[(q * nb + i) * (dim + 1) + 1 + k] = ∂φ_i/∂ξ_k (ξ_q)`.
    pub bd: Vec<T>,
}

impl<T> Tab<T> {
    /// The entries of point `q` (`nb * (D + 1)`).
    #[inline(always)]
    fn at<const D: usize>(&self, q: usize) -> &[T] {
        let m = self.nb * (D + 1);
        &self.bd[q * m..(q + 1) * m]
    }
}

/// Geometry at the quadrature points in the kernels' scalar type. Affine cells
/// (simplices) store one inverse Jacobian per cell instead of one per point.
#[derive(Clone, Debug)]
pub(crate) struct Geo<T> {
    /// Quadrature points per cell.
    pub nq: usize,
    /// Dimension.
    pub dim: usize,
    /// True when `jinv` holds one matrix per cell.
    pub affine: bool,
    /// Physical points `[cell][q][i]`.
    pub x: Vec<T>,
    /// Inverse Jacobians `∂ξ_k/∂x_i` at `[k * dim + i]`, per cell (affine) or per point.
    pub jinv: Vec<T>,
    /// Weight times `det J`, `[cell][q]`.
    pub wdetj: Vec<T>,
}

impl<T> Geo<T> {
    #[inline(always)]
    fn jinv(&self, e: usize, q: usize) -> &[T] {
        let dd = self.dim * self.dim;
        let at = if self.affine { e } else { e * self.nq + q };
        &self.jinv[at * dd..(at + 1) * dd]
    }
    #[inline(always)]
    fn x(&self, e: usize, q: usize) -> &[T] {
        let p = e * self.nq + q;
        &self.x[p * self.dim..(p + 1) * self.dim]
    }
}

/// Everything an element kernel reads besides the element's own coefficients.
pub(crate) struct Ctx<'a, T, P> {
    pub physics: &'a P,
    pub tab: &'a Tab<T>,
    pub geo: &'a Geo<T>,
    pub aux: &'a AuxData<T>,
    pub terms: ResidualTerms,
    pub jac: JacobianTerms,
    pub naux: usize,
}

/// Residual of one element: `re = Bᵀ W f0 + Σ_k D_kᵀ W f1_k` (overwritten) from the
/// element coefficients `ue` (`[comp][node]`).
pub(crate) type ResidualFn<T, P> = fn(&Ctx<'_, T, P>, usize, &[T], &mut [T]);
/// Jacobian action on one element, linearised about `ue` (`None` for linear physics).
pub(crate) type JacobianFn<T, P> = fn(&Ctx<'_, T, P>, usize, Option<&[T]>, &[T], &mut [T]);
/// Diagonal of one element matrix, or the whole matrix (row-major), about `ue`.
pub(crate) type MatrixFn<T, P> = fn(&Ctx<'_, T, P>, usize, Option<&[T]>, &mut [T]);

/// The four kernels for one `(dim, ncomp)`, selected once at construction.
pub(crate) struct Kernels<T, P> {
    pub residual: ResidualFn<T, P>,
    pub jacobian: JacobianFn<T, P>,
    pub diagonal: MatrixFn<T, P>,
    pub matrix: MatrixFn<T, P>,
}

impl<T: Real, P: Physics<T>> Kernels<T, P> {
    fn of<const D: usize, const NC: usize>() -> Kernels<T, P> {
        Kernels {
            residual: residual_elem::<T, P, D, NC>,
            jacobian: jacobian_elem::<T, P, D, NC>,
            diagonal: diagonal_elem::<T, P, D, NC>,
            matrix: matrix_elem::<T, P, D, NC>,
        }
    }

    /// The kernels for dimension `dim` and `ncomp` components, if supported.
    pub fn select(dim: usize, ncomp: usize) -> Option<Kernels<T, P>> {
        Some(match (dim, ncomp) {
            (2, 1) => Self::of::<2, 1>(),
            (2, 2) => Self::of::<2, 2>(),
            (2, 3) => Self::of::<2, 3>(),
            (3, 1) => Self::of::<3, 1>(),
            (3, 2) => Self::of::<3, 2>(),
            (3, 3) => Self::of::<3, 3>(),
            _ => return None,
        })
    }
}

/// Values `u[c]` and physical gradients `du[c * D + l]` at point `q` of a field with
/// element coefficients `ue` (`[comp][node]`).
#[inline(always)]
fn eval_field<T: Real, const D: usize, const NC: usize>(
    tab: &Tab<T>,
    q: usize,
    ue: &[T],
    jinv: &[T],
    u: &mut [T; MAX_COMPONENTS],
    du: &mut [T; MAX_COMPONENTS * 3],
) {
    let nb = tab.nb;
    let tq = tab.at::<D>(q);
    for c in 0..NC {
        let uc = &ue[c * nb..(c + 1) * nb];
        let mut s = T::zero();
        let mut g = [T::zero(); D];
        for (ch, &v) in tq.chunks_exact(D + 1).zip(uc) {
            s += ch[0] * v;
            for k in 0..D {
                g[k] += ch[1 + k] * v;
            }
        }
        u[c] = s;
        // ∂u/∂x_l = Σ_k ∂u/∂ξ_k ∂ξ_k/∂x_l
        for l in 0..D {
            let mut t = T::zero();
            for k in 0..D {
                t += g[k] * jinv[k * D + l];
            }
            du[c * D + l] = t;
        }
    }
}

/// Adds `w (B_q f0 + D_q J⁻¹ f1)` to the element vector: `re[c * nb + i] += w φ_i f0_c +
/// w Σ_l ∂φ_i/∂x_l f1_{c,l}`, with `f1` given in physical directions.
#[inline(always)]
fn add_point<T: Real, const D: usize, const NC: usize>(
    tab: &Tab<T>,
    q: usize,
    jinv: &[T],
    w: T,
    f0: Option<&[T; MAX_COMPONENTS]>,
    f1: Option<&[T; MAX_COMPONENTS * 3]>,
    re: &mut [T],
) {
    let nb = tab.nb;
    let tq = tab.at::<D>(q);
    for c in 0..NC {
        let rc = &mut re[c * nb..(c + 1) * nb];
        // reference-direction flux: fr_k = w Σ_l ∂ξ_k/∂x_l f1_l
        let mut fr = [T::zero(); D];
        if let Some(f1) = f1 {
            for k in 0..D {
                let mut t = T::zero();
                for l in 0..D {
                    t += jinv[k * D + l] * f1[c * D + l];
                }
                fr[k] = w * t;
            }
        }
        match (f0, f1.is_some()) {
            (Some(f0), true) => {
                let f0w = w * f0[c];
                for (r, ch) in rc.iter_mut().zip(tq.chunks_exact(D + 1)) {
                    let mut s = ch[0] * f0w;
                    for k in 0..D {
                        s += ch[1 + k] * fr[k];
                    }
                    *r += s;
                }
            }
            (None, true) => {
                for (r, ch) in rc.iter_mut().zip(tq.chunks_exact(D + 1)) {
                    let mut s = T::zero();
                    for k in 0..D {
                        s += ch[1 + k] * fr[k];
                    }
                    *r += s;
                }
            }
            (Some(f0), false) => {
                let f0w = w * f0[c];
                for (r, ch) in rc.iter_mut().zip(tq.chunks_exact(D + 1)) {
                    *r += ch[0] * f0w;
                }
            }
            (None, false) => {}
        }
    }
}

/// Auxiliary values `a` and physical gradients `da` at point `q` of element `e`.
#[inline(always)]
fn eval_aux<T: Real, const D: usize>(
    aux: &AuxData<T>,
    e: usize,
    q: usize,
    jinv: &[T],
    a: &mut [T; MAX_AUX],
    da: &mut [T; MAX_AUX * 3],
) {
    match aux {
        AuxData::None => {}
        AuxData::Cellwise { ncomp, values } => {
            a[..*ncomp].copy_from_slice(&values[e * ncomp..(e + 1) * ncomp]);
            // gradients of a cellwise constant are zero (da stays zero)
        }
        AuxData::Nodal {
            restriction,
            values,
            tab,
        } => {
            let na = restriction.ncomp();
            let tq = tab.at::<D>(q);
            let nodes = restriction.elem(e);
            for c in 0..na {
                let mut s = T::zero();
                let mut g = [T::zero(); D];
                for (ch, &n) in tq.chunks_exact(D + 1).zip(nodes) {
                    let v = values[n as usize * na + c];
                    s += ch[0] * v;
                    for k in 0..D {
                        g[k] += ch[1 + k] * v;
                    }
                }
                a[c] = s;
                for l in 0..D {
                    let mut t = T::zero();
                    for k in 0..D {
                        t += g[k] * jinv[k * D + l];
                    }
                    da[c * D + l] = t;
                }
            }
        }
    }
}

/// Per-point values handed to the physics, kept on the stack.
struct PointValues<T> {
    u: [T; MAX_COMPONENTS],
    du: [T; MAX_COMPONENTS * 3],
    a: [T; MAX_AUX],
    da: [T; MAX_AUX * 3],
}

impl<T: Real> PointValues<T> {
    fn new() -> PointValues<T> {
        PointValues {
            u: [T::zero(); MAX_COMPONENTS],
            du: [T::zero(); MAX_COMPONENTS * 3],
            a: [T::zero(); MAX_AUX],
            da: [T::zero(); MAX_AUX * 3],
        }
    }

    #[inline(always)]
    fn point<'a, const D: usize, const NC: usize>(
        &'a self,
        x: &'a [T],
        naux: usize,
    ) -> Point<'a, T> {
        Point {
            x,
            u: &self.u[..NC],
            du: &self.du[..NC * D],
            a: &self.a[..naux],
            da: &self.da[..naux * D],
        }
    }
}

/// Jacobian blocks at one point, on the stack (absent blocks stay zero).
struct Blocks<T> {
    g0: [T; 9],
    g1: [T; 27],
    g2: [T; 27],
    g3: [T; 81],
}

impl<T: Real> Blocks<T> {
    fn new() -> Blocks<T> {
        Blocks {
            g0: [T::zero(); 9],
            g1: [T::zero(); 27],
            g2: [T::zero(); 27],
            g3: [T::zero(); 81],
        }
    }

    #[inline(always)]
    fn eval<P: Physics<T>, const D: usize, const NC: usize>(
        &mut self,
        physics: &P,
        jac: JacobianTerms,
        p: &Point<'_, T>,
    ) {
        let m = NC * NC;
        if jac.g0 {
            physics.g0(p, &mut self.g0[..m]);
        }
        if jac.g1 {
            physics.g1(p, &mut self.g1[..m * D]);
        }
        if jac.g2 {
            physics.g2(p, &mut self.g2[..m * D]);
        }
        if jac.g3 {
            physics.g3(p, &mut self.g3[..m * D * D]);
        }
    }
}

fn residual_elem<T: Real, P: Physics<T>, const D: usize, const NC: usize>(
    ctx: &Ctx<'_, T, P>,
    e: usize,
    ue: &[T],
    re: &mut [T],
) {
    re.fill(T::zero());
    let mut pv = PointValues::new();
    let mut f0 = [T::zero(); MAX_COMPONENTS];
    let mut f1 = [T::zero(); MAX_COMPONENTS * 3];
    let (has0, has1) = (ctx.terms.f0, ctx.terms.f1);
    let geo = ctx.geo;
    for q in 0..ctx.tab.nq {
        let jinv = geo.jinv(e, q);
        let w = geo.wdetj[e * geo.nq + q];
        eval_field::<T, D, NC>(ctx.tab, q, ue, jinv, &mut pv.u, &mut pv.du);
        eval_aux::<T, D>(ctx.aux, e, q, jinv, &mut pv.a, &mut pv.da);
        let p = pv.point::<D, NC>(geo.x(e, q), ctx.naux);
        if has0 {
            ctx.physics.f0(&p, &mut f0[..NC]);
        }
        if has1 {
            ctx.physics.f1(&p, &mut f1[..NC * D]);
        }
        add_point::<T, D, NC>(
            ctx.tab,
            q,
            jinv,
            w,
            has0.then_some(&f0),
            has1.then_some(&f1),
            re,
        );
    }
}

fn jacobian_elem<T: Real, P: Physics<T>, const D: usize, const NC: usize>(
    ctx: &Ctx<'_, T, P>,
    e: usize,
    ue: Option<&[T]>,
    ve: &[T],
    re: &mut [T],
) {
    re.fill(T::zero());
    let mut pv = PointValues::new();
    let mut v = [T::zero(); MAX_COMPONENTS];
    let mut dv = [T::zero(); MAX_COMPONENTS * 3];
    let mut g = Blocks::new();
    let jac = ctx.jac;
    let has0 = jac.g0 || jac.g1;
    let has1 = jac.g2 || jac.g3;
    let geo = ctx.geo;
    for q in 0..ctx.tab.nq {
        let jinv = geo.jinv(e, q);
        let w = geo.wdetj[e * geo.nq + q];
        eval_field::<T, D, NC>(ctx.tab, q, ve, jinv, &mut v, &mut dv);
        if let Some(ue) = ue {
            eval_field::<T, D, NC>(ctx.tab, q, ue, jinv, &mut pv.u, &mut pv.du);
        }
        eval_aux::<T, D>(ctx.aux, e, q, jinv, &mut pv.a, &mut pv.da);
        let p = pv.point::<D, NC>(geo.x(e, q), ctx.naux);
        g.eval::<P, D, NC>(ctx.physics, jac, &p);
        // linearised fluxes: δf0 = g0 v + g1 ∇v, δf1 = g2 v + g3 ∇v
        let mut f0 = [T::zero(); MAX_COMPONENTS];
        let mut f1 = [T::zero(); MAX_COMPONENTS * 3];
        for ci in 0..NC {
            for cj in 0..NC {
                let b = ci * NC + cj;
                if jac.g0 {
                    f0[ci] += g.g0[b] * v[cj];
                }
                if jac.g1 {
                    for l in 0..D {
                        f0[ci] += g.g1[b * D + l] * dv[cj * D + l];
                    }
                }
                for k in 0..D {
                    let mut s = T::zero();
                    if jac.g2 {
                        s += g.g2[b * D + k] * v[cj];
                    }
                    if jac.g3 {
                        for l in 0..D {
                            s += g.g3[(b * D + k) * D + l] * dv[cj * D + l];
                        }
                    }
                    f1[ci * D + k] += s;
                }
            }
        }
        add_point::<T, D, NC>(
            ctx.tab,
            q,
            jinv,
            w,
            has0.then_some(&f0),
            has1.then_some(&f1),
            re,
        );
    }
}

/// Physical gradient of basis function `i` at point `q`: `Σ_k ∂φ_i/∂ξ_k ∂ξ_k/∂x_l`.
#[inline(always)]
fn basis_grad<T: Real, const D: usize>(ch: &[T], jinv: &[T]) -> [T; D] {
    let mut g = [T::zero(); D];
    for l in 0..D {
        for k in 0..D {
            g[l] += ch[1 + k] * jinv[k * D + l];
        }
    }
    g
}

fn diagonal_elem<T: Real, P: Physics<T>, const D: usize, const NC: usize>(
    ctx: &Ctx<'_, T, P>,
    e: usize,
    ue: Option<&[T]>,
    de: &mut [T],
) {
    de.fill(T::zero());
    let mut pv = PointValues::new();
    let mut g = Blocks::new();
    let jac = ctx.jac;
    let geo = ctx.geo;
    let nb = ctx.tab.nb;
    for q in 0..ctx.tab.nq {
        let jinv = geo.jinv(e, q);
        let w = geo.wdetj[e * geo.nq + q];
        if let Some(ue) = ue {
            eval_field::<T, D, NC>(ctx.tab, q, ue, jinv, &mut pv.u, &mut pv.du);
        }
        eval_aux::<T, D>(ctx.aux, e, q, jinv, &mut pv.a, &mut pv.da);
        let p = pv.point::<D, NC>(geo.x(e, q), ctx.naux);
        g.eval::<P, D, NC>(ctx.physics, jac, &p);
        for (i, ch) in ctx.tab.at::<D>(q).chunks_exact(D + 1).enumerate() {
            let phi = ch[0];
            let gp = basis_grad::<T, D>(ch, jinv);
            for c in 0..NC {
                let b = c * NC + c;
                let mut s = T::zero();
                if jac.g0 {
                    s += phi * g.g0[b] * phi;
                }
                for k in 0..D {
                    if jac.g1 {
                        s += phi * g.g1[b * D + k] * gp[k];
                    }
                    if jac.g2 {
                        s += gp[k] * g.g2[b * D + k] * phi;
                    }
                    if jac.g3 {
                        for l in 0..D {
                            s += gp[k] * g.g3[(b * D + k) * D + l] * gp[l];
                        }
                    }
                }
                de[c * nb + i] += w * s;
            }
        }
    }
}

fn matrix_elem<T: Real, P: Physics<T>, const D: usize, const NC: usize>(
    ctx: &Ctx<'_, T, P>,
    e: usize,
    ue: Option<&[T]>,
    out: &mut [T],
) {
    out.fill(T::zero());
    let mut pv = PointValues::new();
    let mut g = Blocks::new();
    let jac = ctx.jac;
    let geo = ctx.geo;
    let nb = ctx.tab.nb;
    let n = NC * nb;
    for q in 0..ctx.tab.nq {
        let jinv = geo.jinv(e, q);
        let w = geo.wdetj[e * geo.nq + q];
        if let Some(ue) = ue {
            eval_field::<T, D, NC>(ctx.tab, q, ue, jinv, &mut pv.u, &mut pv.du);
        }
        eval_aux::<T, D>(ctx.aux, e, q, jinv, &mut pv.a, &mut pv.da);
        let p = pv.point::<D, NC>(geo.x(e, q), ctx.naux);
        g.eval::<P, D, NC>(ctx.physics, jac, &p);
        let tq = ctx.tab.at::<D>(q);
        for (j, chj) in tq.chunks_exact(D + 1).enumerate() {
            let phj = chj[0];
            let gpj = basis_grad::<T, D>(chj, jinv);
            for ci in 0..NC {
                for cj in 0..NC {
                    let b = ci * NC + cj;
                    // column j of the (ci, cj) block: t0 multiplies φ_i, t1 (physical) ∇φ_i
                    let mut t0 = T::zero();
                    if jac.g0 {
                        t0 += g.g0[b] * phj;
                    }
                    if jac.g1 {
                        for l in 0..D {
                            t0 += g.g1[b * D + l] * gpj[l];
                        }
                    }
                    let mut t1 = [T::zero(); D];
                    for k in 0..D {
                        if jac.g2 {
                            t1[k] += g.g2[b * D + k] * phj;
                        }
                        if jac.g3 {
                            for l in 0..D {
                                t1[k] += g.g3[(b * D + k) * D + l] * gpj[l];
                            }
                        }
                    }
                    // ∇φ_i · t1 = Σ_k ∂φ_i/∂ξ_k (Σ_l ∂ξ_k/∂x_l t1_l)
                    let mut tr = [T::zero(); D];
                    for k in 0..D {
                        for l in 0..D {
                            tr[k] += jinv[k * D + l] * t1[l];
                        }
                        tr[k] *= w;
                    }
                    let t0 = w * t0;
                    let col = cj * nb + j;
                    for (i, ch) in tq.chunks_exact(D + 1).enumerate() {
                        let mut s = ch[0] * t0;
                        for k in 0..D {
                            s += ch[1 + k] * tr[k];
                        }
                        out[(ci * nb + i) * n + col] += s;
                    }
                }
            }
        }
    }
}

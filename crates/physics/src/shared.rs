//! A physics written once in `f64`, shared and usable in either precision: what a user's
//! own physics needs to run through the pipelines, which are generic in the precision.

use crate::{CudaPhysics, JacobianTerms, Physics, Point, ResidualTerms};
use ferrofem_base::Real;
use std::sync::Arc;

/// Largest `ncomp * dim` of a point's gradient (3 components in 3-D).
const MAX_GRAD: usize = 9;

/// An `f64` physics behind an [`Arc`], usable as a [`Physics<T>`] for `f32` and `f64`: an
/// `f32` operator converts each point's values to `f64`, evaluates, and rounds the outputs
/// back. Its CUDA half is the wrapped physics' own (compiled in the kernel's precision).
#[derive(Clone)]
pub struct SharedPhysics(pub Arc<dyn Physics<f64>>);

impl std::fmt::Debug for SharedPhysics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedPhysics({})", self.0.name())
    }
}

/// `f64` copies of a point's values.
struct Widened {
    x: [f64; 3],
    u: [f64; 3],
    du: [f64; MAX_GRAD],
    a: [f64; 8],
    da: [f64; 24],
}

fn widen<T: Real>(p: &Point<'_, T>) -> Widened {
    let mut w = Widened {
        x: [0.0; 3],
        u: [0.0; 3],
        du: [0.0; MAX_GRAD],
        a: [0.0; 8],
        da: [0.0; 24],
    };
    for (o, v) in w.x.iter_mut().zip(p.x) {
        *o = v.as_f64();
    }
    for (o, v) in w.u.iter_mut().zip(p.u) {
        *o = v.as_f64();
    }
    for (o, v) in w.du.iter_mut().zip(p.du) {
        *o = v.as_f64();
    }
    for (o, v) in w.a.iter_mut().zip(p.a) {
        *o = v.as_f64();
    }
    for (o, v) in w.da.iter_mut().zip(p.da) {
        *o = v.as_f64();
    }
    w
}

impl SharedPhysics {
    /// Evaluates `f` of the wrapped physics at `p` in `f64` into `out`.
    #[inline]
    fn eval<T: Real>(
        &self,
        p: &Point<'_, T>,
        out: &mut [T],
        f: impl Fn(&dyn Physics<f64>, &Point<'_, f64>, &mut [f64]),
    ) {
        let w = widen(p);
        let point = Point {
            x: &w.x[..p.x.len()],
            u: &w.u[..p.u.len()],
            du: &w.du[..p.du.len()],
            a: &w.a[..p.a.len()],
            da: &w.da[..p.da.len()],
        };
        let mut r = [0.0f64; 81];
        f(&*self.0, &point, &mut r[..out.len()]);
        for (o, v) in out.iter_mut().zip(r) {
            *o = T::of(v);
        }
    }
}

impl<T: Real> Physics<T> for SharedPhysics {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn ncomp(&self) -> usize {
        self.0.ncomp()
    }
    fn naux(&self) -> usize {
        self.0.naux()
    }
    fn terms(&self) -> ResidualTerms {
        self.0.terms()
    }
    fn jacobian_terms(&self) -> JacobianTerms {
        self.0.jacobian_terms()
    }
    fn is_linear(&self) -> bool {
        self.0.is_linear()
    }
    fn is_symmetric(&self) -> bool {
        self.0.is_symmetric()
    }
    fn f0(&self, p: &Point<'_, T>, f0: &mut [T]) {
        self.eval(p, f0, |q, pt, o| q.f0(pt, o));
    }
    fn f1(&self, p: &Point<'_, T>, f1: &mut [T]) {
        self.eval(p, f1, |q, pt, o| q.f1(pt, o));
    }
    fn g0(&self, p: &Point<'_, T>, g0: &mut [T]) {
        self.eval(p, g0, |q, pt, o| q.g0(pt, o));
    }
    fn g1(&self, p: &Point<'_, T>, g1: &mut [T]) {
        self.eval(p, g1, |q, pt, o| q.g1(pt, o));
    }
    fn g2(&self, p: &Point<'_, T>, g2: &mut [T]) {
        self.eval(p, g2, |q, pt, o| q.g2(pt, o));
    }
    fn g3(&self, p: &Point<'_, T>, g3: &mut [T]) {
        self.eval(p, g3, |q, pt, o| q.g3(pt, o));
    }
    fn cuda(&self) -> CudaPhysics {
        self.0.cuda()
    }
}

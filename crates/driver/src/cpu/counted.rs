//! An operator wrapper that counts its applications and shows the count as progress, so
//! that a long Krylov solve on the CPU says which iteration it is at.

use crate::progress::Progress;
use ferrofem_base::{LinearOperator, Real};
use std::sync::atomic::{AtomicUsize, Ordering};

/// An operator that counts its applications and shows the count as progress.
pub(super) struct Counted<'a, A> {
    pub(super) op: A,
    pub(super) progress: &'a Progress,
    pub(super) label: &'static str,
    pub(super) applies: AtomicUsize,
}

impl<T: Real, A: LinearOperator<T>> LinearOperator<T> for Counted<'_, A> {
    fn nrows(&self) -> usize {
        self.op.nrows()
    }
    fn ncols(&self) -> usize {
        self.op.ncols()
    }
    fn apply(&self, x: &[T], y: &mut [T]) {
        self.op.apply(x, y);
        let k = self.applies.fetch_add(1, Ordering::Relaxed);
        if !self.progress.is_hidden() {
            self.progress
                .stage(format!("{}: iteration {k}", self.label));
        }
    }
    fn diagonal(&self) -> Option<Vec<T>> {
        self.op.diagonal()
    }
}

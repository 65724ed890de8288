//! The element restriction: the map between a global L-vector and per-element E-vectors.

use rayon::prelude::*;
use std::ops::AddAssign;

/// Gather/scatter map from global nodes to element-local nodes (libCEED's
/// `CeedElemRestriction`), shared by every operator, assembly and GPU kernel.
///
/// Offsets are node indices; a vector field with `ncomp` components uses them for every
/// component (L-vector `l[node * ncomp + c]`, E-vector `e[(elem * ncomp + c) * size + i]`).
#[derive(Clone, Debug)]
pub struct ElemRestriction {
    num_elem: usize,
    elem_size: usize,
    ncomp: usize,
    num_nodes: usize,
    /// (shared between clones: a restriction is immutable)
    offsets: std::sync::Arc<Vec<u32>>,
}

/// The transpose of a restriction grouped by global node: for node `n`, the E-vector
/// positions `elem * elem_size + i` that refer to it are
/// `entries[node_offsets[n]..node_offsets[n + 1]]`. Scatter-add by node over this map is
/// race-free without colouring or atomics, and deterministic.
#[derive(Clone, Debug)]
pub struct TransposeMap {
    /// CSR offsets, `num_nodes + 1` entries.
    pub node_offsets: Vec<u32>,
    /// Element-local positions (`elem * elem_size + i`), grouped by node.
    pub entries: Vec<u32>,
}

impl ElemRestriction {
    /// Builds a restriction from element-to-node offsets (`num_elem * elem_size` entries,
    /// each `< num_nodes`).
    ///
    /// # Panics
    /// If the offsets are not a whole number of elements or an offset is out of range; the
    /// space constructs these, never user input.
    pub fn new(
        elem_size: usize,
        ncomp: usize,
        num_nodes: usize,
        offsets: Vec<u32>,
    ) -> ElemRestriction {
        assert!(elem_size > 0 && offsets.len() % elem_size == 0);
        assert!(offsets.par_iter().all(|&o| (o as usize) < num_nodes));
        ElemRestriction {
            num_elem: offsets.len() / elem_size,
            elem_size,
            ncomp,
            num_nodes,
            offsets: std::sync::Arc::new(offsets),
        }
    }

    /// Number of elements.
    pub fn num_elem(&self) -> usize {
        self.num_elem
    }
    /// Nodes per element.
    pub fn elem_size(&self) -> usize {
        self.elem_size
    }
    /// Components per node.
    pub fn ncomp(&self) -> usize {
        self.ncomp
    }
    /// Number of global nodes.
    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }
    /// Length of the L-vector (`num_nodes * ncomp`).
    pub fn lvec_len(&self) -> usize {
        self.num_nodes * self.ncomp
    }
    /// Length of the E-vector (`num_elem * ncomp * elem_size`).
    pub fn evec_len(&self) -> usize {
        self.num_elem * self.ncomp * self.elem_size
    }
    /// All offsets, `elem_size` per element.
    pub fn offsets(&self) -> &[u32] {
        &self.offsets
    }
    /// Global nodes of element `e`.
    pub fn elem(&self, e: usize) -> &[u32] {
        &self.offsets[e * self.elem_size..(e + 1) * self.elem_size]
    }
    /// The same map for a different number of components.
    pub fn with_ncomp(&self, ncomp: usize) -> ElemRestriction {
        ElemRestriction {
            ncomp,
            ..self.clone()
        }
    }

    /// Gathers element `e` of `l` into `out` (`ncomp * elem_size` values, component-major).
    #[inline]
    pub fn gather_elem<T: Copy>(&self, e: usize, l: &[T], out: &mut [T]) {
        let nc = self.ncomp;
        let s = self.elem_size;
        for (i, &n) in self.elem(e).iter().enumerate() {
            let n = n as usize * nc;
            for c in 0..nc {
                out[c * s + i] = l[n + c];
            }
        }
    }

    /// Adds element vector `ev` (component-major) of element `e` into `l`.
    #[inline]
    pub fn scatter_add_elem<T: Copy + AddAssign>(&self, e: usize, ev: &[T], l: &mut [T]) {
        let nc = self.ncomp;
        let s = self.elem_size;
        for (i, &n) in self.elem(e).iter().enumerate() {
            let n = n as usize * nc;
            for c in 0..nc {
                l[n + c] += ev[c * s + i];
            }
        }
    }

    /// E ← R L for all elements (parallel over elements).
    pub fn gather<T: Copy + Send + Sync>(&self, l: &[T], e: &mut [T]) {
        assert_eq!(l.len(), self.lvec_len());
        assert_eq!(e.len(), self.evec_len());
        let chunk = self.ncomp * self.elem_size;
        e.par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(el, out)| self.gather_elem(el, l, out));
    }

    /// L += Rᵀ E, sequentially in element order.
    pub fn scatter_add<T: Copy + AddAssign>(&self, e: &[T], l: &mut [T]) {
        assert_eq!(l.len(), self.lvec_len());
        assert_eq!(e.len(), self.evec_len());
        let chunk = self.ncomp * self.elem_size;
        for (el, ev) in e.chunks_exact(chunk).enumerate() {
            self.scatter_add_elem(el, ev, l);
        }
    }

    /// L += Rᵀ E in parallel over nodes through the transpose map (race-free).
    pub fn scatter_add_by_node<T: Copy + AddAssign + Send + Sync>(
        &self,
        t: &TransposeMap,
        e: &[T],
        l: &mut [T],
    ) {
        assert_eq!(l.len(), self.lvec_len());
        assert_eq!(e.len(), self.evec_len());
        let nc = self.ncomp;
        let s = self.elem_size;
        l.par_chunks_mut(nc).enumerate().for_each(|(n, ln)| {
            let (a, b) = (t.node_offsets[n] as usize, t.node_offsets[n + 1] as usize);
            for &pos in &t.entries[a..b] {
                let pos = pos as usize;
                let (el, i) = (pos / s, pos % s);
                for c in 0..nc {
                    ln[c] += e[(el * nc + c) * s + i];
                }
            }
        });
    }

    /// The transpose map, grouped by node (counting sort, linear time).
    pub fn transpose(&self) -> TransposeMap {
        let mut node_offsets = vec![0u32; self.num_nodes + 1];
        for &n in self.offsets.iter() {
            node_offsets[n as usize + 1] += 1;
        }
        for i in 0..self.num_nodes {
            node_offsets[i + 1] += node_offsets[i];
        }
        let mut fill = node_offsets.clone();
        let mut entries = vec![0u32; self.offsets.len()];
        for (pos, &n) in self.offsets.iter().enumerate() {
            let slot = &mut fill[n as usize];
            entries[*slot as usize] = pos as u32;
            *slot += 1;
        }
        TransposeMap {
            node_offsets,
            entries,
        }
    }

    /// Number of elements each node belongs to.
    pub fn multiplicity(&self) -> Vec<u32> {
        let mut m = vec![0u32; self.num_nodes];
        for &n in self.offsets.iter() {
            m[n as usize] += 1;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ElemRestriction {
        // two 1-D "elements" of 3 nodes sharing node 2
        ElemRestriction::new(3, 2, 5, vec![0, 1, 2, 2, 3, 4])
    }

    #[test]
    fn gather_then_scatter_counts_multiplicity() {
        let r = sample();
        let l: Vec<f64> = (0..r.lvec_len()).map(|i| i as f64 + 1.0).collect();
        let mut e = vec![0.0; r.evec_len()];
        r.gather(&l, &mut e);
        // element 1, component 1, local node 0 is global node 2, comp 1
        assert_eq!(e[(2 + 1) * 3], l[2 * 2 + 1]);
        let mut back = vec![0.0; r.lvec_len()];
        r.scatter_add(&e, &mut back);
        let m = r.multiplicity();
        for n in 0..5 {
            for c in 0..2 {
                assert_eq!(back[n * 2 + c], l[n * 2 + c] * m[n] as f64);
            }
        }
        let t = r.transpose();
        let mut back2 = vec![0.0; r.lvec_len()];
        r.scatter_add_by_node(&t, &e, &mut back2);
        assert_eq!(back, back2);
    }

    #[test]
    fn scatter_is_the_adjoint_of_gather() {
        // <R l, e> == <l, R^T e> for arbitrary vectors
        let r = sample();
        let l: Vec<f64> = (0..r.lvec_len())
            .map(|i| ((i * 7 % 5) as f64) - 1.5)
            .collect();
        let e: Vec<f64> = (0..r.evec_len())
            .map(|i| ((i * 3 % 7) as f64) * 0.25)
            .collect();
        let mut rl = vec![0.0; r.evec_len()];
        r.gather(&l, &mut rl);
        let mut rte = vec![0.0; r.lvec_len()];
        r.scatter_add(&e, &mut rte);
        let a: f64 = rl.iter().zip(&e).map(|(x, y)| x * y).sum();
        let b: f64 = l.iter().zip(&rte).map(|(x, y)| x * y).sum();
        assert!((a - b).abs() < 1e-12);
    }
}

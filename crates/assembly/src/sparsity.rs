//! The CSR sparsity pattern of a global matrix, from an element restriction.
//!
//! Two nodes are coupled when they share an element; with `ncomp` components every coupled
//! node pair gives a full `ncomp × ncomp` block (dof `node * ncomp + c`). The node graph is
//! built from the node → element transpose of the restriction (each node collects the nodes
//! of its elements, then sorts and deduplicates them), so the cost is linear in the mesh
//! size times the local neighbourhood size. Rows are filled in parallel; columns are sorted
//! and unique.
//!
//! With a [`DofMap`] the pattern is that of the reduced matrix `A_ff` of the free dofs,
//! in the reduced numbering, for assembly with Dirichlet dofs eliminated.

use crate::blocks::{offsets_of, par_eq, split_rows, try_alloc, ROW_BLOCK};
use crate::dirichlet::CONSTRAINED;
use crate::{AssemblyError, DofMap};
use ferrofem_base::{CsrMatrix, Real};
use ferrofem_space::{ElemRestriction, TransposeMap};
use rayon::prelude::*;

/// Nodes per parallel work item when building the node graph.
const NODE_BLOCK: usize = 1024;

/// The node adjacency of a restriction: node `n` is coupled with
/// `adj[ptr[n]..ptr[n + 1]]` (sorted, including `n` itself when it belongs to an element).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeGraph {
    /// Offsets, `num_nodes + 1` entries.
    pub ptr: Vec<usize>,
    /// Neighbour nodes, sorted per node.
    pub adj: Vec<u32>,
}

impl NodeGraph {
    /// The graph of nodes sharing an element, built through the transpose `t` of `r`.
    pub fn new(r: &ElemRestriction, t: &TransposeMap) -> NodeGraph {
        let s = r.elem_size();
        let nn = r.num_nodes();
        let blocks: Vec<(Vec<usize>, Vec<u32>)> = (0..nn.div_ceil(NODE_BLOCK))
            .into_par_iter()
            .map(|b| {
                let range = b * NODE_BLOCK..((b + 1) * NODE_BLOCK).min(nn);
                let mut lens = Vec::with_capacity(range.len());
                let mut adj = Vec::new();
                let mut scratch: Vec<u32> = Vec::new();
                for n in range {
                    scratch.clear();
                    let (a, z) = (t.node_offsets[n] as usize, t.node_offsets[n + 1] as usize);
                    for &pos in &t.entries[a..z] {
                        scratch.extend_from_slice(r.elem(pos as usize / s));
                    }
                    scratch.sort_unstable();
                    scratch.dedup();
                    lens.push(scratch.len());
                    adj.extend_from_slice(&scratch);
                }
                (lens, adj)
            })
            .collect();
        let lens: Vec<usize> = blocks.iter().flat_map(|(l, _)| l.iter().copied()).collect();
        let ptr = offsets_of(&lens);
        let mut adj = Vec::with_capacity(ptr[nn]);
        for (_, a) in &blocks {
            adj.extend_from_slice(a);
        }
        NodeGraph { ptr, adj }
    }

    /// Neighbours of node `n`, sorted.
    pub fn neighbours(&self, n: usize) -> &[u32] {
        &self.adj[self.ptr[n]..self.ptr[n + 1]]
    }
}

/// A CSR sparsity pattern: row pointers and sorted unique column indices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SparsityPattern {
    nrows: usize,
    ncols: usize,
    row_ptr: Vec<usize>,
    col_idx: Vec<u32>,
}

impl SparsityPattern {
    /// The pattern of the full matrix on all `num_nodes * ncomp` dofs of `r`.
    pub fn new(r: &ElemRestriction) -> Result<SparsityPattern, AssemblyError> {
        SparsityPattern::build(r, None)
    }

    /// The pattern of the reduced matrix on the free dofs of `map`, in reduced numbering.
    pub fn reduced(r: &ElemRestriction, map: &DofMap) -> Result<SparsityPattern, AssemblyError> {
        SparsityPattern::build(r, Some(map))
    }

    /// The full pattern (`map` is `None`) or the reduced one.
    pub fn build(
        r: &ElemRestriction,
        map: Option<&DofMap>,
    ) -> Result<SparsityPattern, AssemblyError> {
        let graph = NodeGraph::new(r, &r.transpose());
        SparsityPattern::from_graph(r, &graph, map)
    }

    /// The pattern from an already built node graph of `r`.
    pub fn from_graph(
        r: &ElemRestriction,
        graph: &NodeGraph,
        map: Option<&DofMap>,
    ) -> Result<SparsityPattern, AssemblyError> {
        let nc = r.ncomp();
        let ndofs = r.lvec_len();
        if ndofs >= u32::MAX as usize {
            return Err(AssemblyError::TooLarge {
                what: "dofs",
                count: ndofs,
            });
        }
        if let Some(m) = map {
            crate::dirichlet::check_len("dof map", ndofs, m.num_dofs())?;
        }
        let map = map.filter(|m| !m.is_unconstrained());
        let nrows = map.map_or(ndofs, |m| m.num_free());
        // free dofs per node (all of them without a map)
        let free_per_node: Vec<usize> = match map {
            None => Vec::new(),
            Some(m) => m
                .reduced_of()
                .chunks_exact(nc)
                .map(|c| c.iter().filter(|&&d| d != CONSTRAINED).count())
                .collect(),
        };
        let full_row = |row: usize| map.map_or(row, |m| m.free()[row] as usize);
        let lens: Vec<usize> = (0..nrows)
            .into_par_iter()
            .map(|row| {
                let nb = graph.neighbours(full_row(row) / nc);
                match map {
                    None => nb.len() * nc,
                    Some(_) => nb.iter().map(|&m| free_per_node[m as usize]).sum(),
                }
            })
            .collect();
        let row_ptr = offsets_of(&lens);
        let nnz = row_ptr[nrows];
        if nnz >= u32::MAX as usize {
            return Err(AssemblyError::TooLarge {
                what: "nonzeros",
                count: nnz,
            });
        }
        // the exact size is known now: checked against what is left before allocating
        ferrofem_base::check_fits(
            &format!("the sparsity pattern's column indices ({nnz} nonzeros)"),
            4 * nnz as u64,
        )?;
        let mut col_idx = try_alloc::<u32>(nnz, "the sparsity pattern's column indices")?;
        col_idx.resize(nnz, 0);
        split_rows(&mut col_idx, &row_ptr, ROW_BLOCK)
            .into_par_iter()
            .for_each(|(rows, out)| {
                let mut k = 0;
                for row in rows {
                    for &m in graph.neighbours(full_row(row) / nc) {
                        let base = m as usize * nc;
                        for c in 0..nc {
                            let col = match map {
                                None => (base + c) as u32,
                                Some(mp) => mp.reduced_of()[base + c],
                            };
                            if col != CONSTRAINED {
                                out[k] = col;
                                k += 1;
                            }
                        }
                    }
                }
            });
        Ok(SparsityPattern {
            nrows,
            ncols: nrows,
            row_ptr,
            col_idx,
        })
    }

    /// Rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Columns (equal to the rows: the patterns are square).
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.col_idx.len()
    }
    /// Row pointers, `nrows + 1` entries.
    pub fn row_ptr(&self) -> &[usize] {
        &self.row_ptr
    }
    /// Column indices, sorted and unique per row.
    pub fn col_idx(&self) -> &[u32] {
        &self.col_idx
    }
    /// Column indices of row `r`.
    pub fn row(&self, r: usize) -> &[u32] {
        &self.col_idx[self.row_ptr[r]..self.row_ptr[r + 1]]
    }
    /// Position of entry `(r, c)` in the CSR value array, if stored.
    pub fn position(&self, r: usize, c: u32) -> Option<usize> {
        self.row(r)
            .binary_search(&c)
            .ok()
            .map(|k| self.row_ptr[r] + k)
    }
    /// A matrix with this pattern and zero values.
    pub fn zeros<T: Real>(&self) -> CsrMatrix<T> {
        CsrMatrix::zeros_with_pattern(
            self.nrows,
            self.ncols,
            self.row_ptr.clone(),
            self.col_idx.clone(),
        )
    }
    /// True when `m` has exactly this pattern.
    pub fn matches<T: Real>(&self, m: &CsrMatrix<T>) -> bool {
        m.nrows() == self.nrows
            && m.ncols() == self.ncols
            && par_eq(m.row_ptr(), &self.row_ptr)
            && par_eq(m.col_idx(), &self.col_idx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three 1-D two-node elements on a line 0-1-2-3.
    fn line() -> ElemRestriction {
        ElemRestriction::new(2, 1, 4, vec![0, 1, 1, 2, 2, 3])
    }

    #[test]
    fn line_pattern_is_tridiagonal() {
        let p = SparsityPattern::new(&line()).unwrap();
        assert_eq!(p.row_ptr(), &[0, 2, 5, 8, 10]);
        assert_eq!(p.col_idx(), &[0, 1, 0, 1, 2, 1, 2, 3, 2, 3]);
        assert_eq!(p.position(2, 3), Some(7));
        assert_eq!(p.position(0, 3), None);
    }

    #[test]
    fn components_give_full_blocks() {
        let r = line().with_ncomp(2);
        let p = SparsityPattern::new(&r).unwrap();
        assert_eq!(p.nrows(), 8);
        // dof 3 = node 1, comp 1: nodes 0, 1, 2 × both components
        assert_eq!(p.row(3), &[0, 1, 2, 3, 4, 5]);
        assert_eq!(p.nnz(), 4 * 10);
    }

    #[test]
    fn reduced_pattern_drops_constrained_dofs() {
        let r = line().with_ncomp(2);
        // constrain node 0 entirely and component 0 of node 3
        let map = DofMap::new(8, &[0, 1, 6]).unwrap();
        let p = SparsityPattern::reduced(&r, &map).unwrap();
        assert_eq!(p.nrows(), 5);
        // reduced dof 0 = full dof 2 (node 1, comp 0): free dofs of nodes 0..=2 -> 2,3,4,5
        assert_eq!(p.row(0), &[0, 1, 2, 3]);
        // reduced dof 4 = full dof 7 (node 3, comp 1): nodes 2, 3 free dofs 4, 5, 7
        assert_eq!(p.row(4), &[2, 3, 4]);
        let full = SparsityPattern::new(&r).unwrap();
        for (rr, &f) in map.free().iter().enumerate() {
            let expect: Vec<u32> = full
                .row(f as usize)
                .iter()
                .map(|&c| map.reduced_of()[c as usize])
                .filter(|&c| c != CONSTRAINED)
                .collect();
            assert_eq!(p.row(rr), expect.as_slice());
        }
    }
}

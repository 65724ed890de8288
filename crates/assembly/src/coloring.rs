//! Element colourings for race-free parallel assembly by element: elements of one colour
//! share no node, so their entries of the global matrix (and right-hand side) are
//! disjoint and threads can add them without atomics (Cecka et al. 2011, §4.1).

use crate::AssemblyError;
use ferrofem_space::ElemRestriction;

/// Elements grouped by colour; within a colour no two elements share a node.
///
/// A mesh colouring (`ferrofem_mesh::Coloring`, which colours cells so that no two of one
/// colour share a vertex) converts with [`ElementColoring::new`]`(r, offsets, cells)`.
/// Every constructor checks the no-shared-node property against the restriction, because
/// parallel assembly relies on it for memory safety.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElementColoring {
    offsets: Vec<u32>,
    elements: Vec<u32>,
}

impl ElementColoring {
    /// The colouring with colour `k` made of `elements[offsets[k]..offsets[k + 1]]`,
    /// checked to be valid for `r`: every element exactly once, and no node shared by two
    /// elements of one colour.
    pub fn new(
        r: &ElemRestriction,
        offsets: Vec<u32>,
        elements: Vec<u32>,
    ) -> Result<ElementColoring, AssemblyError> {
        let c = ElementColoring { offsets, elements };
        c.validate(r)?;
        Ok(c)
    }

    /// A first-fit greedy colouring in element order through the node → element transpose
    /// (linear in the mesh size times the element neighbourhood). Colours are not
    /// balanced; a balanced mesh colouring is preferable for many threads.
    pub fn greedy(r: &ElemRestriction) -> ElementColoring {
        let ne = r.num_elem();
        let s = r.elem_size();
        let t = r.transpose();
        let mut color = vec![u32::MAX; ne];
        // stamp[k] == e + 1: colour k is taken by a neighbour of element e
        let mut stamp: Vec<usize> = Vec::new();
        let mut sizes: Vec<u32> = Vec::new();
        for e in 0..ne {
            for &n in r.elem(e) {
                let n = n as usize;
                let (a, z) = (t.node_offsets[n] as usize, t.node_offsets[n + 1] as usize);
                for &pos in &t.entries[a..z] {
                    let k = color[pos as usize / s];
                    if k != u32::MAX {
                        stamp[k as usize] = e + 1;
                    }
                }
            }
            let k = (0..stamp.len())
                .find(|&k| stamp[k] != e + 1)
                .unwrap_or_else(|| {
                    stamp.push(0);
                    sizes.push(0);
                    stamp.len() - 1
                });
            color[e] = k as u32;
            sizes[k] += 1;
        }
        let mut offsets = vec![0u32; sizes.len() + 1];
        for k in 0..sizes.len() {
            offsets[k + 1] = offsets[k] + sizes[k];
        }
        let mut fill = offsets.clone();
        let mut elements = vec![0u32; ne];
        for (e, &k) in color.iter().enumerate() {
            elements[fill[k as usize] as usize] = e as u32;
            fill[k as usize] += 1;
        }
        ElementColoring { offsets, elements }
    }

    /// Number of colours.
    pub fn num_colors(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
    /// The elements of colour `k`.
    pub fn color(&self, k: usize) -> &[u32] {
        &self.elements[self.offsets[k] as usize..self.offsets[k + 1] as usize]
    }

    /// Checks that this is a valid colouring of the elements of `r` (linear time).
    pub fn validate(&self, r: &ElemRestriction) -> Result<(), AssemblyError> {
        let bad = |m: String| Err(AssemblyError::InvalidColoring(m));
        let ne = r.num_elem();
        if self.offsets.first() != Some(&0)
            || self.offsets.last().map(|&o| o as usize) != Some(ne)
            || self.offsets.windows(2).any(|w| w[0] > w[1])
        {
            return bad(format!(
                "colour offsets must rise from 0 to the number of elements ({ne})"
            ));
        }
        if self.elements.len() != ne {
            return bad(format!(
                "{} elements listed, the restriction has {ne}",
                self.elements.len()
            ));
        }
        let mut seen = vec![false; ne];
        // owner[n] = (colour + 1, element) of the last element of the current colour at n
        let mut owner = vec![(0u32, 0u32); r.num_nodes()];
        for k in 0..self.num_colors() {
            for &e in self.color(k) {
                if e as usize >= ne || seen[e as usize] {
                    return bad(format!("element {e} is out of range or listed twice"));
                }
                seen[e as usize] = true;
                for &n in r.elem(e as usize) {
                    let o = &mut owner[n as usize];
                    if o.0 == k as u32 + 1 && o.1 != e {
                        return bad(format!(
                            "elements {} and {e} of colour {k} share node {n}",
                            o.1
                        ));
                    }
                    *o = (k as u32 + 1, e);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line() -> ElemRestriction {
        ElemRestriction::new(2, 1, 5, vec![0, 1, 1, 2, 2, 3, 3, 4])
    }

    #[test]
    fn greedy_alternates_on_a_line() {
        let r = line();
        let c = ElementColoring::greedy(&r);
        assert_eq!(c.num_colors(), 2);
        assert_eq!(c.color(0), &[0, 2]);
        assert_eq!(c.color(1), &[1, 3]);
        assert!(c.validate(&r).is_ok());
    }

    #[test]
    fn invalid_colourings_are_rejected() {
        let r = line();
        assert!(ElementColoring::new(&r, vec![0, 2, 4], vec![0, 1, 2, 3]).is_err());
        assert!(ElementColoring::new(&r, vec![0, 2, 4], vec![0, 2, 1, 1]).is_err());
        assert!(ElementColoring::new(&r, vec![0, 2, 3], vec![0, 2, 1, 3]).is_err());
        assert!(ElementColoring::new(&r, vec![0, 2, 4], vec![0, 2, 1, 3]).is_ok());
    }
}

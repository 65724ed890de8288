//! Continuous Lagrange spaces (`H¹`-conforming), scalar or vector-valued.

use crate::{numbering, ElemRestriction, SpaceError};
use ferrofem_base::CellType;
use ferrofem_fe::LagrangeElement;
use ferrofem_mesh::Mesh;
use rayon::prelude::*;
use std::sync::{Arc, OnceLock};

/// A continuous Lagrange space of order `p` with `ncomp` components on a mesh.
///
/// The space keeps its own data (element, restriction, node coordinates) but not the mesh;
/// methods that need the mesh take it and check that it is the one the space was built on.
/// The node coordinates are computed when first asked for, from a copy of the mesh's cells
/// and vertices (a GPU time loop, for one, never needs them).
#[derive(Clone, Debug)]
pub struct H1Space {
    element: LagrangeElement,
    ncomp: usize,
    restriction: ElemRestriction,
    /// (shared between clones)
    node_coords: Arc<NodeCoords>,
    mesh_cells: usize,
    mesh_vertices: usize,
    skeleton_nodes: Option<usize>,
    /// `[cell]`: the first node the cell numbers, the node count last (`None` once
    /// renumbered; shared between clones).
    first_nodes: Option<Arc<Vec<u32>>>,
}

impl H1Space {
    /// The order-`order` space with `ncomp` components on `mesh`.
    pub fn new(mesh: &Mesh, order: usize, ncomp: usize) -> Result<H1Space, SpaceError> {
        if ncomp == 0 {
            return Err(SpaceError::NoComponents);
        }
        let element = LagrangeElement::new(mesh.cell_type(), order)?;
        let num = numbering::number(mesh, &element)?;
        let nb = element.num_nodes();
        let restriction = ElemRestriction::new(nb, ncomp, num.num_nodes, num.elem_nodes);
        let first_nodes = Arc::new(num.cell_base);
        let node_coords = NodeCoords::Lazy {
            value: OnceLock::new(),
            source: CoordSource {
                cell_type: mesh.cell_type(),
                vertices: mesh.coords().to_vec(),
                cells: mesh.cells().to_vec(),
                first_nodes: first_nodes.clone(),
            },
        };
        Ok(H1Space {
            element,
            ncomp,
            restriction,
            node_coords: Arc::new(node_coords),
            mesh_cells: mesh.num_cells(),
            mesh_vertices: mesh.num_vertices(),
            skeleton_nodes: None,
            first_nodes: Some(first_nodes),
        })
    }

    /// The same space (numbering and element) with a different number of components.
    pub fn with_ncomp(&self, ncomp: usize) -> Result<H1Space, SpaceError> {
        if ncomp == 0 {
            return Err(SpaceError::NoComponents);
        }
        Ok(H1Space {
            ncomp,
            restriction: self.restriction.with_ncomp(ncomp),
            ..self.clone()
        })
    }

    /// The same space with its nodes renumbered *interior-last*: nodes on element
    /// boundaries (the skeleton: vertices, edges, faces) first, then the element-interior
    /// nodes, contiguous per element in element order and local node order. Interior node
    /// `l` (the `l`-th interior node in local order) of element `e` is then
    /// `num_skeleton + e * interior_per_element + l`, so kernels compute those indices
    /// instead of reading them, and only the skeleton part of an accumulated output needs
    /// zeroing.
    ///
    /// Skeleton nodes are numbered by *owner*, the lowest-numbered element that touches
    /// them, in element order and then local node order: the nodes an element owns are one
    /// contiguous range, which lets a GPU kernel zero them itself just before the first
    /// accumulation (and keeps an element's nodes close together in memory).
    pub fn interior_last(&self) -> H1Space {
        self.interior_last_with_map().0
    }

    /// [`H1Space::interior_last`] and the renumbering itself: `new_of[old]` is the new
    /// number of node `old`, so that callers holding vectors in this space's numbering can
    /// carry them into the renumbered space and back.
    pub fn interior_last_with_map(&self) -> (H1Space, Vec<u32>) {
        let el = &self.element;
        let d = el.dim();
        let interior_local: Vec<usize> = (0..el.num_nodes())
            .filter(|&i| el.node_entity(i).dim == d)
            .collect();
        let ni = interior_local.len();
        let r = &self.restriction;
        let nn = r.num_nodes();
        let mut is_interior = vec![false; nn];
        for e in 0..r.num_elem() {
            let en = r.elem(e);
            for &l in &interior_local {
                is_interior[en[l] as usize] = true;
            }
        }
        let nskel = is_interior.iter().filter(|&&b| !b).count();
        let mut new_of = vec![u32::MAX; nn];
        let mut next = 0u32;
        // skeleton nodes by owner: the first element (in element order) that touches them
        for e in 0..r.num_elem() {
            for &n in r.elem(e) {
                let n = n as usize;
                if !is_interior[n] && new_of[n] == u32::MAX {
                    new_of[n] = next;
                    next += 1;
                }
            }
        }
        // (a restriction may leave nodes untouched: keep them numbered, after the owned ones)
        for (n, &int) in is_interior.iter().enumerate() {
            if !int && new_of[n] == u32::MAX {
                new_of[n] = next;
                next += 1;
            }
        }
        for e in 0..r.num_elem() {
            let en = r.elem(e);
            for (k, &l) in interior_local.iter().enumerate() {
                new_of[en[l] as usize] = (nskel + e * ni + k) as u32;
            }
        }
        let space = self.renumbered_as(&new_of, Some(nskel));
        (space, new_of)
    }

    /// The same space with node `old` renumbered `new_of[old]`: the restriction's offsets
    /// and the node coordinates follow, so a vector `v` of this space is `w[new_of[n]] =
    /// v[n]` in the renumbered one. For numberings other crates compute (a GPU kernel's
    /// layout of the nodes); the result carries no layout of its own
    /// ([`H1Space::skeleton_nodes`] is `None`).
    ///
    /// # Panics
    /// If `new_of` is not a permutation of the nodes.
    pub fn renumbered(&self, new_of: &[u32]) -> H1Space {
        let n = self.num_nodes();
        let mut seen = vec![false; n];
        assert!(
            new_of.len() == n
                && new_of
                    .iter()
                    .all(|&m| (m as usize) < n && !std::mem::replace(&mut seen[m as usize], true)),
            "a renumbering must be a permutation of the {n} nodes"
        );
        self.renumbered_as(new_of, None)
    }

    /// This space with node `old` renumbered `new_of[old]` (a permutation; offsets and
    /// coordinates), and the numbering's skeleton count recorded.
    fn renumbered_as(&self, new_of: &[u32], skeleton_nodes: Option<usize>) -> H1Space {
        let d = self.dim();
        let r = &self.restriction;
        let offsets: Vec<u32> = r.offsets().iter().map(|&o| new_of[o as usize]).collect();
        let old_coords = self.node_coords();
        let mut coords = vec![0.0; old_coords.len()];
        for (old, &new) in new_of.iter().enumerate() {
            coords[new as usize * d..(new as usize + 1) * d]
                .copy_from_slice(&old_coords[old * d..(old + 1) * d]);
        }
        H1Space {
            element: self.element.clone(),
            ncomp: self.ncomp,
            restriction: ElemRestriction::new(r.elem_size(), self.ncomp, r.num_nodes(), offsets),
            node_coords: Arc::new(NodeCoords::Given(coords)),
            mesh_cells: self.mesh_cells,
            mesh_vertices: self.mesh_vertices,
            skeleton_nodes,
            first_nodes: None,
        }
    }

    /// For a space numbered by [`H1Space::interior_last`], the number of skeleton nodes.
    pub fn skeleton_nodes(&self) -> Option<usize> {
        self.skeleton_nodes
    }

    /// For a space numbered in the order its cells first reach the nodes (as
    /// [`H1Space::new`] numbers them), the first node each cell numbers, the node count
    /// last: cell `c` reaches nodes `first[c]..first[c + 1]` first, and every other cell
    /// that touches them comes after `c`. So a loop over the cells in chunks can sum into
    /// the nodes each chunk reaches first without a lock, in the order a sequential loop
    /// would. `None` once the nodes are renumbered.
    pub fn first_nodes(&self) -> Option<&[u32]> {
        self.first_nodes.as_deref().map(|v| v.as_slice())
    }

    /// The reference element.
    pub fn element(&self) -> &LagrangeElement {
        &self.element
    }
    /// Cell type.
    pub fn cell_type(&self) -> CellType {
        self.element.cell_type()
    }
    /// Polynomial order.
    pub fn order(&self) -> usize {
        self.element.order()
    }
    /// Spatial dimension.
    pub fn dim(&self) -> usize {
        self.element.dim()
    }
    /// Components per node.
    pub fn ncomp(&self) -> usize {
        self.ncomp
    }
    /// Number of global nodes.
    pub fn num_nodes(&self) -> usize {
        self.restriction.num_nodes()
    }
    /// Number of global dofs (`num_nodes * ncomp`).
    pub fn num_dofs(&self) -> usize {
        self.restriction.lvec_len()
    }
    /// Number of cells.
    pub fn num_cells(&self) -> usize {
        self.restriction.num_elem()
    }
    /// The element restriction.
    pub fn restriction(&self) -> &ElemRestriction {
        &self.restriction
    }
    /// Physical coordinates of all nodes, `dim` each.
    pub fn node_coords(&self) -> &[f64] {
        match self.node_coords.as_ref() {
            NodeCoords::Given(coords) => coords,
            NodeCoords::Lazy { value, source } => {
                ferrofem_base::lazy::get_or_compute(value, || {
                    compute_node_coords(source, &self.element, &self.restriction)
                })
                .as_slice()
            }
        }
    }
    /// Physical coordinates of node `n`.
    pub fn node_coord(&self, n: usize) -> &[f64] {
        let d = self.dim();
        &self.node_coords()[n * d..(n + 1) * d]
    }

    /// Nodal interpolation of `f(x, out)` (`out` has `ncomp` entries) into an L-vector.
    pub fn interpolate<F>(&self, f: F) -> Vec<f64>
    where
        F: Fn(&[f64], &mut [f64]) + Sync,
    {
        let nc = self.ncomp;
        let d = self.dim();
        let mut l = vec![0.0; self.num_dofs()];
        l.par_chunks_mut(nc)
            .zip(self.node_coords().par_chunks(d))
            .for_each(|(out, x)| f(x, out));
        l
    }

    /// Checks that `mesh` is (by its cell and vertex counts) the mesh the space was built on.
    pub(crate) fn check_mesh(&self, mesh: &Mesh) -> Result<(), SpaceError> {
        if mesh.num_cells() != self.mesh_cells || mesh.num_vertices() != self.mesh_vertices {
            return Err(SpaceError::MeshMismatch {
                expected_cells: self.mesh_cells,
                got_cells: mesh.num_cells(),
            });
        }
        Ok(())
    }

    fn facet_nodes_of(&self, facets: impl Iterator<Item = (u32, u8)>) -> Vec<u32> {
        let fnodes: Vec<Vec<usize>> = (0..self.cell_type().num_facets())
            .map(|f| self.element.facet_nodes(f))
            .collect();
        let mut mark = vec![false; self.num_nodes()];
        for (c, f) in facets {
            let en = self.restriction.elem(c as usize);
            for &i in &fnodes[f as usize] {
                mark[en[i] as usize] = true;
            }
        }
        (0..self.num_nodes() as u32)
            .filter(|&n| mark[n as usize])
            .collect()
    }

    /// Nodes on the boundary of the mesh (facets that belong to one cell), sorted.
    pub fn boundary_nodes(&self, mesh: &Mesh) -> Result<Vec<u32>, SpaceError> {
        self.check_mesh(mesh)?;
        Ok(self.facet_nodes_of(mesh.boundary_facets().into_iter()))
    }

    /// Nodes on the given facets, as (cell, local facet) of `mesh`, sorted. A facet out of
    /// range is an error.
    pub fn facet_nodes(&self, mesh: &Mesh, facets: &[(u32, u8)]) -> Result<Vec<u32>, SpaceError> {
        self.check_mesh(mesh)?;
        let nf = self.cell_type().num_facets();
        if let Some(&(cell, facet)) = facets
            .iter()
            .find(|&&(c, f)| c as usize >= self.num_cells() || f as usize >= nf)
        {
            return Err(SpaceError::FacetOutOfRange {
                cell,
                facet,
                cells: self.num_cells(),
                facets_per_cell: nf,
            });
        }
        Ok(self.facet_nodes_of(facets.iter().copied()))
    }

    /// Nodes on the facets carrying any of `tags` (physical groups of dimension `dim - 1`),
    /// sorted. An unknown tag is an error.
    pub fn tagged_nodes(&self, mesh: &Mesh, tags: &[i32]) -> Result<Vec<u32>, SpaceError> {
        self.check_mesh(mesh)?;
        let located = mesh.locate_tagged_facets()?;
        let mut present: Vec<i32> = located.iter().map(|&(_, _, t)| t).collect();
        present.sort_unstable();
        present.dedup();
        for &t in tags {
            if present.binary_search(&t).is_err() {
                return Err(SpaceError::UnknownTag { tag: t, present });
            }
        }
        Ok(self.facet_nodes_of(
            located
                .into_iter()
                .filter(|(_, _, t)| tags.contains(t))
                .map(|(c, f, _)| (c, f)),
        ))
    }

    /// Boundary nodes whose coordinates satisfy `pred`, sorted.
    pub fn boundary_nodes_where<P>(&self, mesh: &Mesh, pred: P) -> Result<Vec<u32>, SpaceError>
    where
        P: Fn(&[f64]) -> bool,
    {
        let all = self.boundary_nodes(mesh)?;
        Ok(all
            .into_iter()
            .filter(|&n| pred(self.node_coord(n as usize)))
            .collect())
    }

    /// Dofs of `nodes` for the given components (all components when `None`), sorted.
    pub fn node_dofs(&self, nodes: &[u32], components: Option<&[usize]>) -> Vec<u32> {
        let nc = self.ncomp as u32;
        let all: Vec<usize> = (0..self.ncomp).collect();
        let comps = components.unwrap_or(&all);
        let mut dofs: Vec<u32> = nodes
            .iter()
            .flat_map(|&n| comps.iter().map(move |&c| n * nc + c as u32))
            .collect();
        dofs.sort_unstable();
        dofs.dedup();
        dofs
    }
}

/// The node coordinates of a space (shared between clones).
#[derive(Debug)]
enum NodeCoords {
    /// Given when the space was made (a renumbered space).
    Given(Vec<f64>),
    /// Computed on first use from `source`.
    Lazy {
        value: OnceLock<Vec<f64>>,
        source: CoordSource,
    },
}

/// A copy of the mesh's cells and vertex coordinates, and the space's first-reached node
/// ranges ([`H1Space::first_nodes`]).
#[derive(Debug)]
struct CoordSource {
    cell_type: CellType,
    vertices: Vec<f64>,
    cells: Vec<u32>,
    first_nodes: Arc<Vec<u32>>,
}

/// Physical coordinates of every node through each cell's affine/multilinear map.
fn compute_node_coords(mesh: &CoordSource, el: &LagrangeElement, r: &ElemRestriction) -> Vec<f64> {
    let cell_base = mesh.first_nodes.as_slice();
    let d = mesh.cell_type.dim();
    let nv = mesh.cell_type.num_vertices();
    let geo = LagrangeElement::new(mesh.cell_type, 1).expect("order 1 exists on every cell");
    let tab = geo
        .tabulate(el.nodes())
        .expect("element nodes have the element's dimension");
    let nvg = geo.num_nodes();
    let mut coords = vec![0.0; r.num_nodes() * d];
    // every node is computed by the cell that numbered it: the cells of a chunk own one
    // contiguous range of nodes
    const CHUNK: usize = 256;
    let ncells = mesh.cells.len() / nv;
    let mut ranges = Vec::with_capacity(ncells.div_ceil(CHUNK));
    let mut rest = coords.as_mut_slice();
    for c0 in (0..ncells).step_by(CHUNK) {
        let c1 = (c0 + CHUNK).min(ncells);
        let len = (cell_base[c1] - cell_base[c0]) as usize * d;
        let (head, tail) = rest.split_at_mut(len);
        ranges.push((c0, c1, head));
        rest = tail;
    }
    ranges.into_par_iter().for_each(|(c0, c1, out)| {
        let first = cell_base[c0];
        let mut xv = vec![[0.0; 3]; nvg];
        for c in c0..c1 {
            let cell = &mesh.cells[c * nv..(c + 1) * nv];
            for (v, x) in xv.iter_mut().enumerate() {
                let at = cell[v] as usize * d;
                x[..d].copy_from_slice(&mesh.vertices[at..at + d]);
            }
            for (i, &n) in r.elem(c).iter().enumerate() {
                if n < cell_base[c] || n >= cell_base[c + 1] {
                    continue;
                }
                let at = (n - first) as usize * d;
                let phi = &tab.values[i * nvg..(i + 1) * nvg];
                for (k, x) in out[at..at + d].iter_mut().enumerate() {
                    *x = phi.iter().zip(&xv).map(|(p, xv)| p * xv[k]).sum();
                }
            }
        }
    });
    coords
}

//! The part of a partitioned mesh that one rank holds: its cells, their vertices
//! renumbered locally, which ranks hold each of its vertices, and which of its facets lie
//! on the boundary of the whole mesh.

use crate::{CellPartition, DistError};
use ferrofem_mesh::{Mesh, TaggedFacets};

/// What every part needs to know of the global mesh besides its own cells: the parts that
/// hold each vertex and the facets on the boundary of the whole mesh. Computed once, on
/// the rank that holds the global mesh.
#[derive(Clone, Debug)]
pub struct Decomposition {
    partition: CellPartition,
    /// `holders[holder_offsets[v]..holder_offsets[v + 1]]`: the parts holding vertex `v`,
    /// increasing (empty for a vertex no cell uses).
    holder_offsets: Vec<u32>,
    holders: Vec<u32>,
    /// The mesh's boundary facets as (global cell, local facet).
    boundary_facets: Vec<(u32, u8)>,
}

impl Decomposition {
    /// The decomposition of `mesh` by `partition`. Fails where the partition does not
    /// match the mesh.
    pub fn new(mesh: &Mesh, partition: CellPartition) -> Result<Decomposition, DistError> {
        if partition.parts().len() != mesh.num_cells() {
            return Err(DistError::InvalidPartition(format!(
                "{} cells partitioned, the mesh has {}",
                partition.parts().len(),
                mesh.num_cells()
            )));
        }
        let nv = mesh.num_vertices();
        let per = mesh.cell_type().num_vertices();
        // (vertex, part) pairs, sorted and deduplicated, then counted into offsets
        let mut pairs: Vec<u64> = mesh
            .cells()
            .chunks_exact(per)
            .zip(partition.parts())
            .flat_map(|(cell, &p)| {
                cell.iter()
                    .map(move |&v| (u64::from(v) << 32) | u64::from(p))
            })
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        let mut holder_offsets = vec![0u32; nv + 1];
        for &pair in &pairs {
            holder_offsets[(pair >> 32) as usize + 1] += 1;
        }
        for v in 0..nv {
            holder_offsets[v + 1] += holder_offsets[v];
        }
        let holders = pairs.iter().map(|&pair| pair as u32).collect();
        Ok(Decomposition {
            partition,
            holder_offsets,
            holders,
            boundary_facets: mesh.boundary_facets(),
        })
    }

    /// The cell partition.
    pub fn partition(&self) -> &CellPartition {
        &self.partition
    }

    /// The parts holding global vertex `v`, increasing.
    pub fn holders(&self, v: usize) -> &[u32] {
        &self.holders[self.holder_offsets[v] as usize..self.holder_offsets[v + 1] as usize]
    }

    /// The owner of every vertex: the lowest part holding it (`u32::MAX` where no cell
    /// uses the vertex).
    pub fn vertex_owners(&self) -> Vec<u32> {
        (0..self.holder_offsets.len() - 1)
            .map(|v| self.holders(v).first().copied().unwrap_or(u32::MAX))
            .collect()
    }

    fn num_vertices(&self) -> usize {
        self.holder_offsets.len() - 1
    }
}

/// What one rank holds of a partitioned mesh.
#[derive(Clone, Debug)]
pub struct LocalPart {
    /// The rank (part) this is.
    pub rank: usize,
    /// The number of parts.
    pub nparts: usize,
    /// The rank's cells with their vertices numbered locally: first the interface cells,
    /// then the others, each in global order; their tags, the physical names and the
    /// tagged facets that are facets of these cells.
    pub mesh: Mesh,
    /// The global index of each local cell.
    pub cell_global: Vec<u32>,
    /// Cells `0..interface_cells` have a vertex that another rank holds: every node shared
    /// with another rank lies in them, so that the others' work can overlap an exchange.
    pub interface_cells: usize,
    /// The global index of each local vertex (increasing).
    pub vertex_global: Vec<u32>,
    /// `vertex_holders[vertex_holder_offsets[v]..vertex_holder_offsets[v + 1]]`: the ranks
    /// holding local vertex `v`, increasing (this rank among them).
    pub vertex_holder_offsets: Vec<u32>,
    /// See [`LocalPart::vertex_holder_offsets`].
    pub vertex_holders: Vec<u32>,
    /// The local facets on the boundary of the whole mesh, as (local cell, local facet):
    /// the local boundary without the interfaces to other ranks.
    pub boundary_facets: Vec<(u32, u8)>,
}

impl LocalPart {
    /// Extracts part `rank` of `mesh` under the decomposition `decomposition` (built for
    /// this mesh).
    pub fn extract(
        mesh: &Mesh,
        decomposition: &Decomposition,
        rank: usize,
    ) -> Result<LocalPart, DistError> {
        let partition = decomposition.partition();
        if partition.parts().len() != mesh.num_cells()
            || decomposition.num_vertices() != mesh.num_vertices()
        {
            return Err(DistError::InvalidPartition(format!(
                "a decomposition of {} cells and {} vertices for a mesh of {} and {}",
                partition.parts().len(),
                decomposition.num_vertices(),
                mesh.num_cells(),
                mesh.num_vertices()
            )));
        }
        if rank >= partition.nparts() {
            return Err(DistError::RankOutOfRange {
                rank,
                nparts: partition.nparts(),
            });
        }
        let per = mesh.cell_type().num_vertices();
        let shared_vertex = |c: u32| {
            mesh.cell(c as usize)
                .iter()
                .any(|&v| decomposition.holders(v as usize).len() > 1)
        };
        let (mut cell_global, inner): (Vec<u32>, Vec<u32>) = (0..mesh.num_cells() as u32)
            .filter(|&c| partition.parts()[c as usize] as usize == rank)
            .partition(|&c| shared_vertex(c));
        let interface_cells = cell_global.len();
        cell_global.extend(inner);
        let mut local_of = vec![u32::MAX; mesh.num_vertices()];
        for &c in &cell_global {
            for &v in mesh.cell(c as usize) {
                local_of[v as usize] = 0;
            }
        }
        let mut vertex_global = Vec::new();
        for (v, l) in local_of.iter_mut().enumerate() {
            if *l == 0 {
                *l = vertex_global.len() as u32;
                vertex_global.push(v as u32);
            }
        }
        let coords: Vec<f64> = vertex_global
            .iter()
            .flat_map(|&v| mesh.vertex(v as usize).iter().copied())
            .collect();
        let mut cells = Vec::with_capacity(cell_global.len() * per);
        for &c in &cell_global {
            cells.extend(mesh.cell(c as usize).iter().map(|&v| local_of[v as usize]));
        }
        let tags: Vec<i32> = if mesh.cell_tags().is_empty() {
            Vec::new()
        } else {
            cell_global
                .iter()
                .map(|&c| mesh.cell_tags()[c as usize])
                .collect()
        };
        let mut local =
            Mesh::new(mesh.cell_type(), coords, cells)?.with_names(mesh.physical_names().to_vec());
        if !tags.is_empty() {
            local = local.with_cell_tags(tags);
        }
        if !mesh.facets().is_empty() {
            let facets = local_facets(mesh.facets(), &local_of, &local)?;
            local = local.with_facets(facets)?;
        }
        let mut vertex_holder_offsets = Vec::with_capacity(vertex_global.len() + 1);
        let mut vertex_holders = Vec::with_capacity(vertex_global.len());
        vertex_holder_offsets.push(0);
        for &v in &vertex_global {
            vertex_holders.extend_from_slice(decomposition.holders(v as usize));
            vertex_holder_offsets.push(vertex_holders.len() as u32);
        }
        // (global cell, local cell), sorted, to find the boundary facets' cells
        let mut local_cell_of: Vec<(u32, u32)> = cell_global
            .iter()
            .enumerate()
            .map(|(l, &g)| (g, l as u32))
            .collect();
        local_cell_of.sort_unstable();
        let mut boundary_facets: Vec<(u32, u8)> = decomposition
            .boundary_facets
            .iter()
            .filter_map(|&(c, f)| {
                local_cell_of
                    .binary_search_by_key(&c, |&(g, _)| g)
                    .ok()
                    .map(|k| (local_cell_of[k].1, f))
            })
            .collect();
        boundary_facets.sort_unstable();
        Ok(LocalPart {
            rank,
            nparts: partition.nparts(),
            mesh: local,
            cell_global,
            interface_cells,
            vertex_global,
            vertex_holder_offsets,
            vertex_holders,
            boundary_facets,
        })
    }

    /// Checks that this is the part of `comm`'s rank among as many parts as ranks.
    pub fn check_on<C: crate::Communicator>(&self, comm: &C) -> Result<(), DistError> {
        if comm.rank() != self.rank || comm.size() != self.nparts {
            return Err(DistError::PartNotOnItsRank {
                part: self.rank,
                nparts: self.nparts,
                rank: comm.rank(),
                size: comm.size(),
            });
        }
        Ok(())
    }

    /// The ranks holding local vertex `v`, increasing.
    pub fn holders(&self, v: usize) -> &[u32] {
        &self.vertex_holders
            [self.vertex_holder_offsets[v] as usize..self.vertex_holder_offsets[v + 1] as usize]
    }

    /// The owner of local vertex `v`: the lowest rank holding it.
    pub fn vertex_owner(&self, v: usize) -> usize {
        self.holders(v)[0] as usize
    }

    /// Local vertices this rank owns.
    pub fn owned_vertices(&self) -> usize {
        (0..self.vertex_global.len())
            .filter(|&v| self.vertex_owner(v) == self.rank)
            .count()
    }

    /// The other ranks holding a vertex this rank holds, increasing: the ranks it
    /// exchanges interface values with.
    pub fn neighbours(&self) -> Vec<usize> {
        let mut n: Vec<usize> = self
            .vertex_holders
            .iter()
            .map(|&r| r as usize)
            .filter(|&r| r != self.rank)
            .collect();
        n.sort_unstable();
        n.dedup();
        n
    }
}

/// The tagged facets of the global mesh that are facets of the local cells, in local
/// vertex numbers.
fn local_facets(
    global: &TaggedFacets,
    local_of: &[u32],
    local: &Mesh,
) -> Result<TaggedFacets, DistError> {
    let mut out = TaggedFacets {
        vertices_per_facet: global.vertices_per_facet,
        vertices: Vec::new(),
        tags: Vec::new(),
    };
    let incidence = local.facet_incidence()?;
    let mut f_local = Vec::with_capacity(global.vertices_per_facet);
    for i in 0..global.len() {
        f_local.clear();
        f_local.extend(global.facet(i).iter().map(|&v| local_of[v as usize]));
        if f_local.iter().all(|&v| v != u32::MAX) && incidence.find(&f_local).is_some() {
            out.vertices.extend_from_slice(&f_local);
            out.tags.push(global.tags[i]);
        }
    }
    Ok(out)
}

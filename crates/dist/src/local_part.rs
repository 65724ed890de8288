//! The part of a partitioned mesh that one rank holds: its cells, their vertices
//! renumbered locally, and who owns each vertex.

use crate::{CellPartition, DistError};
use ferrofem_mesh::{Mesh, TaggedFacets};

/// The owner of every vertex of `mesh`: the lowest part among the cells that hold it
/// (`u32::MAX` for a vertex no cell uses). Fails where the partition does not match the
/// mesh.
pub fn vertex_owners(mesh: &Mesh, partition: &CellPartition) -> Result<Vec<u32>, DistError> {
    check_matches(mesh, partition)?;
    let per = mesh.cell_type().num_vertices();
    let mut owner = vec![u32::MAX; mesh.num_vertices()];
    for (cell, &p) in mesh.cells().chunks_exact(per).zip(partition.parts()) {
        for &v in cell {
            let o = &mut owner[v as usize];
            *o = (*o).min(p);
        }
    }
    Ok(owner)
}

fn check_matches(mesh: &Mesh, partition: &CellPartition) -> Result<(), DistError> {
    if partition.parts().len() != mesh.num_cells() {
        return Err(DistError::InvalidPartition(format!(
            "{} cells partitioned, the mesh has {}",
            partition.parts().len(),
            mesh.num_cells()
        )));
    }
    Ok(())
}

/// What one rank holds of a partitioned mesh.
#[derive(Clone, Debug)]
pub struct LocalPart {
    /// The rank (part) this is.
    pub rank: usize,
    /// The rank's cells with their vertices numbered locally, in global order; their
    /// tags, the physical names and the tagged facets that are facets of these cells.
    pub mesh: Mesh,
    /// The global index of each local cell.
    pub cell_global: Vec<u32>,
    /// The global index of each local vertex (increasing).
    pub vertex_global: Vec<u32>,
    /// The owning rank of each local vertex (the lowest part that holds it).
    pub vertex_owner: Vec<u32>,
}

impl LocalPart {
    /// Extracts part `rank` of `mesh` under `partition`, with `owners` from
    /// [`vertex_owners`].
    pub fn extract(
        mesh: &Mesh,
        partition: &CellPartition,
        owners: &[u32],
        rank: usize,
    ) -> Result<LocalPart, DistError> {
        check_matches(mesh, partition)?;
        if rank >= partition.nparts() {
            return Err(DistError::RankOutOfRange {
                rank,
                nparts: partition.nparts(),
            });
        }
        if owners.len() != mesh.num_vertices() {
            return Err(DistError::InvalidPartition(format!(
                "{} vertex owners for {} vertices",
                owners.len(),
                mesh.num_vertices()
            )));
        }
        let per = mesh.cell_type().num_vertices();
        let cell_global: Vec<u32> = (0..mesh.num_cells() as u32)
            .filter(|&c| partition.parts()[c as usize] as usize == rank)
            .collect();
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
        let dim = mesh.dim();
        let coords: Vec<f64> = vertex_global
            .iter()
            .flat_map(|&v| mesh.vertex(v as usize).iter().copied())
            .collect();
        let mut cells = Vec::with_capacity(cell_global.len() * per);
        for &c in &cell_global {
            cells.extend(mesh.cell(c as usize).iter().map(|&v| local_of[v as usize]));
        }
        debug_assert_eq!(coords.len(), vertex_global.len() * dim);
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
        let vertex_owner = vertex_global.iter().map(|&v| owners[v as usize]).collect();
        Ok(LocalPart {
            rank,
            mesh: local,
            cell_global,
            vertex_global,
            vertex_owner,
        })
    }

    /// Local vertices this rank owns.
    pub fn owned_vertices(&self) -> usize {
        self.vertex_owner
            .iter()
            .filter(|&&o| o as usize == self.rank)
            .count()
    }

    /// The other ranks that own a vertex this rank holds, in increasing order (those it
    /// receives interface values from; it sends its own to the ranks that hold its
    /// owned interface vertices).
    pub fn owning_neighbours(&self) -> Vec<usize> {
        let mut n: Vec<usize> = self
            .vertex_owner
            .iter()
            .map(|&o| o as usize)
            .filter(|&o| o != self.rank)
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

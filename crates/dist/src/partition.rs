//! A partition of a mesh's cells into parts, by METIS on the cells' facet graph.

use crate::DistError;
use ferrofem_mesh::{FacetIncidence, Mesh};
use std::sync::Mutex;

/// The part of every cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CellPartition {
    parts: Vec<u32>,
    nparts: usize,
}

impl CellPartition {
    /// A partition from the part of every cell, checking that every part in `0..nparts`
    /// has a cell and no cell names a part outside it.
    pub fn from_parts(parts: Vec<u32>, nparts: usize) -> Result<CellPartition, DistError> {
        if nparts == 0 {
            return Err(DistError::NoParts);
        }
        let mut sizes = vec![0usize; nparts];
        for (cell, &p) in parts.iter().enumerate() {
            match sizes.get_mut(p as usize) {
                Some(s) => *s += 1,
                None => {
                    return Err(DistError::InvalidPartition(format!(
                        "cell {cell} is in part {p}, outside 0..{nparts}"
                    )))
                }
            }
        }
        if let Some(part) = sizes.iter().position(|&s| s == 0) {
            return Err(DistError::EmptyPart { part, nparts });
        }
        Ok(CellPartition { parts, nparts })
    }

    /// The part of each cell.
    pub fn parts(&self) -> &[u32] {
        &self.parts
    }

    /// Number of parts.
    pub fn nparts(&self) -> usize {
        self.nparts
    }

    /// Cells per part.
    pub fn sizes(&self) -> Vec<usize> {
        let mut sizes = vec![0; self.nparts];
        for &p in &self.parts {
            sizes[p as usize] += 1;
        }
        sizes
    }

    /// The largest part over the mean part (1 for a perfect balance).
    pub fn imbalance(&self) -> f64 {
        let largest = self.sizes().into_iter().max().unwrap_or(0);
        largest as f64 * self.nparts as f64 / self.parts.len().max(1) as f64
    }

    /// Interior facets whose two cells lie in different parts: the interface the parts
    /// exchange across.
    pub fn cut_facets(&self, incidence: &FacetIncidence) -> usize {
        (0..incidence.num_facets())
            .filter(|&f| match incidence.sides(f) {
                (a, Some(b)) => self.parts[a.cell as usize] != self.parts[b.cell as usize],
                _ => false,
            })
            .count()
    }
}

/// METIS's random seed, fixed so that a mesh always gets the same partition (METIS's own
/// default draws from a generator whose state persists between calls).
const PARTITION_SEED: metis::Idx = 4321;

/// METIS draws from one process-wide random generator: calls from several threads at once
/// would interleave their draws, and a mesh would no longer always get the same partition.
static METIS_CALL: Mutex<()> = Mutex::new(());

/// Splits the cells of `mesh` into `nparts` parts of nearly equal size (METIS's default 3 %
/// tolerance) with few facets between parts: METIS's multilevel recursive bisection of the
/// graph whose vertices are the cells and whose edges join cells that share a facet
/// (5–13 % fewer facets cut than its k-way partition at 2–64 parts, docs/distribution.md).
/// Deterministic for a given mesh. Fails on zero parts, on more parts than cells and where
/// METIS leaves a part empty.
pub fn partition_cells(mesh: &Mesh, nparts: usize) -> Result<CellPartition, DistError> {
    let ncells = mesh.num_cells();
    if nparts == 0 {
        return Err(DistError::NoParts);
    }
    if nparts > ncells {
        return Err(DistError::MorePartsThanCells { nparts, ncells });
    }
    if nparts == 1 {
        return CellPartition::from_parts(vec![0; ncells], 1);
    }
    let incidence = mesh.facet_incidence()?;
    let (xadj, adjncy) = facet_graph(&incidence, ncells)?;
    let metis_parts = metis::Idx::try_from(nparts).map_err(|_| DistError::TooLarge {
        what: "parts",
        count: nparts,
    })?;
    let mut part = vec![0 as metis::Idx; ncells];
    let _serial = METIS_CALL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    metis::Graph::new(1, metis_parts, &xadj, &adjncy)
        .map_err(|e| DistError::Metis(e.to_string()))?
        .set_option(metis::option::Seed(PARTITION_SEED))
        .part_recursive(&mut part)
        .map_err(|e| DistError::Metis(e.to_string()))?;
    let parts = part
        .into_iter()
        .map(|p| u32::try_from(p).map_err(|_| DistError::Metis(format!("part {p} returned"))))
        .collect::<Result<Vec<u32>, DistError>>()?;
    CellPartition::from_parts(parts, nparts)
}

/// The cells' facet graph in METIS's CSR form (`xadj`, `adjncy`).
fn facet_graph(
    incidence: &FacetIncidence,
    ncells: usize,
) -> Result<(Vec<metis::Idx>, Vec<metis::Idx>), DistError> {
    let too_large = |what, count| DistError::TooLarge { what, count };
    metis::Idx::try_from(ncells).map_err(|_| too_large("cells", ncells))?;
    let interior: Vec<(u32, u32)> = (0..incidence.num_facets())
        .filter_map(|f| match incidence.sides(f) {
            (a, Some(b)) => Some((a.cell, b.cell)),
            _ => None,
        })
        .collect();
    metis::Idx::try_from(2 * interior.len())
        .map_err(|_| too_large("graph edges", 2 * interior.len()))?;
    let mut degree = vec![0usize; ncells + 1];
    for &(a, b) in &interior {
        degree[a as usize + 1] += 1;
        degree[b as usize + 1] += 1;
    }
    for c in 0..ncells {
        degree[c + 1] += degree[c];
    }
    let mut next = degree.clone();
    let mut adjncy = vec![0 as metis::Idx; 2 * interior.len()];
    for &(a, b) in &interior {
        adjncy[next[a as usize]] = b as metis::Idx;
        next[a as usize] += 1;
        adjncy[next[b as usize]] = a as metis::Idx;
        next[b as usize] += 1;
    }
    let xadj = degree.into_iter().map(|d| d as metis::Idx).collect();
    Ok((xadj, adjncy))
}

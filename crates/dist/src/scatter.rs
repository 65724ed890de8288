//! Handing the parts out: rank 0 holds the mesh it read, partitions it and sends every other
//! rank its [`LocalPart`], one rank after the other, so no other rank ever holds the global
//! mesh and rank 0 holds one encoded part at a time beside it.
//!
//! A part travels as two messages: integers (`u64` words: sizes, connectivity, tags, names,
//! global numbers, holders, boundary facets) and coordinates (`f64`). An empty message
//! tells a rank that rank 0 failed before its part was made.

use crate::{partition_cells, Communicator, Decomposition, DistError, LocalPart};
use ferrofem_base::CellType;
use ferrofem_mesh::{Mesh, PhysicalName, TaggedFacets};

/// Rank 0's error while partitioning, as the other ranks see it.
fn failed_on_root() -> DistError {
    DistError::Exchange("rank 0 could not make this rank's part (its error says why)".into())
}

/// Partitions `global` (read on rank 0; `None` elsewhere, where it is not read) into one
/// part per rank of `comm` and returns this rank's part. Collective over all ranks.
pub fn scatter_parts<C: Communicator>(
    comm: &C,
    global: Option<&Mesh>,
) -> Result<LocalPart, DistError> {
    if comm.rank() != 0 {
        let words = comm.exchange_vecs(&[0], &[Vec::<u64>::new()])?.remove(0);
        if words.is_empty() {
            return Err(failed_on_root());
        }
        let coords = comm.exchange_vecs(&[0], &[Vec::<f64>::new()])?.remove(0);
        return decode(&words, coords);
    }
    let size = comm.size();
    let made = global
        .ok_or_else(|| DistError::Exchange("rank 0 needs the mesh to hand out".into()))
        .and_then(|mesh| {
            let decomposition = Decomposition::new(mesh, partition_cells(mesh, size)?)?;
            Ok((mesh, decomposition))
        });
    let (mesh, decomposition) = match made {
        Ok(m) => m,
        Err(e) => {
            tell_failed(comm, 1)?;
            return Err(e);
        }
    };
    for r in 1..size {
        let part = match LocalPart::extract(mesh, &decomposition, r) {
            Ok(p) => p,
            Err(e) => {
                tell_failed(comm, r)?;
                return Err(e);
            }
        };
        let (words, coords) = encode(&part);
        drop(part);
        comm.exchange_vecs(&[r], &[words])?;
        comm.exchange_vecs(&[r], &[coords])?;
    }
    LocalPart::extract(mesh, &decomposition, 0)
}

/// Sends the empty message to ranks `first..`.
fn tell_failed<C: Communicator>(comm: &C, first: usize) -> Result<(), DistError> {
    for r in first..comm.size() {
        comm.exchange_vecs(&[r], &[Vec::<u64>::new()])?;
    }
    Ok(())
}

/// Appends length-prefixed arrays and single words.
struct Writer(Vec<u64>);

impl Writer {
    fn word(&mut self, w: u64) {
        self.0.push(w);
    }
    fn u32s(&mut self, v: &[u32]) {
        self.word(v.len() as u64);
        self.0.extend(v.iter().map(|&x| u64::from(x)));
    }
    fn i32s(&mut self, v: &[i32]) {
        self.word(v.len() as u64);
        self.0.extend(v.iter().map(|&x| u64::from(x as u32)));
    }
    fn bytes(&mut self, b: &[u8]) {
        self.word(b.len() as u64);
        self.0.extend(b.chunks(8).map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(w)
        }));
    }
}

/// Reads what [`Writer`] wrote, failing on a short or inconsistent message.
struct Reader<'a>(&'a [u64]);

fn malformed(what: &str) -> DistError {
    DistError::Exchange(format!("a received part is malformed ({what})"))
}

impl Reader<'_> {
    fn word(&mut self) -> Result<u64, DistError> {
        let (&w, rest) = self.0.split_first().ok_or_else(|| malformed("too short"))?;
        self.0 = rest;
        Ok(w)
    }
    fn take(&mut self, n: usize) -> Result<&[u64], DistError> {
        if n > self.0.len() {
            return Err(malformed("too short"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn len(&mut self) -> Result<usize, DistError> {
        usize::try_from(self.word()?).map_err(|_| malformed("a length"))
    }
    fn u32s(&mut self) -> Result<Vec<u32>, DistError> {
        let n = self.len()?;
        self.take(n)?
            .iter()
            .map(|&w| u32::try_from(w).map_err(|_| malformed("an index")))
            .collect()
    }
    fn i32s(&mut self) -> Result<Vec<i32>, DistError> {
        Ok(self.u32s()?.into_iter().map(|x| x as i32).collect())
    }
    fn string(&mut self) -> Result<String, DistError> {
        let n = self.len()?;
        let words = self.take(n.div_ceil(8))?;
        let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        bytes.truncate(n);
        String::from_utf8(bytes).map_err(|_| malformed("a name"))
    }
}

fn encode(part: &LocalPart) -> (Vec<u64>, Vec<f64>) {
    let mesh = &part.mesh;
    let mut w = Writer(Vec::new());
    w.word(part.rank as u64);
    w.word(part.nparts as u64);
    let code = CellType::ALL
        .iter()
        .position(|&c| c == mesh.cell_type())
        .expect("every cell type is listed");
    w.word(code as u64);
    w.u32s(mesh.cells());
    w.i32s(mesh.cell_tags());
    let facets = mesh.facets();
    w.word(facets.vertices_per_facet as u64);
    w.u32s(&facets.vertices);
    w.i32s(&facets.tags);
    w.word(mesh.physical_names().len() as u64);
    for name in mesh.physical_names() {
        w.word(name.dim as u64);
        w.word(u64::from(name.tag as u32));
        w.bytes(name.name.as_bytes());
    }
    w.u32s(&part.cell_global);
    w.word(part.interface_cells as u64);
    w.u32s(&part.vertex_global);
    w.u32s(&part.vertex_holder_offsets);
    w.u32s(&part.vertex_holders);
    let facets: Vec<u32> = part
        .boundary_facets
        .iter()
        .flat_map(|&(c, f)| [c, u32::from(f)])
        .collect();
    w.u32s(&facets);
    (w.0, mesh.coords().to_vec())
}

fn decode(words: &[u64], coords: Vec<f64>) -> Result<LocalPart, DistError> {
    let mut r = Reader(words);
    let rank = r.len()?;
    let nparts = r.len()?;
    let cell_type = *CellType::ALL
        .get(r.len()?)
        .ok_or_else(|| malformed("the cell type"))?;
    let cells = r.u32s()?;
    let cell_tags = r.i32s()?;
    let vertices_per_facet = r.len()?;
    let facets = TaggedFacets {
        vertices_per_facet,
        vertices: r.u32s()?,
        tags: r.i32s()?,
    };
    let nnames = r.len()?;
    let mut names = Vec::with_capacity(nnames.min(words.len()));
    for _ in 0..nnames {
        let dim = r.len()?;
        let tag = r.word()? as u32 as i32;
        names.push(PhysicalName {
            dim,
            tag,
            name: r.string()?,
        });
    }
    let mut mesh = Mesh::new(cell_type, coords, cells)?.with_names(names);
    if !cell_tags.is_empty() {
        if cell_tags.len() != mesh.num_cells() {
            return Err(malformed("one tag per cell"));
        }
        mesh = mesh.with_cell_tags(cell_tags);
    }
    if facets.vertices_per_facet != 0 {
        mesh = mesh.with_facets(facets)?;
    }
    let cell_global = r.u32s()?;
    let interface_cells = r.len()?;
    let vertex_global = r.u32s()?;
    let vertex_holder_offsets = r.u32s()?;
    let vertex_holders = r.u32s()?;
    let flat = r.u32s()?;
    if !r.0.is_empty()
        || cell_global.len() != mesh.num_cells()
        || interface_cells > cell_global.len()
        || vertex_global.len() != mesh.num_vertices()
        || vertex_holder_offsets.len() != vertex_global.len() + 1
        || vertex_holder_offsets.last().map(|&o| o as usize) != Some(vertex_holders.len())
        || flat.len() % 2 != 0
        || rank >= nparts
    {
        return Err(malformed("inconsistent sizes"));
    }
    let boundary_facets = flat
        .chunks_exact(2)
        .map(|p| u8::try_from(p[1]).map(|f| (p[0], f)))
        .collect::<Result<_, _>>()
        .map_err(|_| malformed("a facet"))?;
    Ok(LocalPart {
        rank,
        nparts,
        mesh,
        cell_global,
        interface_cells,
        vertex_global,
        vertex_holder_offsets,
        vertex_holders,
        boundary_facets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrofem_mesh::{generate_box, BoxSpec};

    fn same(a: &LocalPart, b: &LocalPart) {
        assert_eq!(a.rank, b.rank);
        assert_eq!(a.nparts, b.nparts);
        assert_eq!(a.mesh.cell_type(), b.mesh.cell_type());
        assert_eq!(a.mesh.coords(), b.mesh.coords());
        assert_eq!(a.mesh.cells(), b.mesh.cells());
        assert_eq!(a.mesh.cell_tags(), b.mesh.cell_tags());
        assert_eq!(a.mesh.facets(), b.mesh.facets());
        assert_eq!(a.mesh.physical_names(), b.mesh.physical_names());
        assert_eq!(a.cell_global, b.cell_global);
        assert_eq!(a.interface_cells, b.interface_cells);
        assert_eq!(a.vertex_global, b.vertex_global);
        assert_eq!(a.vertex_holder_offsets, b.vertex_holder_offsets);
        assert_eq!(a.vertex_holders, b.vertex_holders);
        assert_eq!(a.boundary_facets, b.boundary_facets);
    }

    #[test]
    fn parts_survive_their_message() {
        for spec in ["hex:5x4x3,perturb=0.2,seed=1", "tri:7x5", "quad:6x6"] {
            let mesh = generate_box(&BoxSpec::parse(spec).unwrap()).unwrap();
            let d = Decomposition::new(&mesh, partition_cells(&mesh, 3).unwrap()).unwrap();
            for r in 0..3 {
                let part = LocalPart::extract(&mesh, &d, r).unwrap();
                let (words, coords) = encode(&part);
                same(&part, &decode(&words, coords.clone()).unwrap());
                // every cut of the message is refused, not misread
                for cut in [0, 1, words.len() / 2, words.len() - 1] {
                    assert!(decode(&words[..cut], coords.clone()).is_err());
                }
                let mut longer = words.clone();
                longer.push(0);
                assert!(decode(&longer, coords).is_err());
            }
        }
    }

    #[test]
    fn one_rank_keeps_the_whole_mesh() {
        let mesh = generate_box(&BoxSpec::parse("quad:4x3").unwrap()).unwrap();
        let part = scatter_parts(&crate::SingleRank, Some(&mesh)).unwrap();
        assert_eq!(part.mesh.coords(), mesh.coords());
        assert_eq!(part.mesh.cells(), mesh.cells());
        assert!(scatter_parts(&crate::SingleRank, None).is_err());
    }
}

//! High-order output of Lagrange fields: every cell of a space of order `p` is written as
//! linear sub-cells spanning its node lattice, so that ParaView shows a field at all its
//! nodes (not just at the mesh vertices) with any filter that works on linear cells.
//!
//! The points of the file are the space's global nodes ([`H1Space::node_coords`]), so an
//! L-vector is written as it is, without duplicating shared nodes. Each mesh cell becomes
//! `p^d` sub-cells of its own type, all positively oriented and tiling the cell:
//! - quadrilaterals and hexahedra: the `p^d` boxes between neighbouring lattice nodes
//!   `(i, j, k)` (the element's lexicographic node order);
//! - triangles: the `p(p+1)/2` upward and `p(p-1)/2` downward triangles of the barycentric
//!   lattice;
//! - tetrahedra: the barycentric lattice splits into `C(p+2, 3)` upward and `C(p, 3)`
//!   downward tetrahedra and `C(p+1, 3)` octahedra; each octahedron is cut into 4
//!   tetrahedra around one of its diagonals, for `p^3` in all.
//!
//! The sub-division of a cell's facet depends only on the facet's node lattice, so the
//! sub-cells of neighbouring cells meet conformingly. For order 1 the output is the mesh
//! itself (one sub-cell per cell, same vertices in the same order), with the points
//! numbered as the space numbers its nodes.

use crate::{Encoding, Field, FieldData, IoError, VtuFile};
use ferrofem_base::CellType;
use ferrofem_mesh::Mesh;
use ferrofem_space::H1Space;
use std::path::Path;

/// Writes the fields of a Lagrange space as a `.vtu` of linear sub-cells over each cell's
/// node lattice (see the module documentation).
///
/// `point_fields` are `(name, L-vector)` pairs of `space` or of another space with the
/// same nodes (same mesh and order, any number of components): each must have a length
/// that is a multiple of `space.num_nodes()`, the quotient being its number of components
/// (node-major, `l[node * ncomp + c]`). `cell_fields` have one tuple per *mesh* cell and
/// are repeated for each of its sub-cells. The file also carries two `Int32` cell arrays:
/// `cell_id`, the parent mesh cell of each sub-cell, and `cell_tag`, its tag; user fields
/// with those names are rejected.
///
/// Returns [`IoError::InvalidInput`], before creating the file, when the space was not
/// built on a mesh like `mesh` (cell type and number of cells) or a field has the wrong
/// length.
pub fn write_space_vtu(
    path: impl AsRef<Path>,
    mesh: &Mesh,
    space: &H1Space,
    point_fields: &[(&str, &[f64])],
    cell_fields: &[Field<'_>],
    encoding: Encoding,
) -> Result<(), IoError> {
    write_lattice_vtu(
        path.as_ref(),
        mesh,
        space,
        point_fields,
        cell_fields,
        None,
        encoding,
    )
}

/// [`write_space_vtu`] for one rank's part of a distributed mesh, a piece of a `.pvtu`
/// ([`crate::write_space_pvtu`]): `cell_id` holds each cell's number in the whole mesh,
/// `cell_global` (one per cell of `mesh`).
pub fn write_space_vtu_piece(
    path: impl AsRef<Path>,
    mesh: &Mesh,
    space: &H1Space,
    point_fields: &[(&str, &[f64])],
    cell_global: &[u32],
    encoding: Encoding,
) -> Result<(), IoError> {
    write_lattice_vtu(
        path.as_ref(),
        mesh,
        space,
        point_fields,
        &[],
        Some(cell_global),
        encoding,
    )
}

fn write_lattice_vtu(
    path: &Path,
    mesh: &Mesh,
    space: &H1Space,
    point_fields: &[(&str, &[f64])],
    cell_fields: &[Field<'_>],
    cell_global: Option<&[u32]>,
    encoding: Encoding,
) -> Result<(), IoError> {
    let bad = |m: String| Err(IoError::invalid(path, m));
    if space.cell_type() != mesh.cell_type() || space.num_cells() != mesh.num_cells() {
        return bad(format!(
            "the space was built on {} {} cells, the mesh has {} {} cells",
            space.num_cells(),
            space.cell_type(),
            mesh.num_cells(),
            mesh.cell_type()
        ));
    }
    let ncells = mesh.num_cells();
    if let Some(global) = cell_global {
        if global.len() != ncells || global.iter().any(|&g| i32::try_from(g).is_err()) {
            return bad(format!(
                "{} global cell numbers for {ncells} cells, or one beyond the Int32 range",
                global.len()
            ));
        }
    }
    let Ok(ncells_i32) = i32::try_from(ncells) else {
        return bad(format!(
            "{ncells} cells exceed the Int32 range of 'cell_id'"
        ));
    };
    let nnodes = space.num_nodes();
    let mut points = Vec::with_capacity(point_fields.len());
    for &(name, values) in point_fields {
        let components = match values.len().checked_div(nnodes) {
            Some(c) if c > 0 && c * nnodes == values.len() => c,
            None if values.is_empty() => 1, // no nodes, no values
            _ => {
                return bad(format!(
                    "point field '{name}' has {} values, not a positive multiple of the \
                     space's {nnodes} nodes",
                    values.len()
                ))
            }
        };
        points.push(Field::f64(name, components, values));
    }
    for f in cell_fields {
        if ncells.checked_mul(f.components) != Some(f.data.len()) {
            return bad(format!(
                "cell field '{}' has {} values, expected {ncells} mesh cells x {} components",
                f.name,
                f.data.len(),
                f.components
            ));
        }
    }

    let local = local_subcells(space).map_err(|m| IoError::invalid(path, m))?;
    let ct = space.cell_type();
    let nv = ct.num_vertices();
    let per_cell = local.len() / nv;
    let r = space.restriction();
    let mut conn = Vec::with_capacity(ncells * local.len());
    for c in 0..ncells {
        let nodes = r.elem(c);
        conn.extend(local.iter().map(|&i| nodes[i as usize]));
    }
    let cell_id: Vec<i32> = (0..ncells_i32)
        .flat_map(|c| std::iter::repeat_n(c, per_cell))
        .collect();
    let tags = mesh.cell_tags();
    let cell_tag: Vec<i32> = cell_id.iter().map(|&c| tags[c as usize]).collect();
    let cell_id = match cell_global {
        None => cell_id,
        Some(global) => cell_id
            .iter()
            .map(|&c| i32::try_from(global[c as usize]).unwrap_or(i32::MAX))
            .collect(),
    };
    let expanded: Vec<ExpandedData> = cell_fields.iter().map(|f| expand(f, per_cell)).collect();

    let mut file = VtuFile::new(space.node_coords(), space.dim())
        .cells(ct, &conn)
        .cell_data_i32("cell_id", 1, &cell_id)
        .cell_data_i32("cell_tag", 1, &cell_tag);
    for f in points {
        file = file.point_field(f);
    }
    for (f, data) in cell_fields.iter().zip(&expanded) {
        file = file.cell_field(Field {
            name: f.name,
            components: f.components,
            data: data.borrow(),
        });
    }
    file.write(path, encoding)
}

/// A cell field with each cell's tuple repeated for its sub-cells.
enum ExpandedData {
    F64(Vec<f64>),
    I32(Vec<i32>),
}

impl ExpandedData {
    fn borrow(&self) -> FieldData<'_> {
        match self {
            ExpandedData::F64(v) => FieldData::F64(v),
            ExpandedData::I32(v) => FieldData::I32(v),
        }
    }
}

/// Repeats each tuple of `f` (length already checked) `n` times.
fn expand(f: &Field<'_>, n: usize) -> ExpandedData {
    fn rep<T: Copy>(v: &[T], k: usize, n: usize) -> Vec<T> {
        let mut out = Vec::with_capacity(v.len() * n);
        for t in v.chunks_exact(k) {
            for _ in 0..n {
                out.extend_from_slice(t);
            }
        }
        out
    }
    let k = f.components.max(1);
    match f.data {
        FieldData::F64(v) => ExpandedData::F64(rep(v, k, n)),
        FieldData::I32(v) => ExpandedData::I32(rep(v, k, n)),
    }
}

/// The sub-cells of the reference element of `space`: `p^d` cells of the space's cell
/// type, each as `num_vertices` local node indices in ferrofem vertex order, positively
/// oriented. Errors only if the element's lattice lacks a node (an internal
/// inconsistency, reported rather than panicking).
fn local_subcells(space: &H1Space) -> Result<Vec<u32>, String> {
    let el = space.element();
    let ct = space.cell_type();
    let d = ct.dim();
    let p = space.order();
    let n1 = p + 1;
    // local node index by lattice position (x, y, z) with key x + n1 y + n1^2 z, where
    // (x, y, z) is (i, j, k) on tensor cells and (a1, a2, a3) on simplices
    let mut index = vec![u32::MAX; n1.pow(d as u32)];
    let shift = usize::from(ct.is_simplex());
    for i in 0..el.num_nodes() {
        let l = el.lattice(i);
        let mut key = 0;
        for t in (0..d).rev() {
            let c = l[t + shift] as usize;
            if c > p {
                return Err(format!(
                    "lattice coordinate {c} of node {i} exceeds order {p}"
                ));
            }
            key = key * n1 + c;
        }
        index[key] = i as u32;
    }
    let node = |x: [usize; 3]| -> Result<u32, String> {
        let key = x[0] + n1 * (x[1] + n1 * x[2]);
        match index.get(key) {
            Some(&i) if i != u32::MAX => Ok(i),
            _ => Err(format!(
                "the order-{p} {ct} element has no node at lattice point {x:?}"
            )),
        }
    };
    let mut out = Vec::with_capacity(p.pow(d as u32) * ct.num_vertices());
    let nz = if d == 3 { p } else { 1 };
    match ct {
        CellType::Quadrilateral | CellType::Hexahedron => {
            for k in 0..nz {
                for j in 0..p {
                    for i in 0..p {
                        for v in 0..ct.num_vertices() {
                            let x = [i + (v & 1), j + ((v >> 1) & 1), k + (v >> 2)];
                            out.push(node(x)?);
                        }
                    }
                }
            }
        }
        CellType::Triangle => {
            for j in 0..p {
                for i in 0..p - j {
                    push_simplex(&mut out, &[[i, j, 0], [i + 1, j, 0], [i, j + 1, 0]], &node)?;
                    if i + j + 2 <= p {
                        let down = [[i + 1, j, 0], [i + 1, j + 1, 0], [i, j + 1, 0]];
                        push_simplex(&mut out, &down, &node)?;
                    }
                }
            }
        }
        CellType::Tetrahedron => {
            for k in 0..p {
                for j in 0..p - k {
                    for i in 0..p - k - j {
                        let s = i + j + k;
                        let o = |a: usize, b: usize, c: usize| [i + a, j + b, k + c];
                        let up = [o(0, 0, 0), o(1, 0, 0), o(0, 1, 0), o(0, 0, 1)];
                        push_simplex(&mut out, &up, &node)?;
                        if s + 2 <= p {
                            // octahedron: diagonal from (1,0,0) to (0,1,1), the other four
                            // vertices in cyclic order around it
                            let (a, b) = (o(1, 0, 0), o(0, 1, 1));
                            let ring = [o(0, 1, 0), o(1, 1, 0), o(1, 0, 1), o(0, 0, 1)];
                            for m in 0..4 {
                                push_simplex(&mut out, &[a, b, ring[m], ring[(m + 1) % 4]], &node)?;
                            }
                        }
                        if s + 3 <= p {
                            let down = [o(1, 1, 0), o(1, 0, 1), o(0, 1, 1), o(1, 1, 1)];
                            push_simplex(&mut out, &down, &node)?;
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Appends a sub-simplex given by lattice points, swapping its last two vertices if
/// needed so that it is positively oriented in the reference cell (hence in every
/// positively oriented physical cell, whose map is affine).
fn push_simplex<F>(out: &mut Vec<u32>, x: &[[usize; 3]], node: &F) -> Result<(), String>
where
    F: Fn([usize; 3]) -> Result<u32, String>,
{
    let e = |v: usize, t: usize| x[v][t] as i64 - x[0][t] as i64;
    let det = if x.len() == 3 {
        e(1, 0) * e(2, 1) - e(1, 1) * e(2, 0)
    } else {
        e(1, 0) * (e(2, 1) * e(3, 2) - e(2, 2) * e(3, 1))
            - e(1, 1) * (e(2, 0) * e(3, 2) - e(2, 2) * e(3, 0))
            + e(1, 2) * (e(2, 0) * e(3, 1) - e(2, 1) * e(3, 0))
    };
    debug_assert_ne!(det, 0, "degenerate sub-simplex {x:?}");
    let start = out.len();
    for &v in x {
        out.push(node(v)?);
    }
    if det < 0 {
        let n = out.len();
        out.swap(n - 2, n - 1);
    }
    debug_assert_eq!(out.len() - start, x.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vtu::tests::{parse_vtu, Parsed};
    use crate::{vtk_node_order, write_mesh_vtu};
    use ferrofem_mesh::{generate_box, BoxSpec};

    fn perturbed_box(ct: CellType) -> Mesh {
        let n: &[usize] = match ct {
            CellType::Triangle => &[3, 2],
            CellType::Quadrilateral => &[2, 3],
            CellType::Tetrahedron => &[2, 1, 2],
            CellType::Hexahedron => &[2, 2, 1],
        };
        let mut spec = BoxSpec::unit(ct, n);
        spec.perturb = 0.25;
        spec.seed = 3;
        spec.max = (0..ct.dim()).map(|a| 1.0 + 0.5 * a as f64).collect();
        let m = generate_box(&spec).expect("box");
        let tags = (0..m.num_cells() as i32).map(|c| 100 - 7 * c).collect();
        m.with_cell_tags(tags)
    }

    fn max_order(ct: CellType) -> usize {
        match ct {
            CellType::Quadrilateral => 4,
            _ => 3,
        }
    }

    fn write_and_parse(
        mesh: &Mesh,
        space: &H1Space,
        point_fields: &[(&str, &[f64])],
        cell_fields: &[Field<'_>],
        enc: Encoding,
    ) -> Parsed {
        let path = std::env::temp_dir().join(format!(
            "ferrofem-io-space-{}-{}-{}-{enc:?}.vtu",
            std::process::id(),
            space.cell_type(),
            space.order()
        ));
        write_space_vtu(&path, mesh, space, point_fields, cell_fields, enc).expect("writes");
        let text = std::fs::read_to_string(&path).expect("reads");
        let _ = std::fs::remove_file(&path);
        parse_vtu(&text)
    }

    /// The sub-cells read back from a file, in ferrofem vertex order, and the points.
    fn subcells_of(p: &Parsed, ct: CellType, dim: usize) -> (Vec<f64>, Vec<u32>) {
        let pts: Vec<f64> = p
            .get("Points", "")
            .values
            .floats()
            .chunks_exact(3)
            .flat_map(|x| x[..dim].to_vec())
            .collect();
        let order = vtk_node_order(ct);
        let nv = ct.num_vertices();
        let mut cells = Vec::new();
        for vtk in p
            .get("Cells", "connectivity")
            .values
            .ints()
            .chunks_exact(nv)
        {
            let mut cell = vec![0u32; nv];
            for k in 0..nv {
                cell[order[k]] = vtk[k] as u32;
            }
            cells.extend(cell);
        }
        (pts, cells)
    }

    #[test]
    fn subcells_tile_every_cell_of_every_type_and_order() {
        for ct in CellType::ALL {
            let mesh = perturbed_box(ct);
            let d = ct.dim();
            let nc = mesh.num_cells();
            for order in 1..=max_order(ct) {
                let space = H1Space::new(&mesh, order, 1).expect("space");
                let vector = space.with_ncomp(d).expect("vector space");
                let u = space.interpolate(|x, out| out[0] = x.iter().sum::<f64>().sin());
                let w = vector.interpolate(|x, out| {
                    for (k, o) in out.iter_mut().enumerate() {
                        *o = x[k] * (k as f64 + 1.5);
                    }
                });
                let rank: Vec<i32> = (0..nc as i32).map(|c| c % 3).collect();
                let pair: Vec<f64> = (0..2 * nc).map(|i| i as f64 * 0.25).collect();
                let cf = [Field::i32("rank", 1, &rank), Field::f64("pair", 2, &pair)];
                let enc = if order == 2 {
                    Encoding::Ascii
                } else {
                    Encoding::Binary
                };
                let p = write_and_parse(&mesh, &space, &[("u", &u), ("w", &w)], &cf, enc);
                let per_cell = order.pow(d as u32);
                let label = format!("{ct} p={order}");
                assert_eq!(p.ncells, nc * per_cell, "{label}");
                assert_eq!(p.npoints, space.num_nodes(), "{label}");

                // points are the space's nodes
                let (pts, sub) = subcells_of(&p, ct, d);
                assert_eq!(pts, space.node_coords(), "{label}");
                let types = p.get("Cells", "types").values.ints();
                assert!(types
                    .iter()
                    .all(|&t| t == i64::from(crate::vtk_cell_type(ct))));

                // parents: each cell's sub-cells are contiguous and use its nodes only
                let ids = p.get("CellData", "cell_id");
                assert_eq!(ids.ty, "Int32");
                let ids = ids.values.ints();
                let tags = p.get("CellData", "cell_tag").values.ints();
                let ranks = p.get("CellData", "rank").values.ints();
                let pairs = p.get("CellData", "pair");
                assert_eq!(pairs.components, 3, "2-vectors are padded");
                let nv = ct.num_vertices();
                for (s, cell) in sub.chunks_exact(nv).enumerate() {
                    let parent = s / per_cell;
                    assert_eq!(ids[s], parent as i64, "{label}");
                    assert_eq!(tags[s], i64::from(mesh.cell_tags()[parent]));
                    assert_eq!(ranks[s], i64::from(rank[parent]));
                    let got = &pairs.values.floats()[3 * s..3 * s + 3];
                    assert_eq!(got, &[pair[2 * parent], pair[2 * parent + 1], 0.0]);
                    let nodes = space.restriction().elem(parent);
                    assert!(cell.iter().all(|v| nodes.contains(v)), "{label}");
                }

                // every point is used
                let mut used = vec![false; space.num_nodes()];
                sub.iter().for_each(|&v| used[v as usize] = true);
                assert!(used.iter().all(|&u| u), "{label}: unused points");

                // positive sub-cells whose measures add up to their parent's
                let submesh = Mesh::new(ct, pts, sub).expect("sub-cells form a mesh");
                let mut sums = vec![0.0; nc];
                for s in 0..submesh.num_cells() {
                    let m = submesh.cell_measure(s);
                    assert!(m > 0.0, "{label}: sub-cell {s} has measure {m}");
                    sums[s / per_cell] += m;
                }
                for c in 0..nc {
                    let want = mesh.cell_measure(c);
                    assert!((sums[c] - want).abs() < 1e-13 * want, "{label} cell {c}");
                }
                let total = submesh.total_measure();
                let want = mesh.total_measure();
                assert!(
                    (total - want).abs() < 1e-13 * want,
                    "{label}: {total} vs {want}"
                );

                // point fields round-trip exactly (2-vectors padded to 3)
                let got = p.get("PointData", "u");
                assert_eq!(got.components, 1);
                assert_eq!(got.values.floats(), &u[..], "{label}");
                let got = p.get("PointData", "w");
                let out = if d == 2 { 3 } else { d };
                assert_eq!(got.components, out);
                for (n, t) in got.values.floats().chunks_exact(out).enumerate() {
                    assert_eq!(&t[..d], &w[n * d..(n + 1) * d], "{label}");
                    assert!(t[d..].iter().all(|&z| z == 0.0));
                }
            }
        }
    }

    /// Reference-cell check up to the largest supported simplex orders: `p^d` positive
    /// sub-simplices whose lattice volumes add up to the cell's, on an unperturbed cell.
    #[test]
    fn reference_simplex_subdivision_has_p_to_the_d_cells_of_full_volume() {
        for ct in [CellType::Triangle, CellType::Tetrahedron] {
            let d = ct.dim();
            let coords: Vec<f64> = (0..ct.num_vertices())
                .flat_map(|v| ct.reference_vertex(v)[..d].to_vec())
                .collect();
            let cells = (0..ct.num_vertices() as u32).collect();
            let mesh = Mesh::new(ct, coords, cells).expect("reference cell");
            let max = if d == 2 { 6 } else { 4 };
            for order in 1..=max {
                let space = H1Space::new(&mesh, order, 1).expect("space");
                let local = local_subcells(&space).expect("subdivides");
                let nv = ct.num_vertices();
                assert_eq!(local.len() / nv, order.pow(d as u32), "{ct} p={order}");
                let sub = Mesh::new(ct, space.node_coords().to_vec(), local).expect("mesh");
                let mut total = 0.0;
                for s in 0..sub.num_cells() {
                    let m = sub.cell_measure(s);
                    let lattice_units = m * (order.pow(d as u32) as f64);
                    // each sub-simplex is a unit lattice simplex of the reference cell
                    assert!(
                        (lattice_units - ct.reference_measure()).abs() < 1e-12,
                        "{ct} p={order} sub-cell {s}: {m}"
                    );
                    total += m;
                }
                assert!((total - ct.reference_measure()).abs() < 1e-13);
            }
        }
    }

    #[test]
    fn order_one_reproduces_the_mesh_output() {
        for ct in CellType::ALL {
            let mesh = perturbed_box(ct);
            let space = H1Space::new(&mesh, 1, 1).expect("space");
            let path = std::env::temp_dir().join(format!(
                "ferrofem-io-space-mesh-{}-{ct}.vtu",
                std::process::id()
            ));
            write_mesh_vtu(&path, &mesh, &[], &[], Encoding::Binary).expect("writes");
            let plain = parse_vtu(&std::fs::read_to_string(&path).expect("reads"));
            let _ = std::fs::remove_file(&path);
            let ours = write_and_parse(&mesh, &space, &[], &[], Encoding::Binary);
            assert_eq!((ours.npoints, ours.ncells), (plain.npoints, plain.ncells));
            for key in [
                ("Cells", "types"),
                ("Cells", "offsets"),
                ("CellData", "cell_tag"),
            ] {
                let (a, b) = (ours.get(key.0, key.1), plain.get(key.0, key.1));
                assert_eq!(a.values, b.values, "{ct} {key:?}");
            }
            // same cells: identical vertex coordinates in identical (VTK) order
            let corners = |p: &Parsed| -> Vec<f64> {
                let pts = p.get("Points", "").values.floats();
                let conn = p.get("Cells", "connectivity").values.ints();
                conn.iter()
                    .flat_map(|&v| pts[3 * v as usize..3 * v as usize + 3].to_vec())
                    .collect()
            };
            assert_eq!(corners(&ours), corners(&plain), "{ct}");
        }
    }

    #[test]
    fn inconsistent_input_is_rejected_before_writing() {
        let mesh = perturbed_box(CellType::Triangle);
        let space = H1Space::new(&mesh, 2, 1).expect("space");
        let other = perturbed_box(CellType::Quadrilateral);
        let n = space.num_nodes();
        let short = vec![0.0; n - 1];
        let ok = vec![0.0; 2 * n];
        let cells = vec![0.0; mesh.num_cells() + 1];
        let ids = vec![0i32; mesh.num_cells()];
        let empty: &[f64] = &[];
        let path = std::env::temp_dir().join(format!(
            "ferrofem-io-space-never-{}.vtu",
            std::process::id()
        ));
        #[allow(clippy::type_complexity)]
        let cases: Vec<(&Mesh, Vec<(&str, &[f64])>, Vec<Field<'_>>, &str)> = vec![
            (&other, vec![], vec![], "built on"),
            (
                &mesh,
                vec![("u", short.as_slice())],
                vec![],
                "positive multiple",
            ),
            (&mesh, vec![("u", empty)], vec![], "positive multiple"),
            (
                &mesh,
                vec![("u", ok.as_slice())],
                vec![Field::f64("c", 1, &cells)],
                "expected",
            ),
            (
                &mesh,
                vec![],
                vec![Field::i32("cell_id", 1, &ids)],
                "used twice",
            ),
            (
                &mesh,
                vec![("u", &ok[..]), ("u", &ok[..])],
                vec![],
                "used twice",
            ),
        ];
        for (m, pf, cf, expected) in cases {
            let err = write_space_vtu(&path, m, &space, &pf, &cf, Encoding::Binary).unwrap_err();
            assert!(matches!(err, IoError::InvalidInput { .. }), "{err}");
            assert!(err.to_string().contains(expected), "{err} vs {expected}");
            assert!(!path.exists(), "nothing written on invalid input");
        }
    }
}

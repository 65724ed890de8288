//! Tests of the Gmsh reader: the committed meshes in tests/data/gmsh (made by
//! scripts/make_gmsh_test_meshes.py, with expectations reported by Gmsh itself), small
//! hand-written files in every format and byte order, and malformed inputs.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use ferrofem_mesh::{
    read_gmsh, read_gmsh_bytes, read_gmsh_bytes_with_info, read_gmsh_with_info, CellType,
    FileLocation, Mesh, MeshError,
};

const FORMATS: [&str; 4] = ["v22_ascii", "v22_binary", "v41_ascii", "v41_binary"];

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/gmsh")
}

fn file(mesh: &str, format: &str) -> PathBuf {
    data_dir().join(format!("{mesh}_{format}.msh"))
}

fn bytes_of(mesh: &str, format: &str) -> Vec<u8> {
    std::fs::read(file(mesh, format)).expect("test mesh exists")
}

// ---------------------------------------------------------------------------------------
// Expectations written by Gmsh.

#[derive(Debug, Default)]
struct Expected {
    name: String,
    cell_type: String,
    cells: usize,
    vertices: usize,
    measure: f64,
    cell_tags: BTreeMap<i32, usize>,
    facet_tags: BTreeMap<i32, usize>,
    planes: Vec<(i32, usize, f64)>,
    names: Vec<(usize, i32, String)>,
}

fn expected() -> Vec<Expected> {
    let text = std::fs::read_to_string(data_dir().join("expected.txt")).expect("expected.txt");
    let mut all = Vec::new();
    let mut cur = Expected::default();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let mut w = line.split_whitespace();
        let key = w.next().expect("key");
        let mut num = || w.next().expect("value").parse::<f64>().expect("number");
        match key {
            "mesh" => cur.name = line[5..].to_string(),
            "cell_type" => cur.cell_type = line[10..].to_string(),
            "cells" => cur.cells = num() as usize,
            "vertices" => cur.vertices = num() as usize,
            "measure" => cur.measure = num(),
            "cell_tag" => {
                let (t, n) = (num() as i32, num() as usize);
                cur.cell_tags.insert(t, n);
            }
            "facet_tag" => {
                let (t, n) = (num() as i32, num() as usize);
                cur.facet_tags.insert(t, n);
            }
            "plane" => {
                let (t, a, v) = (num() as i32, num() as usize, num());
                cur.planes.push((t, a, v));
            }
            "name" => {
                let mut p = line.splitn(4, ' ').skip(1);
                let dim = p.next().and_then(|s| s.parse().ok()).expect("dim");
                let tag = p.next().and_then(|s| s.parse().ok()).expect("tag");
                cur.names
                    .push((dim, tag, p.next().expect("name").to_string()));
            }
            "end" => all.push(std::mem::take(&mut cur)),
            other => panic!("unknown key {other} in expected.txt"),
        }
    }
    assert!(all.len() >= 5, "expected.txt lists the test meshes");
    all
}

// ---------------------------------------------------------------------------------------
// Geometry computed here, independently of the reader.

fn det3(a: [f64; 3], b: [f64; 3], c: [f64; 3]) -> f64 {
    a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0])
        + a[2] * (b[0] * c[1] - b[1] * c[0])
}

/// Signed measure of cell `c`: exact for simplices, a 2-point Gauss rule per direction of
/// the (bi/tri)linear map with lexicographic vertices for quadrilaterals and hexahedra.
fn cell_measure(m: &Mesh, c: usize) -> f64 {
    let d = m.dim();
    let x: Vec<[f64; 3]> = m
        .cell(c)
        .iter()
        .map(|&v| {
            let p = m.vertex(v as usize);
            [p[0], p[1], if d == 3 { p[2] } else { 0.0 }]
        })
        .collect();
    let sub = |a: [f64; 3], b: [f64; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    match m.cell_type() {
        CellType::Triangle => {
            let (a, b) = (sub(x[1], x[0]), sub(x[2], x[0]));
            (a[0] * b[1] - a[1] * b[0]) / 2.0
        }
        CellType::Tetrahedron => det3(sub(x[1], x[0]), sub(x[2], x[0]), sub(x[3], x[0])) / 6.0,
        CellType::Quadrilateral | CellType::Hexahedron => {
            let g = 1.0 / 3f64.sqrt();
            let n = x.len();
            let mut total = 0.0;
            for q in 0..(1 << d) {
                let xi: Vec<f64> = (0..d)
                    .map(|k| if (q >> k) & 1 == 1 { g } else { -g })
                    .collect();
                let mut j = [[0.0; 3]; 3];
                for (v, xv) in x.iter().enumerate().take(n) {
                    let s: Vec<f64> = (0..d)
                        .map(|k| if (v >> k) & 1 == 1 { 1.0 } else { -1.0 })
                        .collect();
                    for k in 0..d {
                        let mut dn = s[k] / 2.0;
                        for l in (0..d).filter(|&l| l != k) {
                            dn *= (1.0 + s[l] * xi[l]) / 2.0;
                        }
                        for (i, row) in j.iter_mut().enumerate().take(d) {
                            row[k] += xv[i] * dn;
                        }
                    }
                }
                total += if d == 2 {
                    j[0][0] * j[1][1] - j[0][1] * j[1][0]
                } else {
                    det3(j[0], j[1], j[2])
                };
            }
            total
        }
    }
}

fn total_measure(m: &Mesh) -> f64 {
    (0..m.num_cells()).map(|c| cell_measure(m, c).abs()).sum()
}

/// Number of coordinates in which two points differ.
fn differing_axes(a: &[f64], b: &[f64]) -> usize {
    a.iter()
        .zip(b)
        .filter(|(x, y)| (*x - *y).abs() > 1e-12)
        .count()
}

/// For axis-aligned cells and faces, lexicographic order means: the pairs that differ in
/// one bit are edges along one axis, the pair (0, 3) is a diagonal.
fn assert_lexicographic(m: &Mesh, verts: &[u32]) {
    let p = |k: usize| m.vertex(verts[k] as usize);
    let dim_of_face = verts.len().trailing_zeros() as usize;
    for a in 0..verts.len() {
        for bit in 0..dim_of_face {
            let b = a ^ (1 << bit);
            assert_eq!(
                differing_axes(p(a), p(b)),
                1,
                "{verts:?}: {a}-{b} should be an edge"
            );
        }
    }
    assert_eq!(
        differing_axes(p(0), p(3)),
        2,
        "{verts:?}: 0-3 should be a face diagonal"
    );
    if verts.len() == 8 {
        assert_eq!(
            differing_axes(p(0), p(7)),
            3,
            "{verts:?}: 0-7 should be the main diagonal"
        );
    }
}

/// The sorted vertex sets of all cell facets.
fn cell_facet_sets(m: &Mesh) -> HashSet<Vec<u32>> {
    let mut set = HashSet::new();
    for c in 0..m.num_cells() {
        let cell = m.cell(c);
        for f in m.cell_type().facets() {
            let mut v: Vec<u32> = f.iter().map(|&k| cell[k]).collect();
            v.sort_unstable();
            set.insert(v);
        }
    }
    set
}

fn gmsh_error(result: Result<Mesh, MeshError>) -> (FileLocation, String) {
    match result {
        Err(MeshError::Gmsh {
            location, message, ..
        }) => (location, message),
        Err(other) => panic!("expected MeshError::Gmsh, got {other}"),
        Ok(m) => panic!(
            "expected MeshError::Gmsh, got a mesh with {} cells",
            m.num_cells()
        ),
    }
}

fn unsupported(result: Result<Mesh, MeshError>) -> String {
    match result {
        Err(MeshError::Unsupported { message, .. }) => message,
        Err(other) => panic!("expected MeshError::Unsupported, got {other}"),
        Ok(m) => panic!(
            "expected MeshError::Unsupported, got a mesh with {} cells",
            m.num_cells()
        ),
    }
}

// ---------------------------------------------------------------------------------------
// The committed meshes.

#[test]
fn every_committed_file_matches_what_gmsh_reported() {
    for e in expected() {
        for format in FORMATS {
            let what = format!("{}_{format}", e.name);
            let m = read_gmsh(file(&e.name, format)).unwrap_or_else(|err| panic!("{what}: {err}"));
            assert_eq!(m.cell_type().name(), e.cell_type, "{what}");
            assert_eq!(m.num_cells(), e.cells, "{what}");
            assert_eq!(m.num_vertices(), e.vertices, "{what}");
            let rel = (total_measure(&m) - e.measure).abs() / e.measure;
            assert!(
                rel < 1e-12,
                "{what}: measure {} vs {}",
                total_measure(&m),
                e.measure
            );

            let mut cell_tags = BTreeMap::new();
            for &t in m.cell_tags() {
                *cell_tags.entry(t).or_insert(0) += 1;
            }
            assert_eq!(cell_tags, e.cell_tags, "{what}: cells per tag");

            let f = m.facets();
            let mut facet_tags = BTreeMap::new();
            for &t in &f.tags {
                *facet_tags.entry(t).or_insert(0) += 1;
            }
            assert_eq!(facet_tags, e.facet_tags, "{what}: facets per tag");

            // Tagged facets are facets of cells and lie in their group's plane.
            let faces = cell_facet_sets(&m);
            for i in 0..f.len() {
                let mut v = f.facet(i).to_vec();
                v.sort_unstable();
                assert!(faces.contains(&v), "{what}: facet {i} is no cell facet");
                for &(tag, axis, value) in e.planes.iter().filter(|p| p.0 == f.tags[i]) {
                    for &v in f.facet(i) {
                        let x = m.vertex(v as usize)[axis];
                        assert!(
                            (x - value).abs() < 1e-12,
                            "{what}: facet of {tag} off its plane"
                        );
                    }
                }
            }

            let mut names: Vec<_> = m
                .physical_names()
                .iter()
                .map(|n| (n.dim, n.tag, n.name.clone()))
                .collect();
            let mut want = e.names.clone();
            names.sort();
            want.sort();
            assert_eq!(names, want, "{what}: physical names");
        }
    }
}

#[test]
fn four_formats_of_a_mesh_read_identically() {
    for e in expected() {
        let meshes: Vec<Mesh> = FORMATS
            .iter()
            .map(|f| read_gmsh(file(&e.name, f)).expect("reads"))
            .collect();
        let first = &meshes[0];
        let (lo, hi) = first.bounding_box();
        let scale = lo.iter().zip(&hi).map(|(a, b)| b - a).fold(0.0, f64::max);
        for (m, format) in meshes.iter().zip(FORMATS).skip(1) {
            let what = format!("{} {format} vs v22_ascii", e.name);
            assert_eq!(m.cell_type(), first.cell_type(), "{what}");
            assert_eq!(m.cells(), first.cells(), "{what}: connectivity");
            assert_eq!(m.cell_tags(), first.cell_tags(), "{what}: cell tags");
            assert_eq!(m.facets(), first.facets(), "{what}: facets");
            assert_eq!(m.physical_names(), first.physical_names(), "{what}: names");
            assert_eq!(m.coords().len(), first.coords().len(), "{what}");
            // ASCII files print 16 significant digits, so allow the last bits to differ.
            for (a, b) in m.coords().iter().zip(first.coords()) {
                assert!(
                    (a - b).abs() <= 1e-14 * scale,
                    "{what}: coordinate {a} vs {b}"
                );
            }
        }
    }
}

#[test]
fn tensor_cells_and_facets_are_lexicographic() {
    for name in ["square_quad", "box_hex"] {
        for format in FORMATS {
            let m = read_gmsh(file(name, format)).expect("reads");
            assert!(m.cell_type().is_tensor());
            for c in 0..m.num_cells() {
                assert_lexicographic(&m, m.cell(c));
                assert!(
                    cell_measure(&m, c) > 0.0,
                    "{name} {format}: cell {c} is inverted"
                );
            }
            if m.cell_type() == CellType::Hexahedron {
                let f = m.facets();
                assert!(!f.is_empty());
                for i in 0..f.len() {
                    assert_lexicographic(&m, f.facet(i));
                }
            }
        }
    }
}

#[test]
fn info_describes_the_file() {
    let e = expected()
        .into_iter()
        .find(|e| e.name == "box_hex")
        .expect("box_hex");
    for format in FORMATS {
        let (m, info) = read_gmsh_with_info(file("box_hex", format)).expect("reads");
        assert_eq!(
            info.version,
            if format.starts_with("v22") {
                "2.2"
            } else {
                "4.1"
            }
        );
        assert_eq!(info.binary, format.ends_with("binary"));
        assert!(!info.big_endian);
        assert!(info.num_nodes_in_file >= m.num_vertices());
        let hexes = info
            .element_type_counts
            .iter()
            .find(|c| c.gmsh_type == 5)
            .expect("hexes");
        assert_eq!(hexes.count, e.cells);
        assert_eq!(hexes.name, "8-node hexahedron");
        let quads = info
            .element_type_counts
            .iter()
            .find(|c| c.gmsh_type == 3)
            .expect("quads");
        assert_eq!(quads.count, e.facet_tags.values().sum::<usize>());
        let total: usize = info.element_type_counts.iter().map(|c| c.count).sum();
        assert_eq!(total, info.num_elements_in_file);
    }
}

#[test]
fn an_element_in_two_groups_keeps_its_first_cell_tag_and_both_facet_tags() {
    // two_materials_2d: cells are in "left_material"/"right_material" and "everything";
    // the left side is in "boundary" and "left".
    for format in FORMATS {
        let m = read_gmsh(file("two_materials_2d", format)).expect("reads");
        let tag_of = |name| m.tag_of(2, name).expect("named");
        let (left, right) = (tag_of("left_material"), tag_of("right_material"));
        for c in 0..m.num_cells() {
            let cx: f64 = m
                .cell(c)
                .iter()
                .map(|&v| m.vertex(v as usize)[0])
                .sum::<f64>()
                / 3.0;
            assert_eq!(
                m.cell_tags()[c],
                if cx < 1.0 { left } else { right },
                "{format}"
            );
        }
        let f = m.facets();
        let on_left: HashSet<Vec<u32>> = (0..f.len())
            .filter(|&i| f.tags[i] == m.tag_of(1, "left").expect("left"))
            .map(|i| f.facet(i).to_vec())
            .collect();
        let boundary = m.tag_of(1, "boundary").expect("boundary");
        for v in &on_left {
            let n = (0..f.len())
                .filter(|&i| f.facet(i) == &v[..] && f.tags[i] == boundary)
                .count();
            assert_eq!(
                n, 1,
                "{format}: a left facet is tagged boundary exactly once"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Small hand-written files: two tetrahedra and a boundary triangle, in every layout.

/// Node tags deliberately sparse and out of order; node 99 is used by no cell.
const NODES: [(u64, [f64; 3]); 6] = [
    (40, [0.0, 0.0, 1.0]),
    (10, [0.0, 0.0, 0.0]),
    (99, [5.0, 5.0, 5.0]),
    (20, [1.0, 0.0, 0.0]),
    (3_000_000_000, [1.0, 1.0, 1.0]),
    (30, [0.0, 1.0, 0.0]),
];
/// (element tag, nodes, physical tag, entity tag).
const TETS: [(u64, [u64; 4], i32, i32); 2] = [
    (2, [10, 20, 30, 40], 7, 1),
    (3, [20, 30, 40, 3_000_000_000], 8, 2),
];
const TRI: (u64, [u64; 3], i32, i32) = (1, [10, 30, 20], 3, 1);
const NAMES: &str =
    "$PhysicalNames\n3\n2 3 \"bottom\"\n3 7 \"first\"\n3 8 \"second one\"\n$EndPhysicalNames\n";

fn tiny_v22_ascii() -> String {
    let mut s = String::from("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n");
    s += NAMES;
    s += &format!("$Nodes\n{}\n", NODES.len());
    for (t, x) in NODES {
        s += &format!("{t} {} {} {}\n", x[0], x[1], x[2]);
    }
    s += "$EndNodes\n$Elements\n3\n";
    s += &format!(
        "{} 2 2 {} {} {} {} {}\n",
        TRI.0, TRI.2, TRI.3, TRI.1[0], TRI.1[1], TRI.1[2]
    );
    for (t, n, p, e) in TETS {
        s += &format!("{t} 4 2 {p} {e} {} {} {} {}\n", n[0], n[1], n[2], n[3]);
    }
    s += "$EndElements\n";
    s
}

fn tiny_v41_ascii() -> String {
    let mut s = String::from("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n");
    s += NAMES;
    s += "$Entities\n0 0 1 2\n";
    s += &format!("{} 0 0 0 1 1 0 1 {} 0\n", TRI.3, TRI.2);
    for (_, _, p, e) in TETS {
        s += &format!("{e} 0 0 0 1 1 1 1 {p} 0\n");
    }
    s += "$EndEntities\n";
    s += &format!(
        "$Nodes\n1 {} 10 3000000000\n3 1 0 {}\n",
        NODES.len(),
        NODES.len()
    );
    for (t, _) in NODES {
        s += &format!("{t}\n");
    }
    for (_, x) in NODES {
        s += &format!("{} {} {}\n", x[0], x[1], x[2]);
    }
    s += "$EndNodes\n$Elements\n3 3 1 3\n";
    s += &format!(
        "2 {} 2 1\n{} {} {} {}\n",
        TRI.3, TRI.0, TRI.1[0], TRI.1[1], TRI.1[2]
    );
    for (t, n, _, e) in TETS {
        s += &format!("3 {e} 4 1\n{t} {} {} {} {}\n", n[0], n[1], n[2], n[3]);
    }
    s += "$EndElements\n";
    s
}

/// Binary output in a chosen byte order and `size_t` width.
struct Out {
    v: Vec<u8>,
    big: bool,
    size_t: usize,
}

impl Out {
    fn text(&mut self, s: &str) {
        self.v.extend_from_slice(s.as_bytes());
    }
    fn i32(&mut self, x: i32) {
        self.v.extend(if self.big {
            x.to_be_bytes()
        } else {
            x.to_le_bytes()
        });
    }
    fn f64(&mut self, x: f64) {
        self.v.extend(if self.big {
            x.to_be_bytes()
        } else {
            x.to_le_bytes()
        });
    }
    fn size(&mut self, x: u64) {
        match (self.size_t, self.big) {
            (4, false) => self.v.extend((x as u32).to_le_bytes()),
            (4, true) => self.v.extend((x as u32).to_be_bytes()),
            (_, false) => self.v.extend(x.to_le_bytes()),
            (_, true) => self.v.extend(x.to_be_bytes()),
        }
    }
}

fn tiny_v22_binary(big: bool) -> Vec<u8> {
    let mut o = Out {
        v: Vec::new(),
        big,
        size_t: 8,
    };
    o.text("$MeshFormat\n2.2 1 8\n");
    o.i32(1);
    o.text("\n$EndMeshFormat\n");
    o.text(NAMES);
    o.text(&format!("$Nodes\n{}\n", NODES.len()));
    for (t, x) in NODES {
        // Tags above 2^31 do not fit MSH 2 binary ints.
        o.i32(if t > i32::MAX as u64 { 77 } else { t as i32 });
        x.iter().for_each(|&c| o.f64(c));
    }
    o.text("\n$EndNodes\n$Elements\n3\n");
    for h in [2, 1, 2] {
        o.i32(h);
    }
    o.i32(TRI.0 as i32);
    o.i32(TRI.2);
    o.i32(TRI.3);
    TRI.1.iter().for_each(|&n| o.i32(n as i32));
    for h in [4, 2, 2] {
        o.i32(h);
    }
    for (t, n, p, e) in TETS {
        o.i32(t as i32);
        o.i32(p);
        o.i32(e);
        n.iter()
            .for_each(|&n| o.i32(if n > i32::MAX as u64 { 77 } else { n as i32 }));
    }
    o.text("\n$EndElements\n");
    o.v
}

fn tiny_v41_binary(big: bool, size_t: usize) -> Vec<u8> {
    let mut o = Out {
        v: Vec::new(),
        big,
        size_t,
    };
    o.text(&format!("$MeshFormat\n4.1 1 {size_t}\n"));
    o.i32(1);
    o.text("\n$EndMeshFormat\n");
    o.text(NAMES);
    o.text("$Entities\n");
    for c in [0, 0, 1, 2] {
        o.size(c);
    }
    for (tag, phys) in [
        (TRI.3, TRI.2),
        (TETS[0].3, TETS[0].2),
        (TETS[1].3, TETS[1].2),
    ] {
        o.i32(tag);
        for x in [0.0, 0.0, 0.0, 1.0, 1.0, 1.0] {
            o.f64(x);
        }
        o.size(1);
        o.i32(phys);
        o.size(0);
    }
    o.text("\n$EndEntities\n$Nodes\n");
    let big_tag = if size_t == 4 { 77 } else { 3_000_000_000 };
    let tag = |t: u64| if t == 3_000_000_000 { big_tag } else { t };
    for h in [1, NODES.len() as u64, 10, big_tag] {
        o.size(h);
    }
    for h in [3, 1, 0] {
        o.i32(h);
    }
    o.size(NODES.len() as u64);
    NODES.iter().for_each(|&(t, _)| o.size(tag(t)));
    NODES
        .iter()
        .for_each(|(_, x)| x.iter().for_each(|&c| o.f64(c)));
    o.text("\n$EndNodes\n$Elements\n");
    for h in [3, 3, 1, 3] {
        o.size(h);
    }
    for h in [2, TRI.3, 2] {
        o.i32(h);
    }
    o.size(1);
    o.size(TRI.0);
    TRI.1.iter().for_each(|&n| o.size(tag(n)));
    for (t, n, _, e) in TETS {
        for h in [3, e, 4] {
            o.i32(h);
        }
        o.size(1);
        o.size(t);
        n.iter().for_each(|&n| o.size(tag(n)));
    }
    o.text("\n$EndElements\n");
    o.v
}

fn assert_same_mesh(a: &Mesh, b: &Mesh, what: &str) {
    assert_eq!(a.cell_type(), b.cell_type(), "{what}");
    assert_eq!(a.coords(), b.coords(), "{what}");
    assert_eq!(a.cells(), b.cells(), "{what}");
    assert_eq!(a.cell_tags(), b.cell_tags(), "{what}");
    assert_eq!(a.facets(), b.facets(), "{what}");
    assert_eq!(a.physical_names(), b.physical_names(), "{what}");
}

#[test]
fn hand_written_file_drops_unused_nodes_and_orders_vertices_by_tag() {
    let m = read_gmsh_bytes(tiny_v22_ascii().as_bytes(), "tiny").expect("reads");
    assert_eq!(m.cell_type(), CellType::Tetrahedron);
    // Tags 10, 20, 30, 40, 3e9 used (99 is not): vertices 0..5 in that order.
    let want = [
        0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0,
    ];
    assert_eq!(m.coords(), &want);
    assert_eq!(m.cells(), &[0, 1, 2, 3, 1, 2, 3, 4]);
    assert_eq!(m.cell_tags(), &[7, 8]);
    assert_eq!(m.facets().tags, vec![3]);
    assert_eq!(m.facets().vertices, vec![0, 2, 1]);
    assert_eq!(m.tag_of(3, "second one"), Some(8));
    assert_eq!(m.tag_of(2, "bottom"), Some(3));
    let v41 = read_gmsh_bytes(tiny_v41_ascii().as_bytes(), "tiny41").expect("reads");
    assert_same_mesh(&m, &v41, "4.1 ASCII");
    for text in [tiny_v22_ascii(), tiny_v41_ascii()] {
        let crlf = text.replace('\n', "\r\n");
        let w = read_gmsh_bytes(crlf.as_bytes(), "crlf").expect("reads");
        assert_same_mesh(&m, &w, "CRLF line endings");
    }
    for big in [false, true] {
        let b = read_gmsh_bytes(&tiny_v41_binary(big, 8), "b41").expect("reads");
        assert_same_mesh(&m, &b, &format!("4.1 binary, big endian {big}"));
        let (_, info) = read_gmsh_bytes_with_info(&tiny_v41_binary(big, 8), "b41").expect("reads");
        assert_eq!(info.big_endian, big);
        assert!(info.binary);
    }
    // With 4-byte size_t and 4-byte MSH 2 ints the big tag becomes 77, which still sorts last.
    let small_tags = read_gmsh_bytes(&tiny_v41_binary(false, 4), "b41").expect("reads");
    for big in [false, true] {
        let b = read_gmsh_bytes(&tiny_v41_binary(big, 4), "b41_4").expect("reads");
        assert_same_mesh(
            &small_tags,
            &b,
            &format!("4.1 binary size_t 4, big endian {big}"),
        );
        let b = read_gmsh_bytes(&tiny_v22_binary(big), "b22").expect("reads");
        assert_same_mesh(&small_tags, &b, &format!("2.2 binary, big endian {big}"));
    }
    assert_eq!(small_tags.coords(), m.coords());
}

#[test]
fn quadrangles_and_hexahedra_are_converted_to_lexicographic_order() {
    let quad =
        "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n4\n1 0 0 0\n2 2 0 0\n3 2 1 0\n4 0 1 0\n\
                $EndNodes\n$Elements\n2\n1 1 2 5 1 2 3\n2 3 2 9 1 1 2 3 4\n$EndElements\n";
    let m = read_gmsh_bytes(quad.as_bytes(), "quad").expect("reads");
    assert_eq!(m.cell_type(), CellType::Quadrilateral);
    assert_eq!(m.cells(), &[0, 1, 3, 2]);
    assert_eq!(m.cell_tags(), &[9]);
    assert_eq!(m.coords(), &[0.0, 0.0, 2.0, 0.0, 2.0, 1.0, 0.0, 1.0]);
    assert_eq!(
        (m.facets().tags.clone(), m.facets().vertices.clone()),
        (vec![5], vec![1, 2])
    );
    assert!((cell_measure(&m, 0) - 2.0).abs() < 1e-14);

    let mut hex = String::from("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n8\n");
    let corners = [
        [0, 0, 0],
        [1, 0, 0],
        [1, 1, 0],
        [0, 1, 0],
        [0, 0, 1],
        [1, 0, 1],
        [1, 1, 1],
        [0, 1, 1],
    ];
    for (i, c) in corners.iter().enumerate() {
        hex += &format!("{} {} {} {}\n", i + 1, c[0], c[1], c[2]);
    }
    hex += "$EndNodes\n$Elements\n2\n1 3 2 4 1 5 6 7 8\n2 5 2 1 1 1 2 3 4 5 6 7 8\n$EndElements\n";
    let m = read_gmsh_bytes(hex.as_bytes(), "hex").expect("reads");
    assert_eq!(m.cells(), &[0, 1, 3, 2, 4, 5, 7, 6]);
    for (v, &g) in m.cell(0).iter().enumerate() {
        let r = CellType::Hexahedron.reference_vertex(v);
        let want: Vec<f64> = r.iter().map(|&x| (x + 1.0) / 2.0).collect();
        assert_eq!(m.vertex(g as usize), &want[..], "lexicographic vertex {v}");
    }
    assert_eq!(m.facets().vertices, vec![4, 5, 7, 6]);
    assert!((cell_measure(&m, 0) - 1.0).abs() < 1e-14);
}

#[test]
fn unsupported_contents_are_named() {
    let head = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n6\n1 0 0 0\n2 1 0 0\n3 0 1 0\n\
                4 0 0 1\n5 1 0 1\n6 0 1 1\n$EndNodes\n$Elements\n";
    let prism = format!("{head}1\n1 6 0 1 2 3 4 5 6\n$EndElements\n");
    let msg = unsupported(read_gmsh_bytes(prism.as_bytes(), "p"));
    assert!(msg.contains("type 6") && msg.contains("prism"), "{msg}");

    let second_order = format!("{head}1\n1 9 0 1 2 3 4 5 6\n$EndElements\n");
    let msg = unsupported(read_gmsh_bytes(second_order.as_bytes(), "t6"));
    assert!(msg.contains("type 9") && msg.contains("6-node"), "{msg}");

    let mixed = format!("{head}2\n1 4 0 1 2 3 4\n2 7 0 2 3 5 6 4\n$EndElements\n");
    let msg = unsupported(read_gmsh_bytes(mixed.as_bytes(), "mix"));
    assert!(
        msg.contains("type 4") && msg.contains("type 7") && msg.contains("pyramid"),
        "{msg}"
    );

    let tilted = format!("{head}1\n1 2 0 1 2 4\n$EndElements\n");
    let msg = unsupported(read_gmsh_bytes(tilted.as_bytes(), "tilted"));
    assert!(msg.contains("z = const"), "{msg}");

    let only_lines = format!("{head}1\n1 1 0 1 2\n$EndElements\n");
    assert!(unsupported(read_gmsh_bytes(only_lines.as_bytes(), "lines")).contains("no 2-D or 3-D"));

    // A triangle in the plane z = 1 is fine, and z is dropped.
    let raised = format!("{head}1\n1 2 0 4 5 6\n$EndElements\n");
    let m = read_gmsh_bytes(raised.as_bytes(), "raised").expect("planar");
    assert_eq!(m.coords(), &[0.0, 0.0, 1.0, 0.0, 0.0, 1.0]);
}

#[test]
fn unknown_sections_are_skipped() {
    let good = tiny_v22_ascii();
    let reference = read_gmsh_bytes(good.as_bytes(), "t").expect("reads");
    let extra = good.replace(
        "$Nodes\n",
        "$Comments\nnot a section: $EndNodes\n$EndCommentsX\n$EndComments\n$Nodes\n",
    ) + "$NodeData\n1\n\"u\"\n1\n0.0\n3\n0\n1\n2\n10 1.5\n20 2.5\n$EndNodeData\n$Periodic\n0\n$EndPeriodic\n";
    let (m, info) = read_gmsh_bytes_with_info(extra.as_bytes(), "t").expect("reads");
    assert_same_mesh(&reference, &m, "with extra sections");
    assert_eq!(
        info.skipped_sections,
        vec!["Comments", "NodeData", "Periodic"]
    );

    // Binary files: an unknown section with arbitrary bytes, found by its end marker.
    let mut bin = tiny_v41_binary(false, 8);
    bin.extend_from_slice(b"$Parametrizations\n");
    bin.extend((0u8..=255).cycle().take(1000).filter(|&b| b != b'$'));
    bin.extend_from_slice(b"\n$EndParametrizations\n");
    let b = read_gmsh_bytes(&bin, "b").expect("reads");
    assert_same_mesh(
        &read_gmsh_bytes(&tiny_v41_binary(false, 8), "b").expect("reads"),
        &b,
        "binary",
    );

    // A section without its end marker is an error at its start line.
    let open = good.replace("$Nodes\n", "$Comments\nhello\n$Nodes\n");
    let line = 1 + good[..good.find("$Nodes").expect("nodes")].lines().count();
    let (loc, msg) = gmsh_error(read_gmsh_bytes(open.as_bytes(), "t"));
    assert_eq!(loc, FileLocation::Line(line));
    assert!(msg.contains("$EndComments"), "{msg}");
}

// ---------------------------------------------------------------------------------------
// Malformed inputs.

/// The lines of a file.
fn lines_of(s: &str) -> Vec<String> {
    s.lines().map(str::to_string).collect()
}

/// 0-based index of the first line equal to `text`.
fn line_index(lines: &[String], text: &str) -> usize {
    lines
        .iter()
        .position(|l| l.trim() == text)
        .unwrap_or_else(|| panic!("no line {text}"))
}

fn join(lines: &[String]) -> Vec<u8> {
    (lines.join("\n") + "\n").into_bytes()
}

fn read_lines(lines: &[String]) -> Result<Mesh, MeshError> {
    read_gmsh_bytes(&join(lines), "mutated.msh")
}

#[test]
fn malformed_msh22_ascii_names_the_line() {
    let text = String::from_utf8(bytes_of("square_tri", "v22_ascii")).expect("text");
    let good = lines_of(&text);
    assert!(read_lines(&good).is_ok());
    let nodes = line_index(&good, "$Nodes");
    let n: usize = good[nodes + 1].parse().expect("count");
    let end_nodes = line_index(&good, "$EndNodes");
    assert_eq!(end_nodes, nodes + 2 + n);
    let elements = line_index(&good, "$Elements");
    let m: usize = good[elements + 1].parse().expect("count");
    let end_elements = line_index(&good, "$EndElements");
    // A triangle line (type 2) and a line element (type 1).
    let tri = (elements + 2..end_elements)
        .find(|&i| good[i].split_whitespace().nth(1) == Some("2"))
        .expect("a triangle");

    // More nodes announced than present: the error is at $EndNodes.
    let mut l = good.clone();
    l[nodes + 1] = (n + 1).to_string();
    let (loc, msg) = gmsh_error(read_lines(&l));
    assert_eq!(loc, FileLocation::Line(end_nodes + 1), "{msg}");
    assert!(msg.contains("fewer"), "{msg}");
    // Fewer: the error is at the node line where $EndNodes was expected.
    l[nodes + 1] = (n - 1).to_string();
    let (loc, msg) = gmsh_error(read_lines(&l));
    assert_eq!(loc, FileLocation::Line(end_nodes), "{msg}");
    assert!(msg.contains("$EndNodes"), "{msg}");
    // The same for elements.
    let mut l = good.clone();
    l[elements + 1] = (m + 1).to_string();
    assert_eq!(
        gmsh_error(read_lines(&l)).0,
        FileLocation::Line(end_elements + 1)
    );
    l[elements + 1] = (m - 1).to_string();
    assert_eq!(
        gmsh_error(read_lines(&l)).0,
        FileLocation::Line(end_elements)
    );

    // Element types: unknown 99, and 11 (10 nodes) on a 3-node line.
    for (ty, word) in [("99", "unknown Gmsh element type 99"), ("11", "type 11")] {
        let mut l = good.clone();
        let mut w: Vec<&str> = good[tri].split_whitespace().collect();
        w[1] = ty;
        l[tri] = w.join(" ");
        let (loc, msg) = gmsh_error(read_lines(&l));
        assert_eq!(loc, FileLocation::Line(tri + 1), "{msg}");
        assert!(msg.contains(word), "{msg}");
    }

    // A bad coordinate.
    let mut l = good.clone();
    l[nodes + 5] = format!(
        "{} 0.5 abc 0",
        good[nodes + 5].split_whitespace().next().expect("tag")
    );
    let (loc, msg) = gmsh_error(read_lines(&l));
    assert_eq!(loc, FileLocation::Line(nodes + 6));
    assert!(msg.contains("bad number 'abc'"), "{msg}");

    // $EndNodes missing: $Elements is found in its place.
    let mut l = good.clone();
    l.remove(end_nodes);
    let (loc, msg) = gmsh_error(read_lines(&l));
    assert_eq!(loc, FileLocation::Line(end_nodes + 1));
    assert!(
        msg.contains("expected $EndNodes") && msg.contains("$Elements"),
        "{msg}"
    );

    // $EndElements missing at the end of the file.
    let mut l = good.clone();
    l.truncate(end_elements);
    let (loc, msg) = gmsh_error(read_lines(&l));
    assert_eq!(loc, FileLocation::Line(end_elements + 1));
    assert!(msg.contains("$EndElements"), "{msg}");

    // A node that does not exist.
    let mut l = good.clone();
    let mut w: Vec<String> = good[tri].split_whitespace().map(str::to_string).collect();
    let last = w.len() - 1;
    w[last] = "987654".into();
    l[tri] = w.join(" ");
    let (loc, msg) = gmsh_error(read_lines(&l));
    assert_eq!(loc, FileLocation::Line(tri + 1));
    assert!(msg.contains("node 987654"), "{msg}");

    // A node tag defined twice.
    let mut l = good.clone();
    l[nodes + 3] = good[nodes + 2].clone();
    let (loc, msg) = gmsh_error(read_lines(&l));
    assert_eq!(loc, FileLocation::Line(nodes + 4));
    assert!(msg.contains("defined twice"), "{msg}");

    // Versions other than 2.2 and 4.1.
    for v in ["3.0 0 8", "1.0 0 8", "4.0 0 8", "2.2 2 8"] {
        let mut l = good.clone();
        l[1] = v.into();
        let (loc, msg) = gmsh_error(read_lines(&l));
        assert_eq!(loc, FileLocation::Line(2), "{v}");
        if !v.starts_with("2.2") {
            assert!(
                msg.contains("2.2") && msg.contains("4.1") && msg.contains(&v[..3]),
                "{msg}"
            );
        }
    }

    // A header claiming 10^15 nodes is an error, not an allocation failure.
    let mut l = good.clone();
    l[nodes + 1] = "1000000000000000".into();
    assert_eq!(
        gmsh_error(read_lines(&l)).0,
        FileLocation::Line(end_nodes + 1)
    );

    // Not a mesh file at all, and an empty one.
    assert_eq!(
        gmsh_error(read_gmsh_bytes(b"hello\n", "x")).0,
        FileLocation::Line(1)
    );
    assert_eq!(
        gmsh_error(read_gmsh_bytes(b"", "x")).0,
        FileLocation::Line(1)
    );
}

#[test]
fn truncated_ascii_files_fail_at_the_end() {
    for format in ["v22_ascii", "v41_ascii"] {
        let text = bytes_of("box_tet", format);
        let lines = text.iter().filter(|&&b| b == b'\n').count();
        // Cut after every line but the last, and in the middle of every 7th line.
        let ends: Vec<usize> = text
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'\n')
            .map(|(i, _)| i + 1)
            .collect();
        for (k, &cut) in ends.iter().enumerate().take(lines - 1) {
            let (loc, msg) = gmsh_error(read_gmsh_bytes(&text[..cut], "cut"));
            assert_eq!(
                loc,
                FileLocation::Line(k + 2),
                "{format}, cut after line {}: {msg}",
                k + 1
            );
        }
        // A cut inside line k + 1 fails there: either the partial line is malformed or the
        // file ends (without a newline) in that line.
        for (k, &cut) in ends.iter().enumerate().step_by(7) {
            let mid = cut - 2;
            let (loc, msg) = gmsh_error(read_gmsh_bytes(&text[..mid], "cut"));
            assert_eq!(
                loc,
                FileLocation::Line(k + 1),
                "{format}, cut in line {}: {msg}",
                k + 1
            );
        }
    }
}

#[test]
fn malformed_msh41_ascii_names_the_line() {
    let text = String::from_utf8(bytes_of("box_hex", "v41_ascii")).expect("text");
    let good = lines_of(&text);
    assert!(read_lines(&good).is_ok());
    let nodes = line_index(&good, "$Nodes");
    let elements = line_index(&good, "$Elements");
    let end_elements = line_index(&good, "$EndElements");
    // The first block of hexahedra: header "3 <entity> 5 <count>".
    let block = (elements + 2..end_elements)
        .find(|&i| {
            let w: Vec<&str> = good[i].split_whitespace().collect();
            w.len() == 4 && w[0] == "3" && w[2] == "5"
        })
        .expect("hex block");

    for (ty, at, word) in [
        ("99", block, "unknown Gmsh element type 99"),
        ("11", block + 1, "type 11"),
    ] {
        let mut l = good.clone();
        let mut w: Vec<&str> = good[block].split_whitespace().collect();
        w[2] = ty;
        l[block] = w.join(" ");
        // Type 11 is a 3-D type, so its block header is fine; its element lines are short.
        let (loc, msg) = gmsh_error(read_lines(&l));
        assert_eq!(loc, FileLocation::Line(at + 1), "{msg}");
        assert!(msg.contains(word), "{msg}");
    }

    // The total node count in the $Nodes header.
    let mut l = good.clone();
    let mut w: Vec<String> = good[nodes + 1]
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let n: usize = w[1].parse().expect("count");
    w[1] = (n + 1).to_string();
    l[nodes + 1] = w.join(" ");
    let (loc, msg) = gmsh_error(read_lines(&l));
    assert_eq!(loc, FileLocation::Line(nodes + 2), "{msg}");
    assert!(msg.contains("announces"), "{msg}");

    // A block count one too large: the first coordinate line is read as a tag.
    let first_block = nodes + 2;
    let mut w: Vec<String> = good[first_block]
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let count: usize = w[3].parse().expect("count");
    w[3] = (count + 1).to_string();
    let mut l = good.clone();
    l[first_block] = w.join(" ");
    let (loc, msg) = gmsh_error(read_lines(&l));
    assert_eq!(
        loc,
        FileLocation::Line(first_block + 1 + count + 1),
        "{msg}"
    );

    // A coordinate that is not a number.
    let coord = first_block + 1 + count;
    let mut l = good.clone();
    l[coord] = "0 abc 0".into();
    let (loc, msg) = gmsh_error(read_lines(&l));
    assert_eq!(loc, FileLocation::Line(coord + 1));
    assert!(msg.contains("bad number 'abc'"), "{msg}");

    // An element referring to a node that does not exist.
    let mut l = good.clone();
    let mut w: Vec<&str> = good[block + 1].split_whitespace().collect();
    w[3] = "424242";
    l[block + 1] = w.join(" ");
    let (loc, msg) = gmsh_error(read_lines(&l));
    assert_eq!(loc, FileLocation::Line(block + 2));
    assert!(msg.contains("node 424242"), "{msg}");

    // A block of an entity $Entities does not list.
    let mut l = good.clone();
    let mut w: Vec<&str> = good[block].split_whitespace().collect();
    w[1] = "777";
    l[block] = w.join(" ");
    let (loc, msg) = gmsh_error(read_lines(&l));
    assert_eq!(loc, FileLocation::Line(block + 1));
    assert!(msg.contains("777"), "{msg}");

    // $EndNodes missing.
    let mut l = good.clone();
    let end_nodes = line_index(&good, "$EndNodes");
    l.remove(end_nodes);
    let (loc, msg) = gmsh_error(read_lines(&l));
    assert_eq!(loc, FileLocation::Line(end_nodes + 1));
    assert!(msg.contains("$EndNodes"), "{msg}");
}

/// Offset just after the first occurrence of `marker` followed by a newline.
fn after(bytes: &[u8], marker: &str) -> usize {
    let m = format!("{marker}\n");
    bytes
        .windows(m.len())
        .position(|w| w == m.as_bytes())
        .map(|p| p + m.len())
        .unwrap_or_else(|| panic!("no {marker}"))
}

/// Offset just after the next newline at or after `from`.
fn next_line(bytes: &[u8], from: usize) -> usize {
    from + bytes[from..]
        .iter()
        .position(|&b| b == b'\n')
        .expect("newline")
        + 1
}

#[test]
fn malformed_msh22_binary_names_the_byte() {
    let good = bytes_of("square_tri", "v22_binary");
    assert!(read_gmsh_bytes(&good, "b").is_ok());
    let count_at = after(&good, "$Nodes");
    let data = next_line(&good, count_at);
    let n: usize = std::str::from_utf8(&good[count_at..data - 1])
        .expect("text")
        .parse()
        .expect("n");
    let end_nodes = data + 28 * n;
    assert_eq!(&good[end_nodes..end_nodes + 10], b"\n$EndNodes");
    let count_text = |c: usize| {
        let mut b = good[..count_at].to_vec();
        b.extend(c.to_string().bytes());
        b.extend(&good[data - 1..]);
        b
    };
    let shift = |c: usize| c.to_string().len() as isize - n.to_string().len() as isize;

    // Fewer nodes announced: $EndNodes is expected where the last node starts.
    let (loc, msg) = gmsh_error(read_gmsh_bytes(&count_text(n - 1), "b"));
    assert_eq!(
        loc,
        FileLocation::Byte((end_nodes as isize - 28 + shift(n - 1)) as usize),
        "{msg}"
    );
    // More nodes announced: the reader runs into the following text and fails there.
    let (loc, _) = gmsh_error(read_gmsh_bytes(&count_text(n + 1), "b"));
    let FileLocation::Byte(b) = loc else {
        panic!("binary errors give bytes")
    };
    let lo = (end_nodes as isize + shift(n + 1)) as usize;
    assert!((lo..=lo + 28).contains(&b), "{b} not in {lo}..={}", lo + 28);
    // 10^15 nodes announced.
    assert!(matches!(
        gmsh_error(read_gmsh_bytes(&count_text(1_000_000_000_000_000), "b")).0,
        FileLocation::Byte(_)
    ));

    // A NaN coordinate in node 3.
    let mut b = good.clone();
    b[data + 2 * 28 + 4..data + 2 * 28 + 12].copy_from_slice(&f64::NAN.to_le_bytes());
    let (loc, msg) = gmsh_error(read_gmsh_bytes(&b, "b"));
    assert_eq!(loc, FileLocation::Byte(data + 2 * 28 + 4));
    assert!(msg.contains("non-finite"), "{msg}");

    // Element header with an unknown type.
    let elements = next_line(&good, after(&good, "$Elements"));
    let mut b = good.clone();
    b[elements..elements + 4].copy_from_slice(&99i32.to_le_bytes());
    let (loc, msg) = gmsh_error(read_gmsh_bytes(&b, "b"));
    assert_eq!(loc, FileLocation::Byte(elements));
    assert!(msg.contains("99"), "{msg}");

    // The first node of the first element undefined (header 12 bytes, tag, 2 tags).
    let ntags = i32::from_le_bytes(good[elements + 8..elements + 12].try_into().expect("4"));
    let first_node = elements + 16 + 4 * ntags as usize;
    let mut b = good.clone();
    b[first_node..first_node + 4].copy_from_slice(&555_555i32.to_le_bytes());
    let (loc, msg) = gmsh_error(read_gmsh_bytes(&b, "b"));
    assert_eq!(loc, FileLocation::Byte(first_node));
    assert!(msg.contains("555555"), "{msg}");

    // $EndNodes removed.
    let mut b = good[..end_nodes + 1].to_vec();
    b.extend(&good[end_nodes + 11..]);
    let (loc, msg) = gmsh_error(read_gmsh_bytes(&b, "b"));
    assert_eq!(loc, FileLocation::Byte(end_nodes));
    assert!(msg.contains("$EndNodes"), "{msg}");

    // Truncated in the x coordinate of node 4.
    let cut = data + 3 * 28 + 4 + 5;
    let (loc, msg) = gmsh_error(read_gmsh_bytes(&good[..cut], "b"));
    assert_eq!(loc, FileLocation::Byte(data + 3 * 28 + 4), "{msg}");

    // A broken byte-order check.
    let mut b = good.clone();
    let check = after(&good, "2.2 1 8");
    b[check..check + 4].copy_from_slice(&[1, 0, 0, 1]);
    assert_eq!(
        gmsh_error(read_gmsh_bytes(&b, "b")).0,
        FileLocation::Byte(check)
    );
}

#[test]
fn malformed_msh41_binary_names_the_byte() {
    let good = bytes_of("box_hex", "v41_binary");
    assert!(read_gmsh_bytes(&good, "b").is_ok());
    let nodes = after(&good, "$Nodes");
    // Header: blocks, nodes, min, max (8-byte size_t). Announce one node too many.
    let mut b = good.clone();
    let n = u64::from_le_bytes(good[nodes + 8..nodes + 16].try_into().expect("8"));
    b[nodes + 8..nodes + 16].copy_from_slice(&(n + 1).to_le_bytes());
    let (loc, msg) = gmsh_error(read_gmsh_bytes(&b, "b"));
    assert_eq!(loc, FileLocation::Byte(nodes), "{msg}");
    // Announce 10^15 nodes in the first block.
    let mut b = good.clone();
    b[nodes + 8..nodes + 16].copy_from_slice(&1_000_000_000_000_000u64.to_le_bytes());
    b[nodes + 32 + 12..nodes + 32 + 20].copy_from_slice(&1_000_000_000_000_000u64.to_le_bytes());
    assert!(matches!(
        gmsh_error(read_gmsh_bytes(&b, "b")).0,
        FileLocation::Byte(_)
    ));

    // Element block with an unknown type: the block header is 4 size_t after $Elements.
    let elements = after(&good, "$Elements");
    let block = elements + 32;
    let mut b = good.clone();
    b[block + 8..block + 12].copy_from_slice(&99i32.to_le_bytes());
    let (loc, msg) = gmsh_error(read_gmsh_bytes(&b, "b"));
    assert_eq!(loc, FileLocation::Byte(block));
    assert!(msg.contains("99"), "{msg}");

    // The first node of the first element undefined (block header 20 bytes, then the tag).
    let first_node = block + 20 + 8;
    let mut b = good.clone();
    b[first_node..first_node + 8].copy_from_slice(&123_456_789u64.to_le_bytes());
    let (loc, msg) = gmsh_error(read_gmsh_bytes(&b, "b"));
    assert_eq!(loc, FileLocation::Byte(first_node));
    assert!(msg.contains("123456789"), "{msg}");

    // $EndElements removed.
    let end = good.len() - b"\n$EndElements\n".len();
    assert_eq!(&good[end..], b"\n$EndElements\n");
    let (loc, msg) = gmsh_error(read_gmsh_bytes(&good[..end + 1], "b"));
    assert_eq!(
        loc,
        FileLocation::Byte(good.len() - b"$EndElements\n".len()),
        "{msg}"
    );
    assert!(msg.contains("$EndElements"), "{msg}");
}

/// A small deterministic generator (xorshift64*), so the fuzz cases are reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn truncated_and_corrupted_files_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (name, format) in [
        ("square_tri", "v22_binary"),
        ("box_hex", "v41_binary"),
        ("two_materials_3d", "v41_binary"),
        ("square_quad", "v41_ascii"),
        ("two_materials_2d", "v22_ascii"),
    ] {
        let good = bytes_of(name, format);
        // Every truncation before the final end marker is a Gmsh error.
        let last = good.len() - b"$EndElements\n".len();
        for cut in (0..last).step_by(97) {
            let _ = gmsh_error(read_gmsh_bytes(&good[..cut], "cut"));
        }
        // Random byte flips: any result is fine, but no panic.
        let mut ok = 0;
        for _ in 0..400 {
            let mut b = good.clone();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            if read_gmsh_bytes(&b, "fuzz").is_ok() {
                ok += 1;
            }
        }
        // Flips in coordinates leave the file readable, so some results are meshes.
        assert!(ok > 0, "{name}_{format}: no corrupted file was readable");
    }
}

#[test]
fn mirrored_cells_are_reoriented_and_degenerate_cells_named() {
    let file = |tri2: &str| {
        format!(
            "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n5\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 1 1 0\n5 2 2 0\n$EndNodes\n$Elements\n2\n1 2 2 1 1 1 2 3\n2 2 2 1 1 {tri2}\n$EndElements\n"
        )
    };
    // second triangle clockwise: reoriented
    let (mesh, info) = read_gmsh_bytes_with_info(file("2 3 4").as_bytes(), "cw.msh").unwrap();
    assert_eq!(info.reoriented_cells, 1);
    mesh.validate().unwrap();
    // second triangle collinear (1,1), (2,2), (0,0): degenerate, named by index, Gmsh
    // element and the line of the file that holds it
    let err = read_gmsh_bytes(file("4 5 1").as_bytes(), "flat.msh").unwrap_err();
    let msg = err.to_string();
    match err {
        MeshError::InFile {
            path,
            location,
            elements,
            nodes,
            source,
        } => {
            assert_eq!(path, "flat.msh");
            assert_eq!(location, Some(FileLocation::Line(15)));
            assert_eq!(elements, [(1, 2)]);
            assert!(nodes.is_empty());
            assert!(
                matches!(*source, MeshError::DegenerateCell { cell: 1, .. }),
                "{source}"
            );
        }
        other => panic!("expected a degenerate cell in flat.msh, got {other}"),
    }
    assert!(
        msg.starts_with("flat.msh: line 15: cell 1 is degenerate"),
        "{msg}"
    );
    assert!(msg.ends_with("(cell 1 is Gmsh element 2)"), "{msg}");
}

// ---------------------------------------------------------------------------------------
// Folds: cells flipped over a neighbour.

/// The unit square as a 2 x 2 grid of squares, each cut into two triangles along the
/// diagonal from its lower left corner; node 5 is the middle vertex, placed at `middle`.
/// Node tag of grid point `(i, j)` is `3 j + i + 1`; element tags are 1..=8 in order.
/// `mirror(k)` lists triangle `k` clockwise instead of counter-clockwise.
fn square_grid(middle: [f64; 2], mirror: impl Fn(usize) -> bool) -> (Vec<[f64; 2]>, Vec<[u64; 3]>) {
    let mut nodes = Vec::new();
    for j in 0..3 {
        for i in 0..3 {
            nodes.push([i as f64 / 2.0, j as f64 / 2.0]);
        }
    }
    nodes[4] = middle;
    let tag = |i: u64, j: u64| 3 * j + i + 1;
    let mut tris = Vec::new();
    for j in 0..2 {
        for i in 0..2 {
            let (ll, lr, ur, ul) = (tag(i, j), tag(i + 1, j), tag(i + 1, j + 1), tag(i, j + 1));
            tris.push([ll, lr, ur]);
            tris.push([ll, ur, ul]);
        }
    }
    for (k, t) in tris.iter_mut().enumerate() {
        if mirror(k) {
            t.swap(1, 2);
        }
    }
    (nodes, tris)
}

fn grid_v22(nodes: &[[f64; 2]], tris: &[[u64; 3]]) -> String {
    let mut s = format!(
        "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n{}\n",
        nodes.len()
    );
    for (k, x) in nodes.iter().enumerate() {
        s += &format!("{} {} {} 0\n", k + 1, x[0], x[1]);
    }
    s += &format!("$EndNodes\n$Elements\n{}\n", tris.len());
    for (k, t) in tris.iter().enumerate() {
        s += &format!("{} 2 2 1 1 {} {} {}\n", k + 1, t[0], t[1], t[2]);
    }
    s + "$EndElements\n"
}

fn grid_v41(nodes: &[[f64; 2]], tris: &[[u64; 3]]) -> String {
    let n = nodes.len();
    let mut s = format!("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 {n} 1 {n}\n2 1 0 {n}\n");
    for k in 1..=n {
        s += &format!("{k}\n");
    }
    for x in nodes {
        s += &format!("{} {} 0\n", x[0], x[1]);
    }
    let m = tris.len();
    s += &format!("$EndNodes\n$Elements\n1 {m} 1 {m}\n2 1 2 {m}\n");
    for (k, t) in tris.iter().enumerate() {
        s += &format!("{} {} {} {}\n", k + 1, t[0], t[1], t[2]);
    }
    s + "$EndElements\n"
}

/// Signed area of a triangle of node tags.
fn signed_area(nodes: &[[f64; 2]], t: [u64; 3]) -> f64 {
    let p = |k: usize| nodes[t[k] as usize - 1];
    let (a, b, c) = (p(0), p(1), p(2));
    ((b[0] - a[0]) * (c[1] - a[1]) - (c[0] - a[0]) * (b[1] - a[1])) / 2.0
}

#[test]
fn folded_square_is_refused_naming_cells_elements_facet_and_file() {
    // The middle vertex moved below the bottom edge: two triangles turn over and cover
    // area outside the square and inside their neighbours. Reorienting them would give
    // the square an area of 1.1.
    let (nodes, tris) = square_grid([0.5, -0.1], |_| false);
    let inverted: Vec<usize> = (0..tris.len())
        .filter(|&k| signed_area(&nodes, tris[k]) < 0.0)
        .collect();
    assert_eq!(inverted.len(), 2);
    let abs_sum: f64 = tris.iter().map(|&t| signed_area(&nodes, t).abs()).sum();
    assert!((abs_sum - 1.1).abs() < 1e-12);
    for (format, text) in [
        ("v22", grid_v22(&nodes, &tris)),
        ("v41", grid_v41(&nodes, &tris)),
    ] {
        let err = read_gmsh_bytes(text.as_bytes(), "fold.msh").unwrap_err();
        let msg = err.to_string();
        let MeshError::InFile {
            path,
            location,
            elements,
            nodes: node_tags,
            source,
        } = err
        else {
            panic!("{format}: expected a fold in fold.msh, got {msg}");
        };
        assert_eq!(path, "fold.msh");
        let MeshError::FoldedCells {
            cell,
            neighbor,
            facet,
            folds,
        } = *source
        else {
            panic!("{format}: expected a fold, got {msg}");
        };
        // the turned-over cell is named first, with its neighbour across the facet
        assert!(inverted.contains(&cell), "{format}: {msg}");
        assert!(!inverted.contains(&neighbor), "{format}: {msg}");
        // triangle 0, (1, 2, 5), folds over triangle 1 at edge (1, 5); triangle 3,
        // (2, 6, 5), over triangle 2 at edge (2, 6) and over triangle 6 at edge (5, 6);
        // the two turned-over triangles meet properly at their common edge (2, 5)
        assert_eq!(folds, 3, "{format}: {msg}");
        assert_eq!(
            elements,
            [(cell, cell as u64 + 1), (neighbor, neighbor as u64 + 1)]
        );
        // the facet is an edge both cells have, at the middle vertex (node 5)
        assert_eq!(facet.len(), 2);
        let tags: Vec<u64> = node_tags.iter().map(|&(_, t)| t).collect();
        assert!(tags.contains(&5), "{format}: {msg}");
        for t in &tags {
            assert!(
                tris[cell].contains(t) && tris[neighbor].contains(t),
                "{format}: {msg}"
            );
        }
        // the location is the line of the named element
        let elements_at = text
            .lines()
            .position(|l| l == "$Elements")
            .expect("section");
        let headers = if format == "v22" { 1 } else { 2 };
        let line = elements_at + 1 + headers + cell + 1;
        assert_eq!(location, Some(FileLocation::Line(line)), "{format}: {msg}");
        assert!(
            msg.starts_with(&format!(
                "fold.msh: line {line}: cell {cell} folds over cell {neighbor}"
            )),
            "{format}: {msg}"
        );
        assert!(
            msg.contains(&format!("Gmsh elements {}, {}", cell + 1, neighbor + 1)),
            "{format}: {msg}"
        );
    }
    // the same grid unfolded reads, with the area of the square
    let (nodes, tris) = square_grid([0.5, 0.5], |_| false);
    let (m, info) = read_gmsh_bytes_with_info(grid_v22(&nodes, &tris).as_bytes(), "ok").unwrap();
    assert_eq!(info.reoriented_cells, 0);
    assert!((total_measure(&m) - 1.0).abs() < 1e-14);
}

#[test]
fn consistently_mirrored_and_mixed_vertex_orders_are_reoriented() {
    let mut rng = Rng(0x5eed_f0a1_1ce1);
    // every triangle clockwise; then random mixtures, with the middle vertex off-centre
    // (still inside, so nothing folds)
    let mut cases: Vec<(Vec<bool>, [f64; 2])> = vec![(vec![true; 8], [0.5, 0.5])];
    for _ in 0..20 {
        let mirror: Vec<bool> = (0..8).map(|_| rng.below(2) == 1).collect();
        let middle = [0.3 + 0.4 * rng.below(100) as f64 / 100.0, 0.35];
        cases.push((mirror, middle));
    }
    for (mirror, middle) in cases {
        let (nodes, tris) = square_grid(middle, |k| mirror[k]);
        let flipped = mirror.iter().filter(|&&m| m).count();
        for text in [grid_v22(&nodes, &tris), grid_v41(&nodes, &tris)] {
            let (m, info) = read_gmsh_bytes_with_info(text.as_bytes(), "mixed")
                .unwrap_or_else(|e| panic!("{mirror:?}: {e}"));
            assert_eq!(info.reoriented_cells, flipped, "{mirror:?}");
            m.validate().unwrap();
            assert!((total_measure(&m) - 1.0).abs() < 1e-14, "{mirror:?}");
        }
    }
}

/// Lists the cells (elements of Gmsh type `cell_type`) of a committed MSH 2.2 ASCII file
/// in mirrored vertex order at random (the same choice for every record of one element);
/// returns the text and how many distinct cells were mirrored.
fn mirror_cells_at_random(text: &str, cell_type: u64, rng: &mut Rng) -> (String, usize) {
    let mut choice: BTreeMap<Vec<u64>, bool> = BTreeMap::new();
    let mut in_elements = false;
    let mut out = String::new();
    for line in text.lines() {
        let mut line = line.to_string();
        if line == "$Elements" {
            in_elements = true;
        } else if line == "$EndElements" {
            in_elements = false;
        } else if in_elements {
            let f: Vec<u64> = line
                .split_whitespace()
                .map(|x| x.parse().expect("number"))
                .collect();
            if f.len() > 3 && f[1] == cell_type {
                let (ty, ntags) = (f[1], f[2] as usize);
                let nodes = &f[3 + ntags..];
                // Gmsh order -> its mirror image (all corner determinants change sign)
                let perm: &[usize] = match ty {
                    2 => &[0, 2, 1],
                    3 => &[3, 2, 1, 0],
                    4 => &[0, 1, 3, 2],
                    5 => &[1, 0, 3, 2, 5, 4, 7, 6],
                    _ => &[],
                };
                if !perm.is_empty() {
                    let mut key = nodes.to_vec();
                    key.sort_unstable();
                    let flip = *choice.entry(key).or_insert_with(|| rng.below(2) == 1);
                    if flip {
                        let head: Vec<String> =
                            f[..3 + ntags].iter().map(|x| x.to_string()).collect();
                        let tail: Vec<String> =
                            perm.iter().map(|&k| nodes[k].to_string()).collect();
                        line = format!("{} {}", head.join(" "), tail.join(" "));
                    }
                }
            }
        }
        out += &line;
        out.push('\n');
    }
    (out, choice.values().filter(|&&f| f).count())
}

#[test]
fn committed_meshes_with_randomly_mirrored_cells_read_the_same() {
    let mut rng = Rng(0x0dd_ba11);
    for (name, cell_type) in [
        ("square_tri", 2),
        ("square_quad", 3),
        ("box_tet", 4),
        ("box_hex", 5),
        ("two_materials_3d", 4),
    ] {
        let text = String::from_utf8(bytes_of(name, "v22_ascii")).expect("text");
        let (reference, info) = read_gmsh_bytes_with_info(text.as_bytes(), name).unwrap();
        assert_eq!(info.reoriented_cells, 0, "{name}");
        for _ in 0..3 {
            let (mixed, flipped) = mirror_cells_at_random(&text, cell_type, &mut rng);
            assert!(flipped > 0);
            let (m, info) = read_gmsh_bytes_with_info(mixed.as_bytes(), name)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(info.reoriented_cells, flipped, "{name}");
            m.validate().unwrap();
            assert_eq!(m.num_cells(), reference.num_cells());
            assert_eq!(m.coords(), reference.coords());
            assert_eq!(cell_facet_sets(&m), cell_facet_sets(&reference), "{name}");
            let (a, b) = (total_measure(&m), total_measure(&reference));
            assert!((a - b).abs() < 1e-12 * b, "{name}: {a} vs {b}");
        }
    }
}

#[test]
fn folded_tetrahedra_are_refused() {
    // Two tetrahedra on face (1, 2, 3): node 5 on the same side as node 4 overlaps the
    // first tetrahedron (both listed positively, nothing to reorient); below the face it
    // is a proper neighbour (listed negatively: reoriented).
    let file = |z: f64| {
        format!(
            "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n5\n1 0 0 0\n2 1 0 0\n3 0 1 0\n\
             4 0 0 1\n5 0.2 0.2 {z}\n$EndNodes\n$Elements\n2\n7 4 2 1 1 1 2 3 4\n\
             9 4 2 1 1 1 2 3 5\n$EndElements\n"
        )
    };
    let (m, info) = read_gmsh_bytes_with_info(file(-0.5).as_bytes(), "ok.msh").unwrap();
    assert_eq!(info.reoriented_cells, 1);
    m.validate().unwrap();
    let err = read_gmsh_bytes(file(0.5).as_bytes(), "tets.msh").unwrap_err();
    let msg = err.to_string();
    match err {
        MeshError::InFile {
            elements, source, ..
        } => {
            assert_eq!(elements, [(1, 9), (0, 7)], "{msg}");
            match *source {
                MeshError::FoldedCells {
                    cell: 1,
                    neighbor: 0,
                    ref facet,
                    folds: 1,
                } => assert_eq!(facet, &[0, 1, 2]),
                ref other => panic!("expected a fold, got {other}"),
            }
        }
        other => panic!("expected a fold in tets.msh, got {other}"),
    }
    assert!(
        msg.starts_with("tets.msh: line 15: cell 1 folds over cell 0"),
        "{msg}"
    );
    assert!(
        msg.contains("vertices 0, 1, 2 are Gmsh nodes 1, 2, 3"),
        "{msg}"
    );
}

// ---------------------------------------------------------------------------------------
// Text from the file in messages.

#[test]
fn control_characters_from_the_file_are_escaped_in_messages() {
    let good = String::from_utf8(bytes_of("square_tri", "v22_ascii")).expect("text");
    let colour = "\x1b[31m";
    let refusal = |bytes: &[u8]| {
        let msg = read_gmsh_bytes(bytes, "esc.msh").unwrap_err().to_string();
        assert!(!msg.chars().any(char::is_control), "{msg:?}");
        assert!(msg.starts_with("esc.msh: line "), "{msg}");
        msg
    };
    // in a section header: an unknown section without its end
    let text = good.replacen("$Nodes", &format!("$Nodes{colour}"), 1);
    let msg = refusal(text.as_bytes());
    assert!(
        msg.contains("section $Nodes\\u{1b}[31m starting here has no matching"),
        "{msg}"
    );
    // in a number
    let text = good.replacen("\n1 0 0 0\n", &format!("\n1 0 {colour}0 0\n"), 1);
    assert_ne!(text, good);
    let msg = refusal(text.as_bytes());
    assert!(msg.contains("bad number '\\u{1b}[31m0'"), "{msg}");
    // a stray line: a terminal title sequence, a carriage return and a byte that is not
    // UTF-8
    let text = good.replacen("$Nodes", "\x1b]0;owned\x07\r$Nodes", 1);
    let mut bytes = text.into_bytes();
    let at = bytes.iter().position(|&b| b == 0x07).expect("bell");
    bytes.insert(at, 0xff);
    let msg = refusal(&bytes);
    assert!(
        msg.contains("'\\u{1b}]0;owned\\xff\\u{7}\\r$Nodes'"),
        "{msg}"
    );
    // a skipped section's name, as reported
    let text = good.replacen("$Nodes", "$Odd\x1b[2J\n$EndOdd\x1b[2J\n$Nodes", 1);
    let (_, info) = read_gmsh_bytes_with_info(text.as_bytes(), "esc.msh").unwrap();
    assert_eq!(info.skipped_sections, ["Odd\\u{1b}[2J"]);
}

//! End-to-end checks of the file writers against an independent reader (meshio) and
//! of the VTU writer's speed on a large mesh.

use ferrofem_base::CellType;
use ferrofem_io::{
    write_mesh_vtu, write_pvd, write_space_vtu, write_space_vtu_piece, Encoding, Field,
};
use ferrofem_mesh::Mesh;
use ferrofem_space::H1Space;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// A structured mesh of the unit square/cube with `n` cells per direction (tensor
/// cells), each square split into 2 triangles or each cube into 6 tetrahedra.
fn grid_mesh(ct: CellType, n: usize) -> Mesh {
    let d = ct.dim();
    let np = n + 1;
    let ny = np;
    let nz = if d == 3 { np } else { 1 };
    let mut coords = Vec::with_capacity(np * ny * nz * d);
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..np {
                coords.extend([i as f64 / n as f64, j as f64 / n as f64]);
                if d == 3 {
                    coords.push(k as f64 / n as f64);
                }
            }
        }
    }
    let id = |i: usize, j: usize, k: usize| (i + np * (j + ny * k)) as u32;
    let mut cells = Vec::new();
    let nzc = if d == 3 { n } else { 1 };
    for k in 0..nzc {
        for j in 0..n {
            for i in 0..n {
                // lexicographic corners of the box
                let c: Vec<u32> = (0..(1 << d))
                    .map(|v| id(i + (v & 1), j + ((v >> 1) & 1), k + ((v >> 2) & 1)))
                    .collect();
                match ct {
                    CellType::Quadrilateral | CellType::Hexahedron => cells.extend(&c),
                    CellType::Triangle => cells.extend([c[0], c[1], c[3], c[0], c[3], c[2]]),
                    CellType::Tetrahedron => {
                        for p in [
                            [0, 1, 2],
                            [0, 2, 1],
                            [1, 0, 2],
                            [1, 2, 0],
                            [2, 0, 1],
                            [2, 1, 0],
                        ] {
                            let a = 1 << p[0];
                            let b = a + (1 << p[1]);
                            cells.extend([c[0], c[a], c[b], c[7]]);
                        }
                    }
                }
            }
        }
    }
    let mesh = Mesh::new(ct, coords, cells).expect("valid grid");
    let tags = (0..mesh.num_cells()).map(|c| (c % 3) as i32).collect();
    mesh.with_cell_tags(tags)
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrofem-io-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// meshio's name for a cell type.
fn meshio_name(ct: CellType) -> &'static str {
    match ct {
        CellType::Triangle => "triangle",
        CellType::Quadrilateral => "quad",
        CellType::Tetrahedron => "tetra",
        CellType::Hexahedron => "hexahedron",
    }
}

/// Writes one file per cell type and encoding, plus high-order space output (P2
/// triangles, Q3 hexahedra, P3 tetrahedra), and has `scripts/check_vtu.py` (meshio)
/// read them; runs only with `FERROFEM_CHECK_VTU=1` (CI sets it after installing
/// meshio).
#[test]
fn meshio_reads_every_cell_type_and_encoding() {
    if std::env::var("FERROFEM_CHECK_VTU").as_deref() != Ok("1") {
        eprintln!("skipped: set FERROFEM_CHECK_VTU=1 (needs python3 with meshio)");
        return;
    }
    let dir = temp_dir("meshio");
    let mut files = Vec::new();
    let mut expected = Vec::new();
    for ct in CellType::ALL {
        let mesh = grid_mesh(ct, 3);
        let np = mesh.num_vertices();
        let nc = mesh.num_cells();
        let u: Vec<f64> = mesh
            .coords()
            .chunks_exact(mesh.dim())
            .map(|x| x[0] * x[1])
            .collect();
        let grad: Vec<f64> = (0..np * 2).map(|i| i as f64 * 0.5).collect();
        let color: Vec<i32> = (0..nc as i32).map(|c| c % 4).collect();
        let pf = [Field::f64("u", 1, &u), Field::f64("grad_u", 2, &grad)];
        let cf = [Field::i32("color", 1, &color)];
        for enc in [Encoding::Binary, Encoding::Ascii] {
            let path = dir.join(format!("{ct}_{enc:?}.vtu"));
            write_mesh_vtu(&path, &mesh, &pf, &cf, enc).expect("writes");
            expected.push((
                path.display().to_string(),
                format!(
                    "points={np} cells={}:{nc} point_data=grad_u,u cell_data=cell_tag,color",
                    meshio_name(ct)
                ),
            ));
            files.push(path);
        }
    }
    // high-order spaces on linear sub-cells: P2 triangles, Q3 hexahedra, P3 tetrahedra
    for (ct, order) in [
        (CellType::Triangle, 2),
        (CellType::Hexahedron, 3),
        (CellType::Tetrahedron, 3),
    ] {
        let mesh = grid_mesh(ct, 2);
        let d = ct.dim();
        let scalar = H1Space::new(&mesh, order, 1).expect("space");
        let vector = scalar.with_ncomp(d).expect("vector space");
        let u = scalar.interpolate(|x, out| out[0] = x[0] * x[1]);
        let velocity = vector.interpolate(|x, out| out.copy_from_slice(x));
        let nc = mesh.num_cells();
        let color: Vec<i32> = (0..nc as i32).map(|c| c % 4).collect();
        let cf = [Field::i32("color", 1, &color)];
        let pf: [(&str, &[f64]); 2] = [("u", &u), ("velocity", &velocity)];
        for enc in [Encoding::Binary, Encoding::Ascii] {
            let path = dir.join(format!("{ct}_p{order}_{enc:?}.vtu"));
            write_space_vtu(&path, &mesh, &scalar, &pf, &cf, enc).expect("writes");
            expected.push((
                path.display().to_string(),
                format!(
                    "points={} cells={}:{} point_data=u,velocity cell_data=cell_id,cell_tag,color",
                    scalar.num_nodes(),
                    meshio_name(ct),
                    nc * order.pow(d as u32)
                ),
            ));
            files.push(path);
        }
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/check_vtu.py");
    let out = Command::new("python3")
        .arg(&script)
        .args(&files)
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "check_vtu.py failed:\n{stdout}\n{stderr}"
    );
    for (file, summary) in &expected {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{file}: ")))
            .unwrap_or_else(|| panic!("no summary for {file} in\n{stdout}"));
        assert_eq!(&line[file.len() + 2..], summary, "{file}");
    }
    // the checker really fails on a broken file
    let broken = dir.join("broken.vtu");
    let text = std::fs::read_to_string(&files[0]).expect("reads");
    std::fs::write(&broken, text.replace("</Cells>", "")).expect("writes");
    let out = Command::new("python3")
        .arg(&script)
        .arg(&broken)
        .output()
        .expect("runs");
    assert!(!out.status.success(), "a truncated file must not pass");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A time series: a `.pvd` next to its snapshots, names relative to it.
#[test]
fn pvd_collection_lists_snapshots_written_next_to_it() {
    let dir = temp_dir("pvd");
    let mesh = grid_mesh(CellType::Quadrilateral, 2);
    let mut entries = Vec::new();
    for step in 0..3 {
        let t = step as f64 * 0.25;
        let u: Vec<f64> = mesh.coords().chunks_exact(2).map(|x| t * x[0]).collect();
        let name = format!("u_{step:04}.vtu");
        write_mesh_vtu(
            dir.join(&name),
            &mesh,
            &[Field::f64("u", 1, &u)],
            &[],
            Encoding::Binary,
        )
        .expect("writes snapshot");
        entries.push((t, name));
    }
    write_pvd(dir.join("u.pvd"), &entries).expect("writes pvd");
    let text = std::fs::read_to_string(dir.join("u.pvd")).expect("reads");
    for (t, name) in &entries {
        let line = text
            .lines()
            .find(|l| l.contains(name.as_str()))
            .expect("listed");
        assert!(line.contains(&format!("timestep=\"{t}\"")), "{line}");
        assert!(dir.join(name).is_file());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// 10^6 hexahedra in binary: the file must be written in well under a few seconds.
/// Ignored by default (it writes ~140 MB); run with `--ignored`.
#[test]
#[ignore]
fn million_cell_binary_vtu_is_fast() {
    let mesh = grid_mesh(CellType::Hexahedron, 100);
    assert_eq!(mesh.num_cells(), 1_000_000);
    let u: Vec<f64> = mesh
        .coords()
        .chunks_exact(3)
        .map(|x| x[0] + x[1] * x[2])
        .collect();
    let path = temp_dir("big").join("big.vtu");
    let t0 = Instant::now();
    write_mesh_vtu(
        &path,
        &mesh,
        &[Field::f64("u", 1, &u)],
        &[],
        Encoding::Binary,
    )
    .expect("writes");
    let secs = t0.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(&path).expect("exists").len();
    let _ = std::fs::remove_file(&path);
    // raw payload: points 24, u 8 per point; connectivity 64, offsets 8, types 1, tag 4
    // per cell; base64 adds a third
    let raw = mesh.num_vertices() as u64 * 32 + mesh.num_cells() as u64 * 77;
    eprintln!("1e6 hexes: {bytes} bytes in {secs:.3} s");
    assert!(
        bytes >= raw * 4 / 3 && bytes < raw * 4 / 3 + 10_000,
        "{bytes} vs {raw}"
    );
    assert!(secs < 3.0, "writing took {secs:.2} s");
}

/// A piece of a distributed snapshot is refused, with nothing written, when its global
/// cell numbers are not one per cell or do not fit the `cell_id` array's Int32.
#[test]
fn a_piece_with_bad_global_cells_is_refused() {
    let mesh = grid_mesh(CellType::Quadrilateral, 3);
    let space = H1Space::new(&mesh, 2, 1).expect("space");
    let u = vec![0.0; space.num_dofs()];
    let dir = temp_dir("piece");
    let n = mesh.num_cells() as u32;
    let good: Vec<u32> = (0..n).map(|c| 100 + c).collect();
    let short: Vec<u32> = (0..n - 1).collect();
    let mut too_big = good.clone();
    too_big[2] = u32::MAX;
    for (name, global) in [("short", &short), ("too_big", &too_big)] {
        let path = dir.join(format!("{name}.vtu"));
        let e = write_space_vtu_piece(&path, &mesh, &space, &[("u", &u)], global, Encoding::Ascii)
            .expect_err(name);
        assert!(e.to_string().contains("global cell numbers"), "{name}: {e}");
        assert!(!path.exists(), "{name}: a file was written");
    }
    let path = dir.join("good.vtu");
    write_space_vtu_piece(&path, &mesh, &space, &[("u", &u)], &good, Encoding::Ascii)
        .expect("a good piece");
    let text = std::fs::read_to_string(&path).expect("written");
    assert!(text.contains("Name=\"cell_id\""));
    assert!(text.contains(&format!("{}", 100 + n - 1)));
}

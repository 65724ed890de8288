//! Structured, randomly perturbed box meshes of all four cell types for the tests (built
//! here so the tests do not depend on the mesh generators).

use ferrofem_base::CellType;
use ferrofem_mesh::Mesh;

pub(crate) use ferrofem_base::random::Lcg;

/// The tests' generator for `seed`.
pub(crate) fn rng(seed: u64) -> Lcg {
    Lcg::new(seed ^ 0x9E37_79B9_7F4A_7C15)
}

/// A random point strictly inside the reference cell of `ct`.
pub(crate) fn reference_point(ct: CellType, rng: &mut Lcg) -> Vec<f64> {
    let d = ct.dim();
    loop {
        let x: Vec<f64> = (0..d).map(|_| rng.next_f64()).collect();
        if ct.is_tensor() {
            return x.iter().map(|c| 2.0 * c - 1.0).collect();
        }
        if x.iter().sum::<f64>() < 1.0 {
            return x;
        }
    }
}

/// `[0, len_0] × … ` split into `n` cells per direction (quads/hexes, or 2 triangles per
/// square / 6 Kuhn tetrahedra per cube), with interior vertices moved by up to
/// `amplitude · h` per coordinate. Cells are positively oriented; the boundary is kept
/// exactly, so the mesh tiles the box.
pub(crate) fn perturbed_box(
    ct: CellType,
    n: usize,
    len: [f64; 3],
    amplitude: f64,
    seed: u64,
) -> Mesh {
    let d = ct.dim();
    let n1 = n + 1;
    let nverts = n1.pow(d as u32);
    let mut rng = rng(seed);
    let mut coords = Vec::with_capacity(nverts * d);
    for v in 0..nverts {
        let mut r = v;
        for a in 0..d {
            let i = r % n1;
            r /= n1;
            let h = len[a] / n as f64;
            let interior = (0..d).all(|b| {
                let ib = (v / n1.pow(b as u32)) % n1;
                ib > 0 && ib < n
            });
            let shift = if interior {
                amplitude * h * rng.symmetric()
            } else {
                0.0
            };
            coords.push(i as f64 * h + shift);
        }
    }
    let vid = |ijk: [usize; 3]| -> u32 { (ijk[0] + n1 * (ijk[1] + n1 * ijk[2])) as u32 };
    // the lexicographic corners of the cube/square at `base`
    let corners = |base: [usize; 3]| -> Vec<u32> {
        (0..1usize << d)
            .map(|c| {
                let mut p = base;
                for a in 0..d {
                    p[a] += (c >> a) & 1;
                }
                vid(p)
            })
            .collect()
    };
    let mut cells = Vec::new();
    let nk = if d == 3 { n } else { 1 };
    for k in 0..nk {
        for j in 0..n {
            for i in 0..n {
                let c = corners([i, j, k]);
                match ct {
                    CellType::Quadrilateral | CellType::Hexahedron => cells.extend(&c),
                    CellType::Triangle => {
                        cells.extend([c[0], c[1], c[3]]);
                        cells.extend([c[0], c[3], c[2]]);
                    }
                    CellType::Tetrahedron => {
                        for perm in [
                            [0, 1, 2],
                            [0, 2, 1],
                            [1, 0, 2],
                            [1, 2, 0],
                            [2, 0, 1],
                            [2, 1, 0],
                        ] {
                            let b1 = 1usize << perm[0];
                            let b2 = b1 | (1 << perm[1]);
                            let mut t = [c[0], c[b1], c[b2], c[7]];
                            // odd permutations give negatively oriented Kuhn tetrahedra
                            let odd = perm == [0, 2, 1] || perm == [1, 0, 2] || perm == [2, 1, 0];
                            if odd {
                                t.swap(2, 3);
                            }
                            cells.extend(t);
                        }
                    }
                }
            }
        }
    }
    Mesh::new(ct, coords, cells).expect("structured test mesh is well formed")
}

//! Partitions of generated and Gmsh meshes and the parts the ranks hold: balance, cut,
//! coverage of every cell and vertex, one owner per vertex, tagged facets carried over,
//! and clear errors.

use ferrofem_dist::{partition_cells, CellPartition, Decomposition, DistError, LocalPart};
use ferrofem_mesh::{generate_box, read_gmsh, BoxSpec, Mesh};
use std::collections::HashSet;
use std::path::PathBuf;

fn boxed(spec: &str) -> Mesh {
    generate_box(&BoxSpec::parse(spec).expect("spec")).expect("mesh")
}

fn gmsh(name: &str) -> Mesh {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/gmsh")
        .join(name);
    read_gmsh(path).expect("gmsh mesh")
}

/// Every check of a decomposition of `mesh` into `nparts` parts.
fn check_decomposition(mesh: &Mesh, nparts: usize) {
    let partition = partition_cells(mesh, nparts).expect("partition");
    assert_eq!(partition.nparts(), nparts);
    // balanced to METIS's tolerance, give or take the granularity of a few cells per part
    let mean = mesh.num_cells() as f64 / nparts as f64;
    let sizes = partition.sizes();
    assert!(
        sizes.iter().all(|&s| s as f64 <= 1.03 * mean + 2.0),
        "{nparts} parts: sizes {sizes:?}"
    );
    let decomposition = Decomposition::new(mesh, partition.clone()).expect("decomposition");
    let owners = decomposition.vertex_owners();
    let parts: Vec<LocalPart> = (0..nparts)
        .map(|r| LocalPart::extract(mesh, &decomposition, r).expect("part"))
        .collect();

    // every cell in exactly one part, with its own vertices in the same order
    let mut seen = vec![0usize; mesh.num_cells()];
    for part in &parts {
        assert_eq!(part.mesh.num_cells(), part.cell_global.len());
        for (lc, &gc) in part.cell_global.iter().enumerate() {
            seen[gc as usize] += 1;
            let global: Vec<u32> = mesh.cell(gc as usize).to_vec();
            let local: Vec<u32> = part
                .mesh
                .cell(lc)
                .iter()
                .map(|&v| part.vertex_global[v as usize])
                .collect();
            assert_eq!(local, global, "cell {gc}");
            if !mesh.cell_tags().is_empty() {
                assert_eq!(part.mesh.cell_tags()[lc], mesh.cell_tags()[gc as usize]);
            }
            // the interface cells first: those with a vertex another part holds
            let at_interface = part
                .mesh
                .cell(lc)
                .iter()
                .any(|&v| part.holders(v as usize).len() > 1);
            assert_eq!(at_interface, lc < part.interface_cells, "cell {gc}");
        }
        if nparts > 1 {
            assert!(part.interface_cells > 0);
        }
        // each group in global order
        let (front, back) = part.cell_global.split_at(part.interface_cells);
        assert!(front.windows(2).all(|w| w[0] < w[1]));
        assert!(back.windows(2).all(|w| w[0] < w[1]));
        for (lv, &gv) in part.vertex_global.iter().enumerate() {
            assert_eq!(part.mesh.vertex(lv), mesh.vertex(gv as usize));
        }
        assert!(part.vertex_global.windows(2).all(|w| w[0] < w[1]));
    }
    assert!(seen.iter().all(|&s| s == 1));

    // every used vertex owned by exactly one rank, which holds it; every holder agrees
    let mut owned_by = vec![Vec::new(); mesh.num_vertices()];
    let mut held_by = vec![Vec::new(); mesh.num_vertices()];
    for part in &parts {
        for (lv, &gv) in part.vertex_global.iter().enumerate() {
            held_by[gv as usize].push(part.rank);
            assert_eq!(part.vertex_owner(lv) as u32, owners[gv as usize]);
            assert_eq!(part.holders(lv), decomposition.holders(gv as usize));
            if part.vertex_owner(lv) == part.rank {
                owned_by[gv as usize].push(part.rank);
            }
        }
    }
    for v in 0..mesh.num_vertices() {
        if held_by[v].is_empty() {
            continue;
        }
        assert_eq!(owned_by[v].len(), 1, "vertex {v}: owners {:?}", owned_by[v]);
        assert_eq!(owned_by[v][0], *held_by[v].iter().min().unwrap());
    }
    let owned: usize = parts.iter().map(LocalPart::owned_vertices).sum();
    assert_eq!(owned, held_by.iter().filter(|h| !h.is_empty()).count());
    // a rank's neighbours are the ranks that share a vertex with it, both ways
    for part in &parts {
        for n in 0..nparts {
            let shares = n != part.rank
                && parts[n]
                    .vertex_global
                    .iter()
                    .any(|v| part.vertex_global.binary_search(v).is_ok());
            assert_eq!(part.neighbours().contains(&n), shares);
            assert_eq!(parts[n].neighbours().contains(&part.rank), shares);
        }
    }
    // the boundary of the whole mesh, split between the parts: exactly its facets
    let mut global_boundary: Vec<(u32, u8)> = mesh.boundary_facets();
    global_boundary.sort_unstable();
    let mut from_parts: Vec<(u32, u8)> = parts
        .iter()
        .flat_map(|p| {
            p.boundary_facets
                .iter()
                .map(|&(c, f)| (p.cell_global[c as usize], f))
        })
        .collect();
    from_parts.sort_unstable();
    assert_eq!(from_parts, global_boundary);
    if nparts > 1 {
        let local_boundary: usize = parts.iter().map(|p| p.mesh.boundary_facets().len()).sum();
        assert_eq!(
            local_boundary - global_boundary.len(),
            2 * partition.cut_facets(&mesh.facet_incidence().expect("topology")),
            "interfaces are local boundary on both sides, and not in boundary_facets"
        );
    }

    // each tagged boundary facet in the part of its cell, once, with its tag
    let incidence = mesh.facet_incidence().expect("topology");
    let mut carried = HashSet::new();
    let mut total = 0;
    for part in &parts {
        let f = part.mesh.facets();
        total += f.len();
        for i in 0..f.len() {
            let mut g: Vec<u32> = f
                .facet(i)
                .iter()
                .map(|&v| part.vertex_global[v as usize])
                .collect();
            g.sort_unstable();
            carried.insert((g, f.tags[i]));
        }
    }
    let mut expected = HashSet::new();
    for i in 0..mesh.facets().len() {
        let mut g = mesh.facets().facet(i).to_vec();
        g.sort_unstable();
        let f = incidence.find(&g).expect("a tagged facet is a facet");
        if incidence.is_boundary(f) {
            expected.insert((g, mesh.facets().tags[i]));
        }
    }
    assert!(expected.is_subset(&carried));
    assert_eq!(total, carried.len(), "a boundary facet carried twice");
}

#[test]
fn generated_meshes_of_every_cell_type_decompose() {
    for spec in ["tri:12x10", "quad:12x10", "tet:6x5x4", "hex:6x5x4"] {
        let mesh = boxed(spec);
        for nparts in [1, 2, 3, 4, 7] {
            check_decomposition(&mesh, nparts);
        }
    }
}

#[test]
fn gmsh_meshes_decompose() {
    for name in ["box_tet_v41_ascii.msh", "box_hex_v41_ascii.msh"] {
        let mesh = gmsh(name);
        for nparts in [2, 3, 4] {
            check_decomposition(&mesh, nparts);
        }
    }
}

#[test]
fn the_graph_partition_cuts_fewer_facets_than_slabs() {
    // cells are generated in lexicographic order, so equal blocks of cell indices are slabs
    for spec in ["quad:32x32", "tet:12x12x12"] {
        let mesh = boxed(spec);
        let incidence = mesh.facet_incidence().unwrap();
        let n = mesh.num_cells();
        for nparts in [4, 8] {
            let slabs: Vec<u32> = (0..n).map(|c| (c * nparts / n) as u32).collect();
            let slabs = CellPartition::from_parts(slabs, nparts).unwrap();
            let metis = partition_cells(&mesh, nparts).unwrap();
            let (cut, slab_cut) = (metis.cut_facets(&incidence), slabs.cut_facets(&incidence));
            assert!(
                cut < slab_cut,
                "{spec}, {nparts} parts: {cut} against slabs {slab_cut}"
            );
        }
        // balanced
        for nparts in [3, 7] {
            let imbalance = partition_cells(&mesh, nparts).unwrap().imbalance();
            assert!(
                imbalance <= 1.03,
                "{spec}, {nparts} parts: imbalance {imbalance}"
            );
        }
        // deterministic
        assert_eq!(
            partition_cells(&mesh, 4).unwrap(),
            partition_cells(&mesh, 4).unwrap()
        );
    }
}

#[test]
fn bad_requests_are_clear_errors() {
    let mesh = boxed("tri:2x2");
    assert!(matches!(partition_cells(&mesh, 0), Err(DistError::NoParts)));
    let err = partition_cells(&mesh, 9).unwrap_err();
    assert!(
        matches!(
            err,
            DistError::MorePartsThanCells {
                nparts: 9,
                ncells: 8
            }
        ),
        "{err}"
    );
    let p = partition_cells(&mesh, 2).unwrap();
    let d = Decomposition::new(&mesh, p.clone()).unwrap();
    assert!(matches!(
        LocalPart::extract(&mesh, &d, 2),
        Err(DistError::RankOutOfRange { rank: 2, nparts: 2 })
    ));
    assert!(matches!(
        CellPartition::from_parts(vec![0, 0, 2], 3),
        Err(DistError::EmptyPart { part: 1, nparts: 3 })
    ));
    assert!(matches!(
        CellPartition::from_parts(vec![0, 5], 2),
        Err(DistError::InvalidPartition(_))
    ));
    let other = boxed("tri:3x3");
    assert!(matches!(
        Decomposition::new(&other, p),
        Err(DistError::InvalidPartition(_))
    ));
    assert!(matches!(
        LocalPart::extract(&other, &d, 0),
        Err(DistError::InvalidPartition(_))
    ));
}

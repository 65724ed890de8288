#!/usr/bin/env python3
"""Writes the small Gmsh test meshes in tests/data/gmsh/ and the counts Gmsh itself reports
for them (tests/data/gmsh/expected.txt), which crates/mesh/tests/gmsh.rs compares against.

Each mesh is saved four times: MSH 2.2 and 4.1, each ASCII and binary
(<name>_v22_ascii.msh, <name>_v22_binary.msh, <name>_v41_ascii.msh, <name>_v41_binary.msh).

Usage (from the repository root):  pip install gmsh && python3 scripts/make_gmsh_test_meshes.py
"""

import os
import sys

import gmsh

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "gmsh")
FORMATS = [("v22_ascii", 2.2, 0), ("v22_binary", 2.2, 1), ("v41_ascii", 4.1, 0), ("v41_binary", 4.1, 1)]
CELL_NAMES = {2: "triangle", 3: "quadrilateral", 4: "tetrahedron", 5: "hexahedron"}
SIDES = ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax"]
# OpenCASCADE pads bounding boxes by about 1e-7.
TOL = 1e-6


def side_of(dim, tag, lo, hi):
    """Which side of the box [lo, hi] the entity lies on (None if it is not on one)."""
    b = gmsh.model.getBoundingBox(dim, tag)
    for axis in range(3 if len(lo) == 3 else 2):
        for k, v in ((0, lo[axis]), (1, hi[axis])):
            if abs(b[axis] - v) < TOL and abs(b[axis + 3] - v) < TOL:
                return SIDES[2 * axis + k]
    return None


def name_sides(dim, lo, hi, first_tag):
    """One named physical group per side of the box, tags first_tag, first_tag + 1, ..."""
    groups = {}
    for _, t in gmsh.model.getEntities(dim):
        s = side_of(dim, t, lo, hi)
        if s is not None:
            groups.setdefault(s, []).append(t)
    for k, s in enumerate(SIDES[: 2 * len(lo)]):
        gmsh.model.addPhysicalGroup(dim, groups[s], first_tag + k, s)


def set_size(h):
    """Mesh size h at every point of the current model."""
    gmsh.model.mesh.setSize(gmsh.model.getEntities(0), h)


def square_tri():
    gmsh.model.occ.addRectangle(0, 0, 0, 1, 1)
    gmsh.model.occ.synchronize()
    name_sides(1, [0, 0], [1, 1], 1)
    gmsh.model.addPhysicalGroup(2, [1], 10, "domain")
    set_size(0.25)
    gmsh.model.mesh.generate(2)


def square_quad():
    gmsh.model.occ.addRectangle(0, 0, 0, 2, 1)
    gmsh.model.occ.synchronize()
    for _, c in gmsh.model.getEntities(1):
        b = gmsh.model.getBoundingBox(1, c)
        horizontal = b[3] - b[0] > b[4] - b[1]
        gmsh.model.mesh.setTransfiniteCurve(c, 7 if horizontal else 4)
    gmsh.model.mesh.setTransfiniteSurface(1)
    gmsh.model.mesh.setRecombine(2, 1)
    name_sides(1, [0, 0], [2, 1], 1)
    gmsh.model.addPhysicalGroup(2, [1], 10, "domain")
    gmsh.model.mesh.generate(2)


def box_tet():
    gmsh.model.occ.addBox(0, 0, 0, 1, 0.8, 0.6)
    gmsh.model.occ.synchronize()
    name_sides(2, [0, 0, 0], [1, 0.8, 0.6], 1)
    gmsh.model.addPhysicalGroup(3, [1], 20, "solid")
    set_size(0.4)
    gmsh.model.mesh.generate(3)


def box_hex():
    gmsh.model.occ.addBox(0, 0, 0, 1, 0.8, 0.6)
    gmsh.model.occ.synchronize()
    for _, c in gmsh.model.getEntities(1):
        b = gmsh.model.getBoundingBox(1, c)
        ext = [b[3] - b[0], b[4] - b[1], b[5] - b[2]]
        axis = ext.index(max(ext))
        gmsh.model.mesh.setTransfiniteCurve(c, [5, 4, 3][axis])
    for _, s in gmsh.model.getEntities(2):
        gmsh.model.mesh.setTransfiniteSurface(s)
        gmsh.model.mesh.setRecombine(2, s)
    gmsh.model.mesh.setTransfiniteVolume(1)
    gmsh.model.mesh.setRecombine(3, 1)
    name_sides(2, [0, 0, 0], [1, 0.8, 0.6], 1)
    gmsh.model.addPhysicalGroup(3, [1], 20, "solid")
    gmsh.model.mesh.generate(3)


def two_materials_2d():
    """Two squares side by side; every cell is in its material group and in "everything"
    (added last, so it is each cell's second group); the left side is in "boundary" and in
    "left", so its facets are tagged twice."""
    a = gmsh.model.occ.addRectangle(0, 0, 0, 1, 1)
    b = gmsh.model.occ.addRectangle(1, 0, 0, 1, 1)
    gmsh.model.occ.fragment([(2, a)], [(2, b)])
    gmsh.model.occ.synchronize()
    left, right = sorted((gmsh.model.getBoundingBox(2, s)[0], s) for _, s in gmsh.model.getEntities(2))
    gmsh.model.addPhysicalGroup(2, [left[1]], 1, "left_material")
    gmsh.model.addPhysicalGroup(2, [right[1]], 2, "right_material")
    gmsh.model.addPhysicalGroup(2, [left[1], right[1]], 3, "everything")
    outer, interface, left_side = [], [], []
    for _, c in gmsh.model.getEntities(1):
        bb = gmsh.model.getBoundingBox(1, c)
        if abs(bb[0] - 1) < TOL and abs(bb[3] - 1) < TOL:
            interface.append(c)
        else:
            outer.append(c)
            if abs(bb[3]) < TOL:
                left_side.append(c)
    gmsh.model.addPhysicalGroup(1, outer, 5, "boundary")
    gmsh.model.addPhysicalGroup(1, interface, 6, "interface")
    gmsh.model.addPhysicalGroup(1, left_side, 7, "left")
    set_size(0.3)
    gmsh.model.mesh.generate(2)


def two_materials_3d():
    """Two boxes stacked in z, tetrahedra, one physical volume each, the interface and the
    outer boundary as physical surfaces."""
    a = gmsh.model.occ.addBox(0, 0, 0, 1, 1, 0.5)
    b = gmsh.model.occ.addBox(0, 0, 0.5, 1, 1, 0.5)
    gmsh.model.occ.fragment([(3, a)], [(3, b)])
    gmsh.model.occ.synchronize()
    low, high = sorted((gmsh.model.getBoundingBox(3, v)[2], v) for _, v in gmsh.model.getEntities(3))
    gmsh.model.addPhysicalGroup(3, [low[1]], 31, "lower")
    gmsh.model.addPhysicalGroup(3, [high[1]], 32, "upper")
    outer, interface = [], []
    for _, s in gmsh.model.getEntities(2):
        bb = gmsh.model.getBoundingBox(2, s)
        (interface if abs(bb[2] - 0.5) < TOL and abs(bb[5] - 0.5) < TOL else outer).append(s)
    gmsh.model.addPhysicalGroup(2, outer, 41, "outer")
    gmsh.model.addPhysicalGroup(2, interface, 42, "interface")
    set_size(0.5)
    gmsh.model.mesh.generate(3)


MESHES = [square_tri, square_quad, box_tet, box_hex, two_materials_2d, two_materials_3d]


def expectations(name):
    """What Gmsh reports about the current model, in the format of expected.txt."""
    groups = gmsh.model.getPhysicalGroups()
    top = max(d for d, _ in groups)
    lines = [f"mesh {name}"]
    # Cells: elements of the top dimension in physical groups (all that Gmsh saves).
    cells = {}  # element tag -> (type, nodes, entity)
    for d, t in groups:
        if d != top:
            continue
        for e in gmsh.model.getEntitiesForPhysicalGroup(d, t):
            types, tags, nodes = gmsh.model.mesh.getElements(d, e)
            for ty, tg, nd in zip(types, tags, nodes):
                k = len(nd) // len(tg)
                for i, et in enumerate(tg):
                    cells[int(et)] = (int(ty), nd[i * k:(i + 1) * k], e)
    types = {ty for ty, _, _ in cells.values()}
    assert len(types) == 1, types
    lines.append(f"cell_type {CELL_NAMES[types.pop()]}")
    lines.append(f"cells {len(cells)}")
    used = set()
    for _, nd, _ in cells.values():
        used.update(int(n) for n in nd)
    lines.append(f"vertices {len(used)}")
    measure = 0.0
    entities = {e for _, _, e in cells.values()}
    for e in entities:
        measure += gmsh.model.occ.getMass(top, e)
    lines.append(f"measure {measure!r}")
    # Cell tags: the first physical group of each cell's entity.
    per_tag = {}
    for _, _, e in cells.values():
        first = int(gmsh.model.getPhysicalGroupsForEntity(top, e)[0])
        per_tag[first] = per_tag.get(first, 0) + 1
    for t in sorted(per_tag):
        lines.append(f"cell_tag {t} {per_tag[t]}")
    # Tagged facets: elements of the physical groups one dimension down.
    for d, t in groups:
        if d != top - 1:
            continue
        n = 0
        lo, hi = [float("inf")] * 3, [float("-inf")] * 3
        for e in gmsh.model.getEntitiesForPhysicalGroup(d, t):
            _, tags, _ = gmsh.model.mesh.getElements(d, e)
            n += sum(len(tg) for tg in tags)
            b = gmsh.model.getBoundingBox(d, e)
            lo = [min(lo[k], b[k]) for k in range(3)]
            hi = [max(hi[k], b[k + 3]) for k in range(3)]
        lines.append(f"facet_tag {t} {n}")
        for axis in range(top):
            if hi[axis] - lo[axis] < 2 * TOL:
                lines.append(f"plane {t} {axis} {round((lo[axis] + hi[axis]) / 2, 9)!r}")
    for d, t in groups:
        lines.append(f"name {d} {t} {gmsh.model.getPhysicalName(d, t)}")
    lines.append("end")
    return lines


def main():
    os.makedirs(OUT, exist_ok=True)
    gmsh.initialize(sys.argv[:1])
    gmsh.option.setNumber("General.Terminal", 0)
    out = [f"# Written by scripts/make_gmsh_test_meshes.py with Gmsh {gmsh.__version__}; counts from the Gmsh API."]
    for make in MESHES:
        gmsh.model.add(make.__name__)
        make()
        out.extend(expectations(make.__name__))
        for suffix, version, binary in FORMATS:
            gmsh.option.setNumber("Mesh.MshFileVersion", version)
            gmsh.option.setNumber("Mesh.Binary", binary)
            gmsh.option.setNumber("Mesh.SaveAll", 0)
            path = os.path.join(OUT, f"{make.__name__}_{suffix}.msh")
            gmsh.write(path)
            size = os.path.getsize(path)
            assert size < 50_000, f"{path} is {size} bytes"
        gmsh.model.remove()
    with open(os.path.join(OUT, "expected.txt"), "w") as f:
        f.write("\n".join(out) + "\n")
    gmsh.finalize()


if __name__ == "__main__":
    main()

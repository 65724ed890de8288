#!/usr/bin/env python3
"""Writes the Gmsh meshes of two validation problems to examples/meshes/.

plate_hole_<k>.msh, k = 1..5 (MSH 4.1 binary, 3-node triangles): the quarter model of a
plate with a circular hole, for the Kirsch stress concentration under uniaxial tension.
Lengths are in units of the hole radius a = 1: the square [0, 10]^2 minus the quarter disk
r < 1 at the origin. The tension is applied as the exact Kirsch tractions on `right`
(x = 10) and `top` (y = 10), `left` (x = 0) and `bottom` (y = 0) are symmetry lines,
`hole` (the quarter arc) is traction-free; the cells are the group `plate`. The mesh is
graded: level k has 8 * 2^(k-1) segments on the arc (size pi/2 / (8 * 2^(k-1))) and the
size grows linearly with the distance from the arc to 2 / 2^(k-1) at distance 6, so each
level halves the whole size field of the one before.

two_layers.msh (MSH 4.1 ASCII, structured quadrilaterals) and two_layers_tri.msh (MSH 4.1
ASCII, unstructured triangles, size 0.05): 1-D conduction across two materials in the
rectangle [0, 1] x [0, 0.25], `copper` for x < 0.4 and `steel` for x > 0.4, meshed
conformingly across the interface x = 0.4 (shared nodes). The temperature is prescribed
on `hot` (x = 0) and `cold` (x = 1); `sides` (y = 0 and y = 0.25) is insulated. The
quadrilateral mesh has 8 x 4 cells in copper and 12 x 4 in steel.

Every cell and every boundary facet lies in a named physical group (tags: plate 10, left 1,
bottom 2, right 3, top 4, hole 5; copper 10, steel 11, hot 1, cold 2, sides 3); only
elements of physical groups are saved. The options that influence meshing are fixed (one thread, set
algorithms), so the files are the same on every run with the same Gmsh version.

Usage (from the repository root):  pip install gmsh && python3 scripts/make_problem_meshes.py
    --levels N   plate levels 1..N (default 5)
    --check      also read every file back with meshio (pip install meshio) and print its
                 cells and groups, the arc's distance from r = a and mesh checks
    --check-only read and check the existing files without writing them
"""

import argparse
import math
import os
import sys

import gmsh

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "meshes")
# OpenCASCADE pads bounding boxes by about 1e-7.
TOL = 1e-6

# Plate with a hole (units of the hole radius).
A = 1.0  # hole radius
L = 10.0  # outer size
ARC_SEGMENTS = 8  # quarter-arc segments at level 1
FAR_SIZE = 2.0  # size at distance >= GRADING_DISTANCE from the arc, level 1
GRADING_DISTANCE = 6.0  # the size grows linearly over this distance from the arc
PLATE_LEVELS = 5

# Two layers.
WIDTH, HEIGHT, INTERFACE = 1.0, 0.25, 0.4
CELLS_X = (8, 12)  # copper, steel
CELLS_Y = 4
TRI_SIZE = 0.05


def plate_names():
    return {"left": 1, "bottom": 2, "right": 3, "top": 4, "hole": 5, "plate": 10}


def two_layer_names():
    return {"hot": 1, "cold": 2, "sides": 3, "copper": 10, "steel": 11}


def start(name):
    """A new model with the options that make the output reproducible."""
    gmsh.model.add(name)
    gmsh.option.setNumber("General.NumThreads", 1)
    gmsh.option.setNumber("Mesh.MaxNumThreads1D", 1)
    gmsh.option.setNumber("Mesh.MaxNumThreads2D", 1)
    gmsh.option.setNumber("Mesh.Algorithm", 6)  # Frontal-Delaunay
    gmsh.option.setNumber("Mesh.RecombineAll", 0)
    gmsh.option.setNumber("Mesh.ElementOrder", 1)
    gmsh.option.setNumber("Mesh.Smoothing", 1)
    gmsh.option.setNumber("Mesh.RandomFactor", 1e-9)
    gmsh.option.setNumber("Mesh.MeshSizeFactor", 1.0)
    gmsh.option.setNumber("Mesh.MeshSizeMin", 0.0)
    gmsh.option.setNumber("Mesh.MeshSizeMax", 1e22)
    # Options are global: reset those a previous model changed.
    gmsh.option.setNumber("Mesh.MeshSizeFromPoints", 1)
    gmsh.option.setNumber("Mesh.MeshSizeFromCurvature", 0)
    gmsh.option.setNumber("Mesh.MeshSizeExtendFromBoundary", 1)
    gmsh.option.setNumber("Mesh.SaveAll", 0)


def is_segment(dim, tag, axis, value):
    """Whether the entity lies in the plane x[axis] = value."""
    b = gmsh.model.getBoundingBox(dim, tag)
    return abs(b[axis] - value) < TOL and abs(b[axis + 3] - value) < TOL


def plate_hole(level):
    """The graded triangle mesh of the quarter plate, level 1, 2, ..."""
    scale = 2.0 ** (level - 1)
    arc_segments = ARC_SEGMENTS * int(scale)
    h_hole = A * math.pi / 2 / arc_segments
    h_far = max(FAR_SIZE / scale, h_hole)
    # Built from its curves (the boundary counter-clockwise), so that the arc is a circle.
    occ = gmsh.model.occ
    corners = [(A, 0), (L, 0), (L, L), (0, L), (0, A)]
    p = [occ.addPoint(x, y, 0) for x, y in corners]
    centre = occ.addPoint(0, 0, 0)
    curves = {
        "bottom": occ.addLine(p[0], p[1]),
        "right": occ.addLine(p[1], p[2]),
        "top": occ.addLine(p[2], p[3]),
        "left": occ.addLine(p[3], p[4]),
        "hole": occ.addCircleArc(p[4], centre, p[0]),
    }
    loop = occ.addCurveLoop([curves[s] for s in ("bottom", "right", "top", "left", "hole")])
    surfaces = [occ.addPlaneSurface([loop])]
    occ.remove([(0, centre)])
    occ.synchronize()
    assert gmsh.model.getType(1, curves["hole"]) == "Circle"
    assert is_segment(1, curves["left"], 0, 0.0) and is_segment(1, curves["bottom"], 1, 0.0)
    assert is_segment(1, curves["right"], 0, L) and is_segment(1, curves["top"], 1, L)
    assert len(gmsh.model.getEntities(1)) == 5 and len(gmsh.model.getEntities(2)) == 1
    names = plate_names()
    for side in ("left", "bottom", "right", "top", "hole"):
        gmsh.model.addPhysicalGroup(1, [curves[side]], names[side], side)
    gmsh.model.addPhysicalGroup(2, surfaces, names["plate"], "plate")

    # Exactly arc_segments equal segments on the arc; elsewhere the size is
    # h_hole + (h_far - h_hole) * min(d / GRADING_DISTANCE, 1), d the distance from the arc.
    gmsh.model.mesh.setTransfiniteCurve(curves["hole"], arc_segments + 1)
    field = gmsh.model.mesh.field
    dist = field.add("Distance")
    field.setNumbers(dist, "CurvesList", [curves["hole"]])
    field.setNumber(dist, "Sampling", 4 * arc_segments)
    thr = field.add("Threshold")
    field.setNumber(thr, "InField", dist)
    field.setNumber(thr, "SizeMin", h_hole)
    field.setNumber(thr, "SizeMax", h_far)
    field.setNumber(thr, "DistMin", 0.0)
    field.setNumber(thr, "DistMax", GRADING_DISTANCE)
    field.setAsBackgroundMesh(thr)
    gmsh.option.setNumber("Mesh.MeshSizeFromPoints", 0)
    gmsh.option.setNumber("Mesh.MeshSizeFromCurvature", 0)
    gmsh.option.setNumber("Mesh.MeshSizeExtendFromBoundary", 0)
    gmsh.model.mesh.generate(2)
    return {"h_hole": h_hole, "h_far": h_far, "arc_segments": arc_segments}


def two_layers_geometry():
    """The two rectangles, fragmented so that they share the interface curve; the groups."""
    occ = gmsh.model.occ
    a = occ.addRectangle(0, 0, 0, INTERFACE, HEIGHT)
    b = occ.addRectangle(INTERFACE, 0, 0, WIDTH - INTERFACE, HEIGHT)
    occ.fragment([(2, a)], [(2, b)])
    occ.synchronize()
    surfaces = sorted((gmsh.model.getBoundingBox(2, s)[0], s) for _, s in gmsh.model.getEntities(2))
    assert len(surfaces) == 2, surfaces
    copper, steel = surfaces[0][1], surfaces[1][1]
    hot, cold, sides, interface = [], [], [], []
    for _, c in gmsh.model.getEntities(1):
        if is_segment(1, c, 0, 0.0):
            hot.append(c)
        elif is_segment(1, c, 0, WIDTH):
            cold.append(c)
        elif is_segment(1, c, 0, INTERFACE):
            interface.append(c)
        elif is_segment(1, c, 1, 0.0) or is_segment(1, c, 1, HEIGHT):
            sides.append(c)
        else:
            raise AssertionError(f"curve {c} is on no side")
    assert (len(hot), len(cold), len(sides), len(interface)) == (1, 1, 4, 1)
    names = two_layer_names()
    gmsh.model.addPhysicalGroup(1, hot, names["hot"], "hot")
    gmsh.model.addPhysicalGroup(1, cold, names["cold"], "cold")
    gmsh.model.addPhysicalGroup(1, sorted(sides), names["sides"], "sides")
    gmsh.model.addPhysicalGroup(2, [copper], names["copper"], "copper")
    gmsh.model.addPhysicalGroup(2, [steel], names["steel"], "steel")
    return copper, steel


def two_layers():
    """Structured quadrilaterals: transfinite curves and surfaces, recombined."""
    copper, steel = two_layers_geometry()
    for _, c in gmsh.model.getEntities(1):
        b = gmsh.model.getBoundingBox(1, c)
        if b[4] - b[1] > b[3] - b[0]:  # vertical
            n = CELLS_Y
        else:
            n = CELLS_X[0] if b[3] <= INTERFACE + TOL else CELLS_X[1]
        gmsh.model.mesh.setTransfiniteCurve(c, n + 1)
    for s in (copper, steel):
        gmsh.model.mesh.setTransfiniteSurface(s)
        gmsh.model.mesh.setRecombine(2, s)
    gmsh.model.mesh.generate(2)


def two_layers_tri():
    """Unstructured triangles of size TRI_SIZE."""
    two_layers_geometry()
    gmsh.model.mesh.setSize(gmsh.model.getEntities(0), TRI_SIZE)
    gmsh.model.mesh.generate(2)


def save(name, binary):
    gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
    gmsh.option.setNumber("Mesh.Binary", binary)
    gmsh.option.setNumber("Mesh.SaveAll", 0)
    path = os.path.join(OUT, f"{name}.msh")
    gmsh.write(path)
    return path


def write(levels):
    os.makedirs(OUT, exist_ok=True)
    gmsh.initialize(sys.argv[:1])
    gmsh.option.setNumber("General.Terminal", 0)
    paths = []
    print(f"Gmsh {gmsh.__version__}")
    for k in range(1, levels + 1):
        name = f"plate_hole_{k}"
        start(name)
        p = plate_hole(k)
        paths.append(save(name, 1))
        print(f"{name}: {p['arc_segments']} arc segments, h_hole {p['h_hole']:.6g}, h_far {p['h_far']:.6g}")
        gmsh.model.remove()
    for make, binary in ((two_layers, 0), (two_layers_tri, 0)):
        start(make.__name__)
        make()
        paths.append(save(make.__name__, binary))
        gmsh.model.remove()
    gmsh.finalize()
    return paths


def triangle_min_angle(p):
    """Smallest angle (degrees) of the triangles with vertices p[:, 0], p[:, 1], p[:, 2]."""
    import numpy as np

    angles = []
    for i in range(3):
        u = p[:, (i + 1) % 3] - p[:, i]
        v = p[:, (i + 2) % 3] - p[:, i]
        c = np.einsum("ij,ij->i", u, v) / (np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1))
        angles.append(np.degrees(np.arccos(np.clip(c, -1, 1))))
    return float(np.min(angles))


def polygon_area(p):
    """Signed areas of the polygons with vertices p[:, 0], p[:, 1], ... (counter-clockwise > 0)."""
    import numpy as np

    x, y = p[..., 0], p[..., 1]
    return 0.5 * (x * np.roll(y, -1, axis=1) - y * np.roll(x, -1, axis=1)).sum(axis=1)


def check(path):
    """Reads the file back with meshio; prints its cells and groups; asserts the basics."""
    import meshio
    import numpy as np

    name = os.path.basename(path)[: -len(".msh")]
    mesh = meshio.read(path)
    pts = mesh.points
    names = {tag: n for n, (tag, dim) in mesh.field_data.items()}
    dims = {n: int(dim) for n, (tag, dim) in mesh.field_data.items()}
    size = os.path.getsize(path)
    print(f"{os.path.relpath(path)}: {size} bytes, {len(pts)} nodes")
    blocks = {}  # group name -> list of (cell type, connectivity)
    for block, phys in zip(mesh.cells, mesh.cell_data["gmsh:physical"]):
        for tag in np.unique(phys):
            blocks.setdefault(names[int(tag)], []).append((block.type, block.data[phys == tag]))
    for g in sorted(blocks, key=lambda g: (-dims[g], g)):
        counts = {}
        for t, d in blocks[g]:
            counts[t] = counts.get(t, 0) + len(d)
        print(f"  {g:8s} dim {dims[g]}: " + ", ".join(f"{n} {t}" for t, n in counts.items()))
    assert set(blocks) == set(names.values()), (set(blocks), names)
    assert np.allclose(pts[:, 2], 0.0)
    cells = [(t, d) for g in blocks if dims[g] == 2 for t, d in blocks[g]]
    used = np.unique(np.concatenate([d.ravel() for _, d in cells]))
    assert len(used) == len(pts), "nodes no cell uses"
    # No duplicate nodes (a conforming mesh shares them across material interfaces).
    assert len(np.unique(np.round(pts[:, :2], 12), axis=0)) == len(pts), "duplicate nodes"
    area = sum(polygon_area(pts[d][:, :, :2]).sum() for _, d in cells)
    min_signed = min(polygon_area(pts[d][:, :, :2]).min() for _, d in cells)
    assert min_signed > 0, "clockwise or degenerate cell"
    # Every boundary edge (an edge of one cell only) is in a dimension-1 group.
    edges = {}
    for _, d in cells:
        k = d.shape[1]
        for i in range(k):
            for e in np.sort(np.stack([d[:, i], d[:, (i + 1) % k]], axis=1), axis=1):
                key = (int(e[0]), int(e[1]))
                edges[key] = edges.get(key, 0) + 1
    boundary = {e for e, n in edges.items() if n == 1}
    tagged = set()
    for g in blocks:
        if dims[g] == 1:
            for _, d in blocks[g]:
                tagged.update((int(min(a, b)), int(max(a, b))) for a, b in d)
    assert boundary == tagged, "boundary edges and tagged edges differ"
    assert max(edges.values()) == 2
    tris = [d for t, d in cells if t == "triangle"]
    angle = f", min angle {triangle_min_angle(pts[np.concatenate(tris)]):.1f} deg" if tris else ""
    print(f"  area {area:.12g}{angle}")
    if name.startswith("plate_hole"):
        hole = np.unique(np.concatenate([d.ravel() for _, d in blocks["hole"]]))
        r = np.hypot(pts[hole, 0], pts[hole, 1])
        dev = float(np.max(np.abs(r - A)))
        print(f"  hole: {len(hole)} nodes, max |r - a| = {dev:.3g}")
        assert dev < 1e-12, dev
        # The polygonal arc cuts off a little of the disk: the area is slightly larger.
        n = len(hole) - 1
        exact = L * L - n / 2 * A * A * math.sin(math.pi / 2 / n)
        assert abs(area - exact) < 1e-9, (area, exact)
    else:
        assert abs(area - WIDTH * HEIGHT) < 1e-12, area
        on_interface = np.sum(np.abs(pts[:, 0] - INTERFACE) < 1e-12)
        print(f"  interface x = {INTERFACE}: {on_interface} nodes (shared by both materials)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--levels", type=int, default=PLATE_LEVELS, help="plate levels 1..N (default %(default)s)")
    ap.add_argument("--check", action="store_true", help="read every file back with meshio and print it")
    ap.add_argument("--check-only", action="store_true", help="check the existing files, write nothing")
    args = ap.parse_args()
    if args.check_only:
        paths = [os.path.join(OUT, f"plate_hole_{k}.msh") for k in range(1, args.levels + 1)]
        paths += [os.path.join(OUT, f"{n}.msh") for n in ("two_layers", "two_layers_tri")]
    else:
        paths = write(args.levels)
    if args.check or args.check_only:
        for p in paths:
            check(p)
    total = sum(os.path.getsize(p) for p in paths)
    print(f"{len(paths)} files, {total} bytes")


if __name__ == "__main__":
    main()

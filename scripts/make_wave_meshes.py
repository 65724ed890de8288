#!/usr/bin/env python3
"""Writes the Gmsh mesh of the wave example to examples/meshes/.

wave_layers.msh (MSH 4.1 ASCII, unstructured quadrilaterals): a 2-D cross-section of an
ultrasonic inspection, 40 mm x 20 mm (x in [0, 0.04], y in [-0.02, 0]), two solids
separated by a curved interface y = -0.008 - 0.002 sin(2 pi x / 0.04): `aluminium` above
it (tag 10) and `steel` below (tag 11). Boundary groups: `top` (y = 0, tag 1, the free
surface the transducer sits on), `sides` (x = 0 and x = 0.04, tag 2) and `bottom`
(y = -0.02, tag 3), absorbing in the example. The cells are quadrilaterals from Gmsh's
recombination (frontal-Delaunay for quads, Blossom), size 0.8 mm, curved along the
interface by its 40-segment spline; the meshing options are fixed (one thread, set
algorithms), so the file is the same on every run with the same Gmsh version.

Usage (from the repository root):  pip install gmsh && python3 scripts/make_wave_meshes.py
"""

import math
import os

import gmsh

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "meshes")
W, H = 0.04, 0.02
SIZE = 0.0008
INTERFACE_POINTS = 40


def interface_y(x):
    return -0.008 - 0.002 * math.sin(2.0 * math.pi * x / W)


def main():
    gmsh.initialize()
    gmsh.option.setNumber("General.Terminal", 0)
    gmsh.option.setNumber("General.NumThreads", 1)
    gmsh.model.add("wave_layers")
    geo = gmsh.model.geo
    p_tl = geo.addPoint(0, 0, 0, SIZE)
    p_tr = geo.addPoint(W, 0, 0, SIZE)
    p_bl = geo.addPoint(0, -H, 0, SIZE)
    p_br = geo.addPoint(W, -H, 0, SIZE)
    xs = [W * i / INTERFACE_POINTS for i in range(INTERFACE_POINTS + 1)]
    ip = [geo.addPoint(x, interface_y(x), 0, SIZE) for x in xs]
    top = geo.addLine(p_tl, p_tr)
    right_upper = geo.addLine(p_tr, ip[-1])
    interface = geo.addSpline(ip)
    left_upper = geo.addLine(ip[0], p_tl)
    right_lower = geo.addLine(ip[-1], p_br)
    bottom = geo.addLine(p_br, p_bl)
    left_lower = geo.addLine(p_bl, ip[0])
    upper = geo.addPlaneSurface([geo.addCurveLoop([top, right_upper, -interface, left_upper])])
    lower = geo.addPlaneSurface([geo.addCurveLoop([interface, right_lower, bottom, left_lower])])
    geo.synchronize()
    gmsh.model.addPhysicalGroup(2, [upper], 10, "aluminium")
    gmsh.model.addPhysicalGroup(2, [lower], 11, "steel")
    gmsh.model.addPhysicalGroup(1, [top], 1, "top")
    gmsh.model.addPhysicalGroup(1, [right_upper, left_upper, right_lower, left_lower], 2, "sides")
    gmsh.model.addPhysicalGroup(1, [bottom], 3, "bottom")
    gmsh.option.setNumber("Mesh.Algorithm", 8)
    gmsh.option.setNumber("Mesh.RecombinationAlgorithm", 1)
    gmsh.option.setNumber("Mesh.RecombineAll", 1)
    gmsh.option.setNumber("Mesh.SubdivisionAlgorithm", 0)
    gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
    gmsh.option.setNumber("Mesh.Binary", 0)
    gmsh.option.setNumber("Mesh.SaveAll", 0)
    gmsh.model.mesh.generate(2)
    types, tags, _ = gmsh.model.mesh.getElements(2)
    counts = {gmsh.model.mesh.getElementProperties(t)[0]: len(e) for t, e in zip(types, tags)}
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "wave_layers.msh")
    gmsh.write(path)
    gmsh.finalize()
    print(f"wrote {path}: {counts}")


if __name__ == "__main__":
    main()

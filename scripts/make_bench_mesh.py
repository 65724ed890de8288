#!/usr/bin/env python3
"""Writes tests/data/gmsh/plate_hole_hex_v41_binary.msh: an unstructured hexahedral mesh of a
plate with a cylindrical hole (2 x 1 x 0.5, hole radius 0.25), made by Gmsh's tetrahedral
mesher and its all-hexahedra subdivision, so that no two cells need share local axes.

It is the "real mesh" of the benchmarks (`ferrofem bench bp1 --mesh FILE --refine N`) and of
the refinement tests: small enough to commit, refined uniformly to any size.

Usage (from the repository root):  pip install gmsh && python3 scripts/make_bench_mesh.py
"""

import os

import gmsh

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "gmsh")

gmsh.initialize()
gmsh.option.setNumber("General.Terminal", 0)
gmsh.model.add("plate_hole")
box = gmsh.model.occ.addBox(0, 0, 0, 2, 1, 0.5)
cyl = gmsh.model.occ.addCylinder(1, 0.5, -0.1, 0, 0, 0.7, 0.25)
gmsh.model.occ.cut([(3, box)], [(3, cyl)])
gmsh.model.occ.synchronize()
gmsh.model.addPhysicalGroup(3, [t for _, t in gmsh.model.getEntities(3)], 1, "solid")
hole, outer = [], []
for _, s in gmsh.model.getEntities(2):
    (hole if gmsh.model.getType(2, s) == "Cylinder" else outer).append(s)
gmsh.model.addPhysicalGroup(2, outer, 2, "outer")
gmsh.model.addPhysicalGroup(2, hole, 3, "hole")
gmsh.model.mesh.setSize(gmsh.model.getEntities(0), 0.2)
gmsh.option.setNumber("Mesh.SubdivisionAlgorithm", 2)
gmsh.model.mesh.generate(3)
gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
gmsh.option.setNumber("Mesh.Binary", 1)
gmsh.write(os.path.join(OUT, "plate_hole_hex_v41_binary.msh"))
print("gmsh", gmsh.__version__)
gmsh.finalize()

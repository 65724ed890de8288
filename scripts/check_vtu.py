#!/usr/bin/env python3
"""Read .vtu files with meshio (an independent reader) and summarise them.

Usage: python3 scripts/check_vtu.py FILE.vtu [FILE.vtu ...]

For each file prints one line:
    <file>: points=<n> cells=<type>:<count>[,...] point_data=<names> cell_data=<names>
and checks that every cell refers to existing points and every data array has one
tuple per point/cell. Exits with status 1 if any file fails to read or check, 2 if
meshio is missing or no file was given.
"""
import sys


def summarise(path, meshio):
    mesh = meshio.read(path)
    npoints = len(mesh.points)
    if mesh.points.ndim != 2 or mesh.points.shape[1] != 3:
        raise ValueError(f"points have shape {mesh.points.shape}, expected (n, 3)")
    blocks = []
    for block in mesh.cells:
        data = block.data
        if len(data) and (data.min() < 0 or data.max() >= npoints):
            raise ValueError(f"{block.type} cells refer to points outside 0..{npoints}")
        blocks.append((block.type, len(data)))
    ncells = sum(n for _, n in blocks)
    for name, values in mesh.point_data.items():
        if len(values) != npoints:
            raise ValueError(f"point data {name!r} has {len(values)} tuples, expected {npoints}")
    for name, per_block in mesh.cell_data.items():
        n = sum(len(v) for v in per_block)
        if n != ncells:
            raise ValueError(f"cell data {name!r} has {n} tuples, expected {ncells}")
    cells = ",".join(f"{t}:{n}" for t, n in blocks)
    point_names = ",".join(sorted(mesh.point_data))
    cell_names = ",".join(sorted(mesh.cell_data))
    return f"points={npoints} cells={cells} point_data={point_names} cell_data={cell_names}"


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import meshio
    except ImportError:
        print("check_vtu.py: meshio is not installed (pip install meshio)", file=sys.stderr)
        return 2
    failed = 0
    for path in argv[1:]:
        try:
            print(f"{path}: {summarise(path, meshio)}")
        except Exception as e:  # report every file, then fail
            print(f"{path}: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Compare a distributed snapshot (.pvtu over per-rank .vtu pieces) with the serial one.

Usage: python3 scripts/check_pvtu.py PARALLEL.pvtu SERIAL.vtu FIELD TOLERANCE

Reads the pieces the .pvtu lists and the serial file with meshio (an independent reader),
matches their points by coordinates and checks that
- every serial point is in some piece, and every piece point is a serial point;
- the point field FIELD agrees at every piece point within TOLERANCE times its largest
  serial value;
- the pieces' cells, counted once per global cell_id, number the serial file's cells.
Prints one summary line; exits with status 1 on a mismatch, 2 on bad usage or no meshio.
"""
import os
import sys
import xml.etree.ElementTree as ET


def key(p):
    return tuple(round(float(c), 12) for c in p)


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    pvtu, serial_path, field, tol = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    try:
        import meshio
    except ImportError:
        print("meshio is missing: pip install meshio")
        return 2
    root = ET.parse(pvtu).getroot()
    grid = root.find("PUnstructuredGrid")
    pieces = [p.get("Source") for p in grid.findall("Piece")]
    folder = os.path.dirname(pvtu)
    serial = meshio.read(serial_path)
    values = serial.point_data[field].reshape(len(serial.points), -1)
    at = {key(p): values[i] for i, p in enumerate(serial.points)}
    scale = max(abs(values).max(), 1e-300)
    seen = set()
    cells = set()
    worst = 0.0
    for name in pieces:
        piece = meshio.read(os.path.join(folder, name))
        pv = piece.point_data[field].reshape(len(piece.points), -1)
        for i, p in enumerate(piece.points):
            k = key(p)
            if k not in at:
                print(f"{name}: point {p} is not a point of the serial file")
                return 1
            seen.add(k)
            worst = max(worst, abs(pv[i] - at[k]).max() / scale)
        for ids in piece.cell_data["cell_id"]:
            cells.update(int(c) for c in ids.ravel())
    serial_cells = set()
    for ids in serial.cell_data["cell_id"]:
        serial_cells.update(int(c) for c in ids.ravel())
    if len(seen) != len(at):
        print(f"the pieces hold {len(seen)} of the serial file's {len(at)} points")
        return 1
    if cells != serial_cells:
        print(f"the pieces hold {len(cells)} cells, the serial file {len(serial_cells)}")
        return 1
    print(f"{pvtu}: {len(pieces)} pieces, {len(seen)} points, {len(cells)} cells, "
          f"{field} differs by {worst:.1e} of its largest value")
    return 0 if worst <= tol else 1


if __name__ == "__main__":
    sys.exit(main())

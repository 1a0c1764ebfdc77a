#!/usr/bin/env python3
"""Regenerates src/http/assets/coast.js, the page's world map, from
world-atlas@2.0.2's land-110m.json (Natural Earth 1:110m land, public
domain; world-atlas is ISC, (c) Michael Bostock).

    npm pack world-atlas@2.0.2 && tar xzf world-atlas-2.0.2.tgz
    python3 src/http/assets/coastline.py package/land-110m.json > src/http/assets/coast.js

It decodes the TopoJSON arcs (quantized, delta-encoded) into one closed
line per ring, in tenths of a degree, dropping points that round onto
the previous one.
"""
import json
import sys


def main(path):
    topo = json.load(open(path))
    (sx, sy), (tx, ty) = topo["transform"]["scale"], topo["transform"]["translate"]
    arcs = []
    for arc in topo["arcs"]:
        x = y = 0
        pts = []
        for dx, dy in arc:
            x += dx
            y += dy
            pts.append((x * sx + tx, y * sy + ty))
        arcs.append(pts)

    def ring(indexes):
        out = []
        for i in indexes:
            pts = arcs[i] if i >= 0 else list(reversed(arcs[~i]))
            out.extend(pts if not out else pts[1:])
        return out

    rings = []
    for geom in topo["objects"]["land"]["geometries"]:
        polys = geom["arcs"] if geom["type"] == "MultiPolygon" else [geom["arcs"]]
        for poly in polys:
            for r in poly:
                flat, last = [], None
                for lon, lat in ring(r):
                    p = (round(lon * 10), round(lat * 10))
                    if p != last:
                        flat.extend(p)
                        last = p
                if len(flat) >= 8:
                    rings.append(flat)
    print("// The world's land, for the page's map: Natural Earth 1:110m land (public")
    print("// domain) from world-atlas@2.0.2 (ISC, (c) 2013-2019 Michael Bostock),")
    print("// decoded by src/http/assets/coastline.py into closed rings of lon,lat in tenths of")
    print("// a degree. Regenerate with that script; do not edit by hand.")
    print("const COAST = " + json.dumps(rings, separators=(",", ":")) + ";")


main(sys.argv[1])

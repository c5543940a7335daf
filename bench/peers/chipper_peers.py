"""The chip loop a GDAL user writes, timed beside `rasterflow chip` (bench/peers/chipper.peers.ts).

Usage: /usr/bin/python3 chipper_peers.py RASTER OUTDIR TILE RUNS [keep]  (RUNS timed runs; the caller warms up)
Every TILE x TILE window of RASTER, row by row: ReadAsArray, a GTiff DEFLATE chip with its
georeference (geotransform and SRS), and a small PASCAL VOC XML per chip (no objects). One thread.
Prints one JSON line: {"peer": "gdal-loop", "op": "chipper", "chips", "medianMs", "mpxPerSec"} where
mpxPerSec carries chips per minute, or {"peer", "skipped": reason}. With `keep` the chips of the last
run are left in OUTDIR for the caller to remove after every timed run (see chipper.peers.ts).
"""
import json
import os
import shutil
import sys
import time

try:
    from osgeo import gdal
except ImportError as e:
    print(json.dumps({"peer": "gdal-loop", "skipped": f"GDAL's Python bindings are missing: {e}"}))
    sys.exit(0)

VOC = """<annotation>
  <filename>{name}</filename>
  <size><width>{w}</width><height>{h}</height><depth>{d}</depth></size>
</annotation>
"""


def chip_loop(raster, out, tile):
    # The loop itself: about twenty lines, as a user writes it.
    ds = gdal.Open(raster)
    gt, srs, bands = ds.GetGeoTransform(), ds.GetProjection(), ds.RasterCount
    drv = gdal.GetDriverByName("GTiff")
    os.makedirs(f"{out}/images", exist_ok=True)
    os.makedirs(f"{out}/labels", exist_ok=True)
    n = 0
    for y in range(0, ds.RasterYSize - tile + 1, tile):
        for x in range(0, ds.RasterXSize - tile + 1, tile):
            a = ds.ReadAsArray(x, y, tile, tile)
            name = f"{n:09d}"
            c = drv.Create(f"{out}/images/{name}.tif", tile, tile, bands, gdal.GDT_Byte, ["COMPRESS=DEFLATE"])
            c.SetGeoTransform((gt[0] + x * gt[1], gt[1], 0, gt[3] + y * gt[5], 0, gt[5]))
            c.SetProjection(srs)
            c.WriteRaster(0, 0, tile, tile, a.tobytes())
            c = None
            with open(f"{out}/labels/{name}.xml", "w") as f:
                f.write(VOC.format(name=f"{name}.tif", w=tile, h=tile, d=bands))
            n += 1
    return n


def main():
    raster, out, tile, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    keep = len(sys.argv) > 5 and sys.argv[5] == "keep"
    gdal.SetConfigOption("GDAL_NUM_THREADS", "1")
    times = []
    chips = 0
    for _ in range(runs):
        shutil.rmtree(out, ignore_errors=True)
        t = time.perf_counter()
        chips = chip_loop(raster, out, tile)
        times.append((time.perf_counter() - t) * 1000)
    if not keep:
        shutil.rmtree(out, ignore_errors=True)
    times.sort()
    ms = times[len(times) // 2]
    print(json.dumps({"peer": "gdal-loop", "op": "chipper", "chips": chips, "medianMs": ms, "mpxPerSec": chips / (ms / 60000)}))


main()

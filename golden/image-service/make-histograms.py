#!/usr/bin/python3
"""Reference statistics and histograms for the image service's computeStatisticsHistograms
(src/adapters/image/histograms.test.ts): GDAL rasterizes each geometry (pixel centres, no
ALL_TOUCHED) on the DEM's own grid, numpy computes the statistics of the valid pixels inside.

Geometries: an envelope given in EPSG:4326 (reprojected to the raster's UTM 16N, each side
densified into 16 segments exactly as the service does) and a polygon with a hole in the raster's
own SR. Histograms: 256 bins over [min, max], the last bin closed (numpy.histogram), as the engine
bins float data. Run: /usr/bin/python3 golden/image-service/make-histograms.py
"""
import json
import os

import numpy as np
from osgeo import gdal, ogr, osr

gdal.UseExceptions()
HERE = os.path.dirname(os.path.abspath(__file__))
DEM = os.environ.get('DEM', '/work/shared/data/jacksboro_fault_dem_utm16n_75m.tif')

ENVELOPE_4326 = {'xmin': -84.35, 'ymin': 36.5, 'xmax': -84.2, 'ymax': 36.65}
POLYGON_UTM = [
    [[735000, 4065000], [755000, 4062000], [752000, 4042000], [738000, 4045000], [735000, 4065000]],
    [[742000, 4058000], [746000, 4058000], [746000, 4052000], [742000, 4052000], [742000, 4058000]],
]
DENSIFY = 16


def envelope_ring(e, src_epsg, dst_wkt):
    src = osr.SpatialReference()
    src.ImportFromEPSG(src_epsg)
    src.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    dst = osr.SpatialReference()
    dst.ImportFromWkt(dst_wkt)
    dst.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    ct = osr.CoordinateTransformation(src, dst)
    pts = []
    sides = [
        (e['xmin'], e['ymax'], e['xmax'], e['ymax']),
        (e['xmax'], e['ymax'], e['xmax'], e['ymin']),
        (e['xmax'], e['ymin'], e['xmin'], e['ymin']),
        (e['xmin'], e['ymin'], e['xmin'], e['ymax']),
    ]
    for x0, y0, x1, y1 in sides:
        for i in range(DENSIFY):
            x = x0 + (x1 - x0) * i / DENSIFY
            y = y0 + (y1 - y0) * i / DENSIFY
            px, py, _ = ct.TransformPoint(x, y)
            pts.append([px, py])
    pts.append(pts[0])
    return [pts]


def stats(ds, rings):
    band = ds.GetRasterBand(1)
    data = band.ReadAsArray().astype(np.float64)
    nodata = band.GetNoDataValue()
    mem = gdal.GetDriverByName('MEM').Create('', ds.RasterXSize, ds.RasterYSize, 1, gdal.GDT_Byte)
    mem.SetGeoTransform(ds.GetGeoTransform())
    mem.SetProjection(ds.GetProjection())
    vds = ogr.GetDriverByName('Memory').CreateDataSource('')
    srs = osr.SpatialReference()
    srs.ImportFromWkt(ds.GetProjection())
    layer = vds.CreateLayer('g', srs, ogr.wkbPolygon)
    poly = ogr.Geometry(ogr.wkbPolygon)
    for r in rings:
        ring = ogr.Geometry(ogr.wkbLinearRing)
        for x, y in r:
            ring.AddPoint_2D(x, y)
        poly.AddGeometry(ring)
    f = ogr.Feature(layer.GetLayerDefn())
    f.SetGeometry(poly)
    layer.CreateFeature(f)
    gdal.RasterizeLayer(mem, [1], layer, burn_values=[1])
    inside = mem.GetRasterBand(1).ReadAsArray() == 1
    valid = inside & np.isfinite(data)
    if nodata is not None:
        valid &= data != nodata
    v = data[valid]
    lo, hi = float(v.min()), float(v.max())
    counts, _ = np.histogram(v, bins=256, range=(lo, hi))
    return {
        'count': int(v.size),
        'min': lo,
        'max': hi,
        'mean': float(v.mean()),
        'standardDeviation': float(v.std()),
        'histogram': {'size': 256, 'min': lo, 'max': hi, 'counts': [int(c) for c in counts]},
    }


def main():
    ds = gdal.Open(DEM)
    out = {
        'provenance': {
            'tool': 'GDAL ' + gdal.__version__ + ' RasterizeLayer + numpy ' + np.__version__,
            'script': 'golden/image-service/make-histograms.py',
        },
        'envelope4326': {'geometry': ENVELOPE_4326, **stats(ds, envelope_ring(ENVELOPE_4326, 4326, ds.GetProjection()))},
        'polygonUtm': {'geometry': {'rings': POLYGON_UTM}, **stats(ds, POLYGON_UTM)},
    }
    with open(os.path.join(HERE, 'histograms.json'), 'w') as fh:
        json.dump(out, fh, indent=1)
        fh.write('\n')


if __name__ == '__main__':
    main()

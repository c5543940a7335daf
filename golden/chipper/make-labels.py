#!/usr/bin/env python3
"""Write l7-labels.geojson: hand-drawn label polygons over golden/data/L7_ETMs.tif, in WGS 84.

The polygons were drawn by eye on an RGB (3,2,1) view of the Landsat 7 image, in pixel
coordinates (column, row); this script turns them into SIRGAS 2000 / UTM 25S map coordinates
(the raster's geotransform) and then into WGS 84 longitude/latitude with GDAL/OSR, as GeoJSON
requires. Classes: 1 water (the ocean and two lakes), 2 built (two urban areas, one with a hole).
Run with /usr/bin/python3 (needs python3-gdal).
"""
import json
from osgeo import gdal, osr

src = gdal.Open('golden/data/L7_ETMs.tif')
gt = src.GetGeoTransform()
s = osr.SpatialReference(); s.ImportFromEPSG(31985)
t = osr.SpatialReference(); t.ImportFromEPSG(4326); t.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
s.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
ct = osr.CoordinateTransformation(s, t)

def ring(pixels):
    pts = []
    for c, r in pixels + [pixels[0]]:
        x = gt[0] + c * gt[1]
        y = gt[3] + r * gt[5]
        lon, lat, _ = ct.TransformPoint(x, y)
        pts.append([round(lon, 9), round(lat, 9)])
    return pts

features = [
    ('water', 1, [[(349, 40), (320, 120), (300, 180), (268, 255), (238, 288), (212, 318), (205, 352), (349, 352)]]),
    ('water', 1, [[(8, 176), (28, 174), (30, 192), (12, 196)]]),
    ('water', 1, [[(196, 188), (215, 186), (218, 205), (200, 208)]]),
    ('built', 2, [[(0, 250), (120, 240), (160, 300), (150, 352), (0, 352)]]),
    ('built', 2, [[(240, 60), (300, 50), (300, 150), (250, 160)], [(260, 90), (280, 90), (280, 110), (260, 110)]]),
]
fc = {'type': 'FeatureCollection', 'features': [
    {'type': 'Feature', 'properties': {'classvalue': v, 'classname': n},
     'geometry': {'type': 'Polygon', 'coordinates': [ring(r) for r in rings]}}
    for n, v, rings in features]}
with open('golden/chipper/l7-labels.geojson', 'w') as f:
    json.dump(fc, f, indent=1)

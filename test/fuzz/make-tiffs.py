#!/usr/bin/python3
"""
The seed GeoTIFFs of test/fuzz/geotiff.test.ts: sixteen 37 x 29 rasters (a few KB each) covering
strips and tiles, no compression, DEFLATE, LZW, PackBits, JPEG, LERC (bare, DEFLATE, ZSTD) and
ZSTD, predictors 2 and 3, 1-4 bands,
pixel and band interleaving, Byte to Float64, big-endian, BigTIFF, overviews and an internal
mask. Run with /usr/bin/python3 (GDAL):

  test/fuzz/make-tiffs.py test/fuzz/tiffs
"""
import os
import sys

import numpy as np
from osgeo import gdal, osr

gdal.UseExceptions()
gdal.SetConfigOption('GDAL_PAM_ENABLED', 'NO')
gdal.SetConfigOption('GDAL_TIFF_INTERNAL_MASK', 'YES')

TILED16 = ['TILED=YES', 'BLOCKXSIZE=16', 'BLOCKYSIZE=16']
CASES = [
    ('u8-deflate-tiled-ov', gdal.GDT_Byte, 1, ['COMPRESS=DEFLATE'] + TILED16, True),
    ('u16-lzw-pred2-strip', gdal.GDT_UInt16, 2, ['COMPRESS=LZW', 'PREDICTOR=2', 'BLOCKYSIZE=7'], False),
    ('s16-packbits-tiled', gdal.GDT_Int16, 1, ['COMPRESS=PACKBITS', 'TILED=YES', 'BLOCKXSIZE=16', 'BLOCKYSIZE=32'], True),
    ('f32-deflate-pred3-tiled', gdal.GDT_Float32, 1, ['COMPRESS=DEFLATE', 'PREDICTOR=3', 'TILED=YES', 'BLOCKXSIZE=32', 'BLOCKYSIZE=16'], True),
    ('f64-none-strip', gdal.GDT_Float64, 1, ['BLOCKYSIZE=5'], False),
    ('u8x3-lzw-strip-ov', gdal.GDT_Byte, 3, ['COMPRESS=LZW', 'BLOCKYSIZE=4'], True),
    ('u8x4-none-tiled-band', gdal.GDT_Byte, 4, TILED16 + ['INTERLEAVE=BAND'], False),
    ('s32-deflate-strip-be', gdal.GDT_Int32, 2, ['COMPRESS=DEFLATE', 'ENDIANNESS=BIG', 'BLOCKYSIZE=9'], False),
    ('u16-none-tiled-bigtiff', gdal.GDT_UInt16, 1, TILED16 + ['BIGTIFF=YES'], False),
    ('u8-packbits-strip-mask', gdal.GDT_Byte, 1, ['COMPRESS=PACKBITS', 'BLOCKYSIZE=8'], False),
    # The codecs geotiff.js decodes (JPEG, LERC; ZSTD through the zstd decoder it bundles): real
    # streams for the mutations to corrupt, not only a compression tag rewritten over other data.
    ('u8-jpeg-tiled', gdal.GDT_Byte, 1, ['COMPRESS=JPEG'] + TILED16, False),
    ('u8x3-jpeg-strip-rgb', gdal.GDT_Byte, 3, ['COMPRESS=JPEG', 'PHOTOMETRIC=RGB', 'BLOCKYSIZE=16'], False),
    ('u16-lerc-tiled', gdal.GDT_UInt16, 1, ['COMPRESS=LERC', 'MAX_Z_ERROR=0'] + TILED16, False),
    ('f32-lerc-zstd-strip', gdal.GDT_Float32, 1, ['COMPRESS=LERC_ZSTD', 'MAX_Z_ERROR=0', 'BLOCKYSIZE=8'], False),
    ('u8x2-lerc-deflate-tiled', gdal.GDT_Byte, 2, ['COMPRESS=LERC_DEFLATE', 'MAX_Z_ERROR=0'] + TILED16, False),
    ('s16-zstd-pred2-strip', gdal.GDT_Int16, 1, ['COMPRESS=ZSTD', 'PREDICTOR=2', 'BLOCKYSIZE=6'], False),
]
W, H = 37, 29


def main(out):
    os.makedirs(out, exist_ok=True)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32616)
    rng = np.random.default_rng(7)
    for name, gdt, bands, opts, overviews in CASES:
        path = os.path.join(out, name + '.tif')
        ds = gdal.GetDriverByName('GTiff').Create(path, W, H, bands, gdt, opts)
        ds.SetGeoTransform([500000, 30, 0, 4000000, 0, -30])
        ds.SetProjection(srs.ExportToWkt())
        for b in range(bands):
            a = np.add.outer(np.arange(H), np.arange(W)) * (b + 1) + rng.integers(0, 5, (H, W))
            if gdt in (gdal.GDT_Int16, gdal.GDT_Int32):
                a = a - 40
            ds.GetRasterBand(b + 1).WriteArray(a.astype(np.float64))
        ds.GetRasterBand(1).SetNoDataValue(3)
        if name.endswith('mask'):
            ds.CreateMaskBand(gdal.GMF_PER_DATASET)
            m = np.full((H, W), 255, np.uint8)
            m[:5, :5] = 0
            ds.GetRasterBand(1).GetMaskBand().WriteArray(m)
        if overviews:
            ds.BuildOverviews('AVERAGE', [2, 4])
        ds = None
        print(path)


if __name__ == '__main__':
    main(sys.argv[1])

#!/usr/bin/python3
"""
GeoTIFF files made and read by GDAL (python osgeo), for src/io/tiff-reader.test.ts and
src/io/tiff-stream-writer.test.ts. Run with /usr/bin/python3; GDAL_PAM_ENABLED=NO is set here.

  gdal-tiffs.py make <dir>   writes a matrix of small GeoTIFFs (every pixel type, tiled and
                             stripped, little and big endian, every compression and predictor
                             GDAL 3.6 writes, NBITS, pixel/band interleaving, BigTIFF, sparse
                             blocks, overviews, internal masks, COG) plus, for each, GDAL's
                             ReadAsArray of every band (and of its mask and first overview) as
                             raw little-endian bytes, and <dir>/manifest.json describing them.
  gdal-tiffs.py dump <file> <out-prefix> [<file> <out-prefix> ...]
                             prints one line of JSON per file (size, type, geotransform, EPSG, NoData, metadata,
                             block size, compression, overviews, mask flags, COG validation)
                             and writes <out-prefix>.b<n>.raw (bands), .mask.raw, .ov<k>.b<n>.raw.
"""
import json
import os
import sys

import numpy as np
from osgeo import gdal, osr

gdal.UseExceptions()
gdal.SetConfigOption('GDAL_PAM_ENABLED', 'NO')
gdal.SetConfigOption('GDAL_TIFF_INTERNAL_MASK', 'YES')

TYPES = {
    'U8': (gdal.GDT_Byte, np.uint8),
    'S8': (gdal.GDT_Byte, np.int8),  # PIXELTYPE=SIGNEDBYTE in GDAL 3.6
    'U16': (gdal.GDT_UInt16, np.uint16),
    'S16': (gdal.GDT_Int16, np.int16),
    'U32': (gdal.GDT_UInt32, np.uint32),
    'S32': (gdal.GDT_Int32, np.int32),
    'F32': (gdal.GDT_Float32, np.float32),
    'F64': (gdal.GDT_Float64, np.float64),
    'CI16': (gdal.GDT_CInt16, np.complex64),
    'CI32': (gdal.GDT_CInt32, np.complex128),
    'C64': (gdal.GDT_CFloat32, np.complex64),
    'C128': (gdal.GDT_CFloat64, np.complex128),
}
W, H = 70, 45


def pixels(t, bands, seed=7):
    rng = np.random.default_rng(seed)
    gtype, dtype = TYPES[t]
    out = []
    for b in range(bands):
        y, x = np.mgrid[0:H, 0:W]
        if t in ('F32', 'F64'):
            a = (np.sin(x / 7.0 + b) * 1000 + y * 3.25 + rng.normal(0, 0.01, (H, W))).astype(dtype)
        elif t in ('C64', 'C128'):
            a = (x * 1.5 + y + b + 1j * (y * 0.25 - x)).astype(dtype)
        elif t in ('CI16', 'CI32'):
            a = ((x * 3 - y + b) + 1j * (y * 2 - x * 5)).astype(dtype)
        else:
            info = np.iinfo(dtype)
            lo, hi = max(int(info.min), -100000), min(int(info.max), 100000)
            a = rng.integers(lo, hi, (H, W), endpoint=True).astype(dtype)
            a[5:15, 10:30] = (x[5:15, 10:30] + y[5:15, 10:30]).astype(dtype)  # smooth part for predictors
        out.append(a)
    return out


def create(path, t, bands, options, arrays=None, nodata=None, nbits=None, mask=None, overviews=None):
    gtype, dtype = TYPES[t]
    opts = list(options)
    if t == 'S8':
        opts.append('PIXELTYPE=SIGNEDBYTE')
    ds = gdal.GetDriverByName('GTiff').Create(path, W, H, bands, gtype, opts)
    ds.SetGeoTransform((500000.0, 30.0, 0.0, 4100000.0, 0.0, -30.0))
    sr = osr.SpatialReference()
    sr.ImportFromEPSG(32616)
    ds.SetProjection(sr.ExportToWkt())
    arrays = arrays if arrays is not None else pixels(t, bands)
    for b in range(bands):
        band = ds.GetRasterBand(b + 1)
        if nodata is not None:
            band.SetNoDataValue(nodata)
        a = arrays[b]
        if t == 'S8':
            a = a.view(np.uint8)
        band.WriteArray(a)
    if mask is not None:
        ds.CreateMaskBand(gdal.GMF_PER_DATASET)
        ds.GetRasterBand(1).GetMaskBand().WriteArray(mask)
    if overviews:
        ds.BuildOverviews('NEAREST', overviews)
    ds = None


def dump_arrays(path, prefix):
    """Band arrays (and mask, first overview) as raw little-endian bytes; returns a description."""
    ds = gdal.Open(path)
    md = ds.GetMetadata('IMAGE_STRUCTURE')
    b1 = ds.GetRasterBand(1)
    signed = b1.GetMetadataItem('PIXELTYPE', 'IMAGE_STRUCTURE') == 'SIGNEDBYTE' or b1.DataType == getattr(gdal, 'GDT_Int8', -1)
    d = {
        'width': ds.RasterXSize,
        'height': ds.RasterYSize,
        'bands': ds.RasterCount,
        'type': gdal.GetDataTypeName(b1.DataType),
        'signedByte': bool(signed),
        'geotransform': list(ds.GetGeoTransform()),
        'epsg': None,
        'nodata': b1.GetNoDataValue(),
        'metadata': {k: v for k, v in (b1.GetMetadata() or {}).items()},
        'description': [ds.GetRasterBand(i + 1).GetDescription() for i in range(ds.RasterCount)],
        'block': b1.GetBlockSize(),
        'compression': md.get('COMPRESSION'),
        'interleave': md.get('INTERLEAVE'),
        'nbits': b1.GetMetadataItem('NBITS', 'IMAGE_STRUCTURE'),
        'overviews': [[b1.GetOverview(i).XSize, b1.GetOverview(i).YSize] for i in range(b1.GetOverviewCount())],
        'maskFlags': b1.GetMaskFlags(),
        'colorTable': None,
    }
    wkt = ds.GetProjection()
    if wkt:
        sr = osr.SpatialReference(wkt=wkt)
        sr.AutoIdentifyEPSG()
        d['epsg'] = sr.GetAuthorityCode(None)
    ct = b1.GetColorTable()
    if ct is not None:
        d['colorTable'] = [list(ct.GetColorEntry(i))[:3] for i in range(min(ct.GetCount(), 16))]
    for i in range(ds.RasterCount):
        a = ds.GetRasterBand(i + 1).ReadAsArray()
        if signed and a.dtype == np.uint8:
            a = a.view(np.int8)
        a.astype(a.dtype.newbyteorder('<')).tofile(f'{prefix}.b{i}.raw')
        if b1.GetOverviewCount() > 0:
            o = ds.GetRasterBand(i + 1).GetOverview(0).ReadAsArray()
            if signed and o.dtype == np.uint8:
                o = o.view(np.int8)
            o.astype(o.dtype.newbyteorder('<')).tofile(f'{prefix}.ov0.b{i}.raw')
    if b1.GetMaskFlags() == gdal.GMF_PER_DATASET:
        b1.GetMaskBand().ReadAsArray().astype(np.uint8).tofile(f'{prefix}.mask.raw')
    d['dtype'] = str(ds.GetRasterBand(1).ReadAsArray(0, 0, 1, 1).dtype)
    return d


def make(folder):
    os.makedirs(folder, exist_ok=True)
    cases = []

    def add(name, t, bands, options, **kw):
        path = os.path.join(folder, name + '.tif')
        create(path, t, bands, options, **kw)
        d = dump_arrays(path, os.path.join(folder, name))
        d.update({'name': name, 'path': path, 'pixelType': t, 'options': options})
        cases.append(d)

    for t in TYPES:
        complex_ = t.startswith('C')
        integer = not complex_ and t not in ('F32', 'F64')
        pred = [] if complex_ else ['PREDICTOR=2'] if integer else ['PREDICTOR=3']
        for layout, lo in (('tiled', ['TILED=YES', 'BLOCKXSIZE=32', 'BLOCKYSIZE=16']), ('strips', ['TILED=NO', 'BLOCKYSIZE=7'])):
            for endian in ('LITTLE', 'BIG'):
                for comp, co in (('none', ['COMPRESS=NONE']), ('deflate', ['COMPRESS=DEFLATE'] + pred)):
                    add(f'{t}-{layout}-{endian.lower()}-{comp}', t, 2, lo + co + [f'ENDIANNESS={endian}'])
    # Other compressions and predictors
    for t in ('U8', 'U16', 'S32', 'F32', 'F64'):
        integer = t not in ('F32', 'F64')
        for comp in ('LZW', 'PACKBITS', 'ZSTD'):
            for endian in ('LITTLE', 'BIG'):
                extra = ['PREDICTOR=2' if integer else 'PREDICTOR=3'] if comp != 'PACKBITS' else []
                add(f'{t}-{comp.lower()}-{endian.lower()}', t, 1, ['TILED=YES', 'BLOCKXSIZE=16', 'BLOCKYSIZE=16', f'COMPRESS={comp}', f'ENDIANNESS={endian}'] + extra)
    add('F32-lerc', 'F32', 1, ['TILED=YES', 'COMPRESS=LERC', 'MAX_Z_ERROR=0'])
    add('U16-lerc-deflate', 'U16', 1, ['COMPRESS=LERC_DEFLATE', 'MAX_Z_ERROR=0'])
    add('F32-pred2-lzw', 'F32', 1, ['COMPRESS=LZW', 'PREDICTOR=2'])
    add('U16-pred2-big-strips', 'U16', 3, ['COMPRESS=DEFLATE', 'PREDICTOR=2', 'ENDIANNESS=BIG', 'INTERLEAVE=PIXEL', 'BLOCKYSIZE=5'])
    add('F64-pred3-pixel-big', 'F64', 3, ['COMPRESS=DEFLATE', 'PREDICTOR=3', 'ENDIANNESS=BIG', 'INTERLEAVE=PIXEL', 'TILED=YES', 'BLOCKXSIZE=16', 'BLOCKYSIZE=16'])
    add('U8-rgb-pixel-lzw', 'U8', 3, ['COMPRESS=LZW', 'PREDICTOR=2', 'INTERLEAVE=PIXEL', 'PHOTOMETRIC=RGB'])
    add('S16-pixel-4bands-tiled', 'S16', 4, ['TILED=YES', 'BLOCKXSIZE=16', 'BLOCKYSIZE=32', 'INTERLEAVE=PIXEL', 'COMPRESS=DEFLATE', 'PREDICTOR=2'])
    # NBITS (packed), pixel- and band-interleaved, tiled and stripped, both byte orders
    for nb, t in ((1, 'U8'), (2, 'U8'), (4, 'U8'), (7, 'U8'), (12, 'U16'), (15, 'U16'), (24, 'U32')):
        arrays = [(a.astype(np.uint64) % (1 << nb)).astype(TYPES[t][1]) for a in pixels(t, 2)]
        add(f'nbits{nb}-band', t, 2, [f'NBITS={nb}', 'INTERLEAVE=BAND', 'ENDIANNESS=BIG'], arrays=arrays)
        add(f'nbits{nb}-pixel-tiled', t, 2, [f'NBITS={nb}', 'INTERLEAVE=PIXEL', 'TILED=YES', 'BLOCKXSIZE=16', 'BLOCKYSIZE=16', 'COMPRESS=DEFLATE'], arrays=arrays)
    half = [a.astype(np.float32) for a in pixels('F32', 1)]
    add('F32-nbits16-half', 'F32', 1, ['NBITS=16', 'COMPRESS=DEFLATE'], arrays=[np.float32(np.float16(half[0]))])
    # JPEG (lossy: compared to GDAL's own decode of the same file)
    add('U8-jpeg-gray', 'U8', 1, ['COMPRESS=JPEG', 'TILED=YES'])
    # NoData, internal mask, sparse blocks, BigTIFF, overviews
    nd = pixels('F32', 1)
    nd[0][3:9, 4:12] = -9999
    add('F32-nodata', 'F32', 1, ['COMPRESS=DEFLATE', 'TILED=YES', 'BLOCKXSIZE=16', 'BLOCKYSIZE=16'], arrays=nd, nodata=-9999)
    m = np.ones((H, W), np.uint8) * 255
    m[10:30, 20:50] = 0
    add('U16-mask', 'U16', 2, ['COMPRESS=DEFLATE', 'TILED=YES', 'BLOCKXSIZE=16', 'BLOCKYSIZE=16'], mask=m)
    sparse = [np.zeros((H, W), np.int16)]
    sparse[0][0:16, 0:16] = 7
    add('S16-sparse', 'S16', 1, ['SPARSE_OK=YES', 'TILED=YES', 'BLOCKXSIZE=16', 'BLOCKYSIZE=16'], arrays=sparse, nodata=-1)
    for t in ('U8', 'F64', 'C64'):
        add(f'{t}-bigtiff-big', t, 2, ['BIGTIFF=YES', 'ENDIANNESS=BIG', 'TILED=YES', 'BLOCKXSIZE=16', 'BLOCKYSIZE=16', 'COMPRESS=DEFLATE'])
        add(f'{t}-bigtiff-strips', t, 2, ['BIGTIFF=YES', 'BLOCKYSIZE=4'])
    add('S32-overviews', 'S32', 1, ['TILED=YES', 'BLOCKXSIZE=16', 'BLOCKYSIZE=16', 'COMPRESS=DEFLATE'], overviews=[2, 4])
    # A COG (GDAL's COG driver: ghost header, overviews, 128-pixel tiles) of a 300 x 200 DEM-like grid
    src = os.path.join(folder, 'cog-src.tif')
    ds = gdal.GetDriverByName('GTiff').Create(src, 300, 200, 1, gdal.GDT_Float32)
    ds.SetGeoTransform((500000.0, 30.0, 0.0, 4100000.0, 0.0, -30.0))
    y, x = np.mgrid[0:200, 0:300]
    ds.GetRasterBand(1).WriteArray((np.sin(x / 17.0) * 100 + y).astype(np.float32))
    ds = None
    cog = os.path.join(folder, 'F32-cog.tif')
    gdal.Translate(cog, src, format='COG', creationOptions=['BLOCKSIZE=128', 'COMPRESS=DEFLATE', 'PREDICTOR=YES', 'OVERVIEWS=AUTO', 'RESAMPLING=NEAREST'])
    os.unlink(src)
    d = dump_arrays(cog, os.path.join(folder, 'F32-cog'))
    d.update({'name': 'F32-cog', 'path': cog, 'pixelType': 'F32', 'options': ['COG']})
    cases.append(d)
    with open(os.path.join(folder, 'manifest.json'), 'w') as f:
        json.dump(cases, f, indent=1)
    print(len(cases))


def dump(path, prefix):
    d = dump_arrays(path, prefix)
    try:
        from osgeo_utils.samples import validate_cloud_optimized_geotiff as v
        warnings, errors, _ = v.validate(path, full_check=True)
        d['cogErrors'] = errors
        d['cogWarnings'] = warnings
    except Exception as e:  # noqa: BLE001 - the validator is optional
        d['cogErrors'] = None
        d['cogValidator'] = str(e)
    print(json.dumps(d))


if __name__ == '__main__':
    if sys.argv[1] == 'make':
        make(sys.argv[2])
    elif sys.argv[1] == 'dump':
        for i in range(2, len(sys.argv) - 1, 2):
            dump(sys.argv[i], sys.argv[i + 1])
    else:
        sys.exit(__doc__)

/**
 * Packed (U1/U2/U4), complex (C64/C128) and palette GeoTIFFs end to end: `rasterflow render` with
 * an outputPixelType (a real process, as a user runs it) writes the file; our reader reads the same
 * pixels the engine rendered in process; GDAL (gdalinfo -json and the osgeo Python bindings, an
 * independent reader) reports NBITS / the complex type / the colour table and reads the same
 * pixels. The GDAL parts are skipped with a message when GDAL or osgeo is not installed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { PixelBlock, RasterInfo } from '../src/core/pixel-block.js';
import { PIXEL_TYPE_INFO } from '../src/core/pixel-type.js';
import { registry } from '../src/functions/index.js';
import { render } from '../src/graph/render.js';
import { encodeGeoTiff } from '../src/io/index.js';
import { colorMapTag } from '../src/io/tiff-ifd.js';
import { buildGraph } from '../src/rule/build.js';
import { bindSources } from '../src/rule/sources.js';
import { closingOpener, firstDifference, runCli, utmInfoFor, type GdalInfo } from './helpers.js';

// Rasters opened here are closed after each test (no file handle left to the garbage collector).
const files = closingOpener();
const openRaster = files.open;
afterEach(files.closeAll);

const ROOT = resolve(import.meta.dirname, '..');
const QA = join(ROOT, 'golden/convert/qa-u16.tif');
const C64 = join(ROOT, 'golden/convert/l7-complex-c64.tif');
const C128 = join(ROOT, 'golden/convert/dem-complex-c128.tif');
const OLINDA = join(ROOT, 'golden/data/olinda_dem_utm25s.tif');
const out = mkdtempSync(join(tmpdir(), 'rasterflow-types-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

const env = { ...process.env, GDAL_PAM_ENABLED: 'NO' };
const hasGdal = spawnSync('gdalinfo', ['--version']).status === 0;
const hasOsgeo = spawnSync('/usr/bin/python3', ['-c', 'from osgeo import gdal; import numpy'], { env }).status === 0;
if (!hasGdal || !hasOsgeo) {
  console.warn(
    `[output-types.test] ${hasGdal ? '' : 'gdalinfo not found; '}${hasOsgeo ? '' : '/usr/bin/python3 has no osgeo/numpy; '}the GDAL cross-checks are SKIPPED (install gdal-bin and python3-gdal)`,
  );
}
const withGdal = hasGdal && hasOsgeo;

const cli = (...args: string[]): { code: number | null; stderr: string } => runCli(args);

/** gdalinfo -json (bare NaN turned into a string so JSON.parse accepts it). */
function gdalinfo(path: string): GdalInfo {
  const r = spawnSync('gdalinfo', ['-json', path], { encoding: 'utf8', env, maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(r.stderr || String(r.error));
  return JSON.parse(r.stdout.replace(/:\s*(-?)(NaN|Infinity)\b/g, ': "$1$2"')) as GdalInfo;
}

const READ_PY = `
import sys, json
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
ds = gdal.Open(sys.argv[1])
bands = []
for i in range(ds.RasterCount):
    a = ds.GetRasterBand(i + 1).ReadAsArray()
    v = np.stack([a.real, a.imag], axis=-1).ravel() if np.iscomplexobj(a) else a.ravel()
    bands.append([None if x != x else x for x in v.astype(float).tolist()])
print(json.dumps(bands))
`;

/** Every band's pixels as GDAL reads them through osgeo (complex as interleaved re, im). */
function gdalPixels(path: string): number[][] {
  const r = spawnSync('/usr/bin/python3', ['-c', READ_PY, path], { encoding: 'utf8', env, maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(r.stderr || String(r.error));
  return (JSON.parse(r.stdout) as (number | null)[][]).map((b) => b.map((v) => (v === null ? Number.NaN : v)));
}

/** The rule rendered in process over `inputs` (the first is $$), whole. */
async function renderInProcess(rule: unknown, inputs: string[]): Promise<{ info: RasterInfo; block: PixelBlock }> {
  const bound: Record<string, string> = { $$: inputs[0]! };
  inputs.forEach((p, i) => (bound[`$${i + 1}`] = p));
  const { root } = await buildGraph(rule, { registry, resolveSource: bindSources(bound, openRaster) });
  return { info: root.info, block: await render(root, { tileSize: 64 }) };
}

/** Render through the CLI to `name`; return the engine's own result and what our reader reads back. */
async function viaCli(name: string, rule: unknown, inputs: string[]) {
  const file = join(out, name);
  const r = cli('render', '--rule', JSON.stringify(rule), ...inputs.flatMap((p) => ['--input', p]), '--output', file, '--tile', '50');
  expect(r.stderr).toMatch(/wrote/);
  expect(r.code).toBe(0);
  const want = await renderInProcess(rule, inputs);
  const src = await openRaster(file);
  const back = await src.read({ x: 0, y: 0, width: src.info.width, height: src.info.height });
  return { file, want, info: src.info, back };
}

const bits = (lo: number, n: number) => ({
  rasterFunction: 'TransposeBits',
  rasterFunctionArguments: {
    InputBitPositions: Array.from({ length: n }, (_, k) => lo + k),
    OutputBitPositions: Array.from({ length: n }, (_, k) => k),
    ConstantFillValue: 0,
  },
});

describe('packed pixel types through rasterflow render', () => {
  for (const [t, lo, n] of [
    ['U1', 0, 1],
    ['U2', 2, 2],
    ['U4', 4, 4],
  ] as const) {
    it(`${t}: written packed (NBITS ${n}), read back unchanged by our reader and by GDAL`, async () => {
      const rule = { ...bits(lo, n), outputPixelType: t };
      const { file, want, info, back } = await viaCli(`qa-${t}.tif`, rule, [QA]);
      expect(want.info.pixelType).toBe(t);
      expect(info).toMatchObject({ pixelType: t, width: 128, height: 128, extent: want.info.extent });
      expect(firstDifference(want.block, back)).toBeUndefined();
      // The values are the QA field itself: spot-check against the QA word read independently.
      const qa = await openRaster(QA);
      const words = (await qa.read({ x: 0, y: 0, width: 128, height: 128 })).bands[0]!;
      const field = Array.from(words, (w) => (w >> lo) & ((1 << n) - 1));
      expect(Array.from(back.bands[0]!)).toEqual(field);
      expect(new Set(field).size).toBe(2 ** n); // every value of the type occurs
      if (!withGdal) return;
      const j = gdalinfo(file);
      expect(j.bands[0].type).toBe('Byte');
      expect(j.bands[0].metadata.IMAGE_STRUCTURE?.NBITS).toBe(String(PIXEL_TYPE_INFO[t].bits));
      expect(gdalPixels(file)[0]).toEqual(field);
    });
  }
});

describe('complex pixel types through rasterflow render', () => {
  it('C64 (CFloat32) and C128 (CFloat64) inputs pass through unchanged; GDAL reads the same complex values', async () => {
    for (const [name, input, t, gdalType] of [
      ['c64.tif', C64, 'C64', 'CFloat32'],
      ['c128.tif', C128, 'C128', 'CFloat64'],
    ] as const) {
      const { file, want, info, back } = await viaCli(name, { rasterFunction: 'Identity' }, [input]);
      expect(info.pixelType).toBe(t);
      expect(firstDifference(want.block, back)).toBeUndefined();
      const src = await openRaster(input);
      const orig = await src.read({ x: 0, y: 0, width: src.info.width, height: src.info.height });
      expect(firstDifference(orig, back)).toBeUndefined();
      if (!withGdal) continue;
      const j = gdalinfo(file);
      expect(j.bands[0].type).toBe(gdalType);
      expect(j.bands[0].metadata.IMAGE_STRUCTURE?.NBITS).toBeUndefined();
      expect(gdalPixels(file)[0]).toEqual(Array.from(back.bands[0]!));
    }
  });

  it('outputPixelType C64 / C128 on a real raster: real parts are the values, imaginary parts 0; Complex gives them back', async () => {
    const c64 = await viaCli('olinda-c64.tif', { rasterFunction: 'Identity', outputPixelType: 'C64' }, [OLINDA]);
    const c128 = await viaCli('olinda-c128.tif', { rasterFunction: 'Identity', outputPixelType: 'c128' }, [OLINDA]);
    expect([c64.info.pixelType, c128.info.pixelType]).toEqual(['C64', 'C128']);
    expect(firstDifference(c64.want.block, c64.back)).toBeUndefined();
    expect(firstDifference(c128.want.block, c128.back)).toBeUndefined();
    const dem = await openRaster(OLINDA);
    const z = (await dem.read({ x: 0, y: 0, width: 111, height: 111 })).bands[0]!;
    const interleaved = Array.from(z).flatMap((v) => [v, 0]);
    expect(Array.from(c64.back.bands[0]!)).toEqual(interleaved);
    expect(Array.from(c128.back.bands[0]!)).toEqual(interleaved);
    // Complex of the written C64 file: |z + 0i| = |z|, as Float32.
    const mag = await viaCli('olinda-magnitude.tif', { rasterFunction: 'Complex' }, [c64.file]);
    expect(mag.info.pixelType).toBe('F32');
    expect(Array.from(mag.back.bands[0]!)).toEqual(Array.from(z, Math.abs));
    if (!withGdal) return;
    expect(gdalinfo(c64.file).bands[0].type).toBe('CFloat32');
    expect(gdalinfo(c128.file).bands[0].type).toBe('CFloat64');
    expect(gdalPixels(c64.file)[0]).toEqual(interleaved);
    expect(gdalPixels(c128.file)[0]).toEqual(interleaved);
  });

  it('Complex over the CLI-written C64 file equals the golden magnitude (NumPy)', async () => {
    const c64 = await viaCli('l7-c64.tif', { rasterFunction: 'Identity', outputPixelType: 'C64' }, [C64]);
    const mag = await viaCli('l7-magnitude.tif', { rasterFunction: 'Complex' }, [c64.file]);
    const ref = await openRaster(join(ROOT, 'golden/convert/complex-c64-magnitude.tif'));
    const expected = await ref.read({ x: 0, y: 0, width: ref.info.width, height: ref.info.height });
    expect(firstDifference(expected, mag.back)).toBeUndefined();
  });
});

describe('palette GeoTIFFs', () => {
  const entries = [
    [0, 0, 0, 0],
    [1, 255, 0, 0],
    [2, 0, 128, 255],
    [3, 250, 250, 250],
  ];
  const cloudPalette = { rasterFunction: 'Colormap', rasterFunctionArguments: { Colormap: entries, Raster: bits(14, 2) } };

  it('colorMapTag: reds, greens, blues of 2^bits entries, 8-bit x 257, others black, non-integer values left out', () => {
    const tag = colorMapTag(
      { values: Float64Array.from([0, 2, 2.5, 9]), rgb: Uint8Array.from([1, 2, 3, 255, 128, 0, 9, 9, 9, 7, 7, 7]) },
      2,
    );
    expect(tag).toEqual({ type: 'SHORT', values: [257, 0, 65535, 0, 514, 0, 32896, 0, 771, 0, 0, 0] });
  });

  it('a U8 raster with a colormap is written with Photometric palette; GDAL shows the colour table', async () => {
    const { file, want, info, back } = await viaCli('cloud-palette-u8.tif', cloudPalette, [QA]);
    expect(want.info.pixelType).toBe('U8');
    expect(want.info.colormap).toBeDefined();
    expect(firstDifference(want.block, back)).toBeUndefined();
    // The reader turns the ColorMap back into RasterInfo.colormap (8-bit colours, values 0..255).
    if (info.colormap) expect(Array.from(info.colormap.rgb.subarray(0, 12))).toEqual(entries.flatMap((e) => e.slice(1)));
    if (!withGdal) return;
    const b = gdalinfo(file).bands[0];
    expect(b.colorInterpretation).toBe('Palette');
    expect(b.colorTable?.count).toBe(256);
    expect(b.colorTable?.entries.slice(0, 5)).toEqual([
      [0, 0, 0, 255],
      [255, 0, 0, 255],
      [0, 128, 255, 255],
      [250, 250, 250, 255],
      [0, 0, 0, 255],
    ]);
    expect(gdalPixels(file)[0]).toEqual(Array.from(back.bands[0]!));
  });

  it('a packed U2 raster keeps its colormap as a 4-entry palette (outputPixelType on the Colormap rule)', async () => {
    const { file, info, back } = await viaCli('cloud-palette-u2.tif', { ...cloudPalette, outputPixelType: 'U2' }, [QA]);
    expect(info.pixelType).toBe('U2');
    if (!withGdal) return;
    const b = gdalinfo(file).bands[0];
    expect(b.metadata.IMAGE_STRUCTURE?.NBITS).toBe('2');
    expect(b.colorInterpretation).toBe('Palette');
    expect(b.colorTable?.entries).toEqual(entries.map((e) => [...e.slice(1), 255]));
    expect(gdalPixels(file)[0]).toEqual(Array.from(back.bands[0]!));
  });

  it('a U16 palette has 65536 entries; types that cannot hold a TIFF palette keep MinIsBlack', () => {
    const block: PixelBlock = {
      rect: { x: 0, y: 0, width: 4, height: 2 },
      pixelType: 'U16',
      bands: [Uint16Array.from([0, 1, 2, 65535, 7, 7, 7, 7])],
      mask: new Uint8Array(8).fill(1),
    };
    const colormap = { values: Float64Array.from([1, 65535]), rgb: Uint8Array.from([10, 20, 30, 40, 50, 60]) };
    const u16 = join(out, 'palette-u16.tif');
    writeFileSync(u16, encodeGeoTiff(block, utmInfoFor(block, { colormap })));
    const s16 = join(out, 'palette-s16.tif');
    const signed: PixelBlock = { ...block, pixelType: 'S16', bands: [Int16Array.from([0, 1, 2, 3, 4, 5, 6, 7])] };
    writeFileSync(s16, encodeGeoTiff(signed, utmInfoFor(signed, { colormap })));
    // Photometric is the SHORT at tag 262 of the first IFD.
    expect(photometric(u16)).toBe(3);
    expect(photometric(s16)).toBe(1);
    if (!withGdal) return;
    const t = gdalinfo(u16).bands[0].colorTable;
    expect(t?.count).toBe(65536);
    expect([t?.entries[0], t?.entries[1], t?.entries[65535]]).toEqual([
      [0, 0, 0, 255],
      [10, 20, 30, 255],
      [40, 50, 60, 255],
    ]);
    expect(gdalinfo(s16).bands[0].colorTable).toBeUndefined();
  });
});

/** PhotometricInterpretation of a little-endian classic TIFF's first IFD. */
function photometric(path: string): number {
  const b = readFileSync(path);
  const ifd = b.readUInt32LE(4);
  for (let i = 0, n = b.readUInt16LE(ifd); i < n; i++) {
    const e = ifd + 2 + 12 * i;
    if (b.readUInt16LE(e) === 262) return b.readUInt16LE(e + 8);
  }
  return -1;
}

/**
 * `outputPixelType` is the function's own output type (raster-functions.md 1.2 rule 1): the rule
 * builder hands it to the function's plan, the function computes into it, and a type it cannot
 * produce is refused when the rule is built (INVALID_ARGUMENT at the rule's `outputPixelType`).
 * One case per function family where the requested type differs from the natural one; each
 * failed before (the type was a cast after the function computed in its natural type). The
 * expected values are hand-derived (the formula of the function's spec section, worked out in
 * the comment beside each); the SciPy/NumPy references for Convolution, Remap and Local are
 * golden/output-type/.
 */
import { describe, expect, it } from 'vitest';
import { EngineError } from '../src/core/errors.js';
import type { PixelBlock } from '../src/core/pixel-block.js';
import { registry } from '../src/functions/index.js';
import { render } from '../src/graph/render.js';
import type { RasterNode, SourceNode } from '../src/graph/types.js';
import { buildGraph, type SourceResolver } from '../src/rule/build.js';
import { rasterOf, tiledVersusWhole } from './helpers.js';

const flatDem = rasterOf({ width: 7, height: 6, cellSize: 10 }, () => 100);
// z = 0.1 x (metres, cell 1): a plane rising eastwards with slope atan(0.1).
const rampDem = rasterOf({ width: 7, height: 6, cellSize: 1, pixelType: 'F64' }, (x) => 0.1 * x);
const u8a = rasterOf({ width: 2, height: 2, pixelType: 'U8' }, (x, y) => [1, 2, 3, 5][y * 2 + x]!);
const rgb = rasterOf({ width: 4, height: 3, bandCount: 3, pixelType: 'U8' }, (x, y, b) => [1, 2, 2][b]! + x + 10 * y);
const one = rasterOf({ width: 3, height: 2 }, () => 1);
const three = rasterOf({ width: 3, height: 2 }, () => 3);
const tenth = rasterOf({ width: 3, height: 2 }, () => 0.1);
const twoBands = rasterOf({ width: 3, height: 2, bandCount: 2, pixelType: 'U8' }, (_x, _y, b) => (b === 0 ? 100 : 200));

const sources: Record<string, RasterNode> = { flatDem, rampDem, u8a, rgb, one, three, tenth, twoBands };
const resolveSource: SourceResolver = async (ref, path) => {
  const s = ref.kind === 'ref' ? sources[ref.name] : undefined;
  if (s === undefined) throw new EngineError('IO_ERROR', `no test source ${JSON.stringify(ref)}`, { path });
  return s as SourceNode;
};
const build = async (rule: unknown) => (await buildGraph(rule, { registry, resolveSource })).root;
const pixels = async (rule: unknown): Promise<{ type: string; block: PixelBlock }> => {
  const root = await build(rule);
  return { type: root.info.pixelType, block: await render(root, { tileSize: 3 }) };
};
async function refusal(rule: unknown): Promise<EngineError> {
  try {
    await build(rule);
  } catch (e) {
    if (e instanceof EngineError) return e;
    throw e;
  }
  throw new Error('expected the rule to be refused');
}
const rule = (fn: string, args: Record<string, unknown>, outputPixelType?: string) => ({
  rasterFunction: fn,
  rasterFunctionArguments: args,
  ...(outputPixelType ? { outputPixelType } : {}),
});

describe('outputPixelType reaches the function (one case per family)', () => {
  it('terrain: Hillshade asked for F32 keeps the unrounded shade; Slope asked for F64 holds the float64 result', async () => {
    // Flat DEM: gx = gy = 0, HS = 255 cos(zenith) = 255 cos(45 deg) = 180.312229..., truncated to 180 in U8.
    const hs = await pixels(rule('Hillshade', { DEM: 'flatDem', Azimuth: 315, Altitude: 45 }, 'F32'));
    expect(hs.type).toBe('F32');
    expect(hs.block.bands[0]![3 * 7 + 3]).toBe(Math.fround(255 * Math.cos(Math.PI / 4)));
    // Plane z = 0.1 x: slope = atan(0.1) in degrees = 5.710593137499643 (Slope's arctangent is
    // within 5.2e-8 degrees of it). F64 holds the kernel's float64 result, not one rounded to F32.
    const slope = await pixels(rule('Slope', { DEM: 'rampDem', ZFactor: 1 }, 'F64'));
    expect(slope.type).toBe('F64');
    const v = slope.block.bands[0]![2 * 7 + 3]!;
    expect(Math.abs(v - (Math.atan(0.1) * 180) / Math.PI)).toBeLessThan(6e-8);
    expect(Math.fround(v)).not.toBe(v);
  });

  it('terrain: Hillshade refuses a type that cannot hold 0..255 shades, with the rule path', async () => {
    const e = await refusal(rule('Slope', { DEM: rule('Hillshade', { DEM: 'flatDem' }, 'S8') }));
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.issues.map((i) => i.path)).toEqual(['rasterFunctionArguments.DEM.outputPixelType']);
    expect(e.message).toMatch(/Hillshade cannot produce outputPixelType S8/);
  });

  it('focal: a U8 Laplacian asked for S8 is clamped to -128..127 (not to 0..255 and then cast)', async () => {
    // 3 x 3 U8 bands; the centre has the only full window. Laplacian3x3 (0 -1 0 / -1 4 -1 / 0 -1 0):
    // centre 200 among zeros: 4 x 200 = 800 -> 127; centre 0 among 200s: -4 x 200 = -800 -> -128.
    const peak = rasterOf({ width: 3, height: 3, pixelType: 'U8' }, (x, y) => (x === 1 && y === 1 ? 200 : 0));
    const pit = rasterOf({ width: 3, height: 3, pixelType: 'U8' }, (x, y) => (x === 1 && y === 1 ? 0 : 200));
    Object.assign(sources, { peak, pit });
    const up = await pixels(rule('Convolution', { Type: 15, Raster: 'peak' }, 'S8'));
    const down = await pixels(rule('Convolution', { Type: 15, Raster: 'pit' }, 'S8'));
    expect([up.type, down.type]).toEqual(['S8', 'S8']);
    expect(up.block.bands[0]![4]).toBe(127);
    expect(down.block.bands[0]![4]).toBe(-128); // a cast after the U8 convolution gave 0
  });

  it('radiometric: a MinMax Stretch asked for F32 is not rounded; Threshold refuses a complex type', async () => {
    // Statistics min 0, max 10, output 0..255: v -> 25.5 v; pixel 1 -> 25.5 (U8: 26), 3 -> 76.5 (77).
    const s = await pixels(rule('Stretch', { Raster: 'u8a', StretchType: 5, Statistics: [[0, 10, 5, 1]], Min: 0, Max: 255 }, 'F32'));
    expect(s.type).toBe('F32');
    expect(Array.from(s.block.bands[0]!)).toEqual([25.5, 51, 76.5, 127.5]);
    const e = await refusal(rule('Threshold', { Raster: 'u8a' }, 'C64'));
    expect([e.code, e.issues[0]!.path]).toEqual(['INVALID_ARGUMENT', 'outputPixelType']);
  });

  it('spectral: Grayscale of U8 bands asked for F32 keeps the fraction; scaled NDVI asked for F32 is 100 + 100 NDVI', async () => {
    // Bands 1 + x + 10y, 2 + x + 10y, 2 + x + 10y, equal weights: mean = 5/3 + x + 10y (U8: 2 at (0, 0)).
    const g = await pixels(rule('Grayscale', { Raster: 'rgb' }, 'F32'));
    expect(g.type).toBe('F32');
    expect(g.block.bands[0]![0]).toBe(Math.fround(5 / 3));
    expect(g.block.bands[0]![4 + 1]).toBe(Math.fround(5 / 3 + 11));
    // VIS 100, IR 200: NDVI = 1/3, scaled 133.333... (U8: trunc(133.83) = 133).
    const n = await pixels(rule('NDVI', { Raster: 'twoBands', VisibleBandID: 0, InfraredBandID: 1 }, 'F32'));
    expect(n.type).toBe('F32');
    expect(n.block.bands[0]![0]).toBe(Math.fround(100 + 100 / 3));
  });

  it('bands: HSV -> RGB refuses U4; TransposeBits refuses a type that would cut its bits but takes U2 for two bits', async () => {
    const e = await refusal(rule('ColorspaceConversion', { Raster: 'rgb', ConversionType: 1 }, 'U4'));
    expect([e.code, e.issues[0]!.path]).toEqual(['INVALID_ARGUMENT', 'outputPixelType']);
    expect(e.message).toMatch(/colour channels/);
    const bits = { Raster: 'u8a', InputBitPositions: [0, 1], OutputBitPositions: [0, 1], ConstantFillValue: 0 };
    expect((await refusal(rule('TransposeBits', bits, 'U1'))).issues[0]!.path).toBe('outputPixelType');
    const ok = await pixels(rule('TransposeBits', bits, 'U2'));
    expect([ok.type, ...ok.block.bands[0]!]).toEqual(['U2', 1, 2, 3, 1]);
  });

  it('local: Arithmetic asked for F64 divides in double precision', async () => {
    // 1 / 3 = 0.3333333333333333 (F32: 0.3333333432674408).
    const d = await pixels(rule('Arithmetic', { Raster: 'one', Raster2: 'three', Operation: 4 }, 'F64'));
    expect(d.type).toBe('F64');
    expect(d.block.bands[0]![0]).toBe(1 / 3);
  });

  it('color: ColormapToRGB refuses S8 (colours up to 255)', async () => {
    const e = await refusal(rule('ColormapToRGB', { Raster: rule('Colormap', { Raster: 'u8a', ColormapName: 'NDVI' }) }, 'S8'));
    expect([e.code, e.issues[0]!.path]).toEqual(['INVALID_ARGUMENT', 'outputPixelType']);
  });

  it('geometry: an average Resample of U8 asked for F32 keeps the fraction', async () => {
    // 2 x 2 -> 1 x 1 (cell 1 -> 2), ResamplingType 7 Average: (1 + 2 + 3 + 5) / 4 = 2.75 (U8: 3).
    const r = await pixels(rule('Resample', { Raster: 'u8a', ResamplingType: 7, OutputCellsize: 2 }, 'F32'));
    expect(r.type).toBe('F32');
    expect(Array.from(r.block.bands[0]!)).toEqual([2.75]);
  });

  it('classify: SegmentMeanShift (mean colours) refuses U4', async () => {
    const e = await refusal(rule('SegmentMeanShift', { Raster: 'rgb' }, 'U4'));
    expect([e.code, e.issues[0]!.path]).toEqual(['INVALID_ARGUMENT', 'outputPixelType']);
  });

  it('change: ComputeChange Difference asked for F64 subtracts in double precision', async () => {
    // 1 - 0.1 = 0.9 (F32: 0.8999999761581421).
    const c = await pixels(rule('ComputeChange', { Raster: 'tenth', Raster2: 'one', Method: 0 }, 'F64'));
    expect(c.type).toBe('F64');
    expect(c.block.bands[0]![0]).toBe(1 - Math.fround(0.1));
  });
});

describe('outputPixelType and tiling', () => {
  it('a U8 Sobel asked for F32 keeps its negative responses and renders the same in odd tiles as whole', async () => {
    const band = rasterOf({ width: 61, height: 47, pixelType: 'U8' }, (x, y) => (x * 37 + y * 91 + ((x * y) % 13) * 7) % 256);
    Object.assign(sources, { band });
    const root = await build(rule('Convolution', { Type: 17, Raster: 'band' }, 'F32'));
    expect(root.info.pixelType).toBe('F32');
    const whole = await render(root, { tileSize: 64 });
    expect(Math.min(...whole.bands[0]!)).toBeLessThan(0);
    expect(await tiledVersusWhole(root)).toBeUndefined();
  });
});

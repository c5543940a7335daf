/**
 * ShadedRelief. Expected values are derived by hand from the spec's formulas (hillshade of a flat
 * surface 255 sin(altitude), truncated; ramp index floor((z - zmin) 255.00001 / (zmax - zmin));
 * the HSV blend of step 3), worked out in each test's comment. The golden cases
 * (golden/shaded-relief/cases.json, made by gdaldem + the script beside them) run here through
 * the whole engine too, with ShadedRelief added to the built-in registry.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BandStatistics } from '../../core/pixel-block.js';
import { parseArgs } from '../../graph/args.js';
import { memorySource } from '../../graph/memory-source.js';
import { render } from '../../graph/render.js';
import { createRegistry, type RasterNode } from '../../graph/types.js';
import { buildGraph } from '../../rule/build.js';
import { bindSources } from '../../rule/sources.js';
import {
  applyFunction,
  catchError,
  closingOpener,
  firstDifference,
  gridInfo,
  rasterOf,
  runFunction,
  tiledVersusWhole,
} from '../../../test/helpers.js';
import { builtinFunctions } from '../index.js';
import { hillshade } from './hillshade.js';
import { FALLBACK_ELEVATION_RANGE, LUT_MAX_COLORS, shadedRelief, type ShadedReliefParams } from './shaded-relief.js';

// Rasters opened here are closed after each test (no file handle left to the garbage collector).
const files = closingOpener();
const openRaster = files.open;
afterEach(files.closeAll);

const flat = (z: number, statistics?: BandStatistics): RasterNode => {
  const info = { ...gridInfo({ width: 5, height: 5, cellSize: 10 }), ...(statistics ? { statistics: [statistics] } : {}) };
  return memorySource(`flat-${z}-${JSON.stringify(statistics)}`, info, [new Float32Array(25).fill(z)]);
};
const rgbAt = (r: Awaited<ReturnType<typeof runFunction>>, x: number, y: number): number[] => [0, 1, 2].map((b) => r.value(x, y, b));

// A flat surface at 315/45 shades to 255 sin 45 = 180.31 -> 180 (truncated); at altitude 60, 220.84 -> 220.
// Multidirectional flat: 255 (14/18 sin 60 + 4/18) = 228.43 -> 228.

describe('ShadedRelief: the blend (spec step 3), hand-derived', () => {
  it.each([
    // red: h 0, S 1: C = 180, X = 0, m = 0 -> (180, 0, 0)
    [
      [255, 0, 0],
      [180, 0, 0],
    ],
    // (0, 128, 255): max b, h = (0 - 128)/255 + 4 = 3.498, S 1: C = 180, X = 180 (1 - |1.498 - 1|) = 90.35; sector 3 (0, X, C)
    [
      [0, 128, 255],
      [0, 90, 180],
    ],
    // (200, 100, 50): h = (100 - 50)/150 = 1/3, S = 150/200 = 0.75: C = 135, X = 135/3 = 45, m = 45; sector 0 (C+m, X+m, m)
    [
      [200, 100, 50],
      [180, 90, 45],
    ],
    // grey: S 0 -> the hillshade itself
    [
      [100, 100, 100],
      [180, 180, 180],
    ],
    // (200, 25, 25): S 0.875, C = 157.5, m = 22.5 exactly: ties round to even -> 22 (half up would give 23)
    [
      [200, 25, 25],
      [180, 22, 22],
    ],
  ])('colour %j on a flat 180 hillshade gives %j', async (color, want) => {
    const r = await runFunction(shadedRelief, { Colormap: [[100, ...color]] }, [flat(100.7)]);
    expect(rgbAt(r, 2, 2)).toEqual(want);
    expect(rgbAt(r, 0, 0)).toEqual(want); // edge cells copy the inner gradient (vendor rule): flat too
  });

  it('multidirectional and other lights shade like Hillshade', async () => {
    const grey = { Colormap: [[100, 90, 90, 90]] };
    expect(rgbAt(await runFunction(shadedRelief, { ...grey, HillshadeType: 1 }, [flat(100)]), 2, 2)).toEqual([228, 228, 228]);
    expect(rgbAt(await runFunction(shadedRelief, { ...grey, Altitude: 60 }, [flat(100)]), 2, 2)).toEqual([220, 220, 220]);
  });
});

describe('ShadedRelief: colour from elevation', () => {
  // HSV red -> yellow: colour k has H = 60 k/255, i.e. (255, round(k), 0); blended at A = 180 it is
  // (180, round(180 k/255), 0).
  const redYellow = { type: 'algorithmic', fromColor: [255, 0, 0, 255], toColor: [255, 255, 0, 255], algorithm: 'geoHSVAlgorithm' };

  it('stretches the ramp over the DEM statistics', async () => {
    // k = floor(500 x 255.00001 / 1000) = 127 -> (255, 127, 0) -> X = 180 x 127/255 = 89.6 -> (180, 90, 0)
    const r = await runFunction(shadedRelief, { Colorramp: redYellow }, [flat(500, { min: 0, max: 1000 })]);
    expect(rgbAt(r, 2, 2)).toEqual([180, 90, 0]);
  });

  it('falls back to 0..8000 without statistics (the vendor client)', async () => {
    expect(FALLBACK_ELEVATION_RANGE).toEqual({ min: 0, max: 8000 });
    // k = floor(500 x 255.00001 / 8000) = 15 -> (255, 15, 0) -> X = 180 x 15/255 = 10.6 -> (180, 11, 0)
    const r = await runFunction(shadedRelief, { Colorramp: redYellow }, [flat(500)]);
    expect(rgbAt(r, 2, 2)).toEqual([180, 11, 0]);
  });

  it('clamps elevations outside the range to the first and last colour', async () => {
    const below = await runFunction(shadedRelief, { Colorramp: redYellow }, [flat(500, { min: 600, max: 1000 })]);
    expect(rgbAt(below, 2, 2)).toEqual([180, 0, 0]);
    // colour 255 = (255, 255, 0): h = 1 (sector 1, X = C) -> (180, 180, 0)
    const above = await runFunction(shadedRelief, { Colorramp: redYellow }, [flat(500, { min: 0, max: 400 })]);
    expect(rgbAt(above, 2, 2)).toEqual([180, 180, 0]);
    // min = max: every cell takes colour 0 (no division by zero)
    const constant = await runFunction(shadedRelief, { Colorramp: redYellow }, [flat(500, { min: 500, max: 500 })]);
    expect(rgbAt(constant, 2, 2)).toEqual([180, 0, 0]);
  });

  it('takes predefined ramp names in any case, and Elevation #1 by default', async () => {
    const dem = flat(100, { min: 0, max: 1000 });
    const named = await runFunction(shadedRelief, { Colorramp: 'elevation #1' }, [dem]);
    const byDefault = await runFunction(shadedRelief, {}, [dem]);
    expect(rgbAt(byDefault, 2, 2)).toEqual(rgbAt(named, 2, 2));
    const other = await runFunction(shadedRelief, { Colorramp: 'Yellow To Red' }, [dem]);
    expect(rgbAt(other, 2, 2)).not.toEqual(rgbAt(named, 2, 2));
  });

  it('looks an explicit Colormap up with trunc(z); unlisted values are NoData', async () => {
    const values = [100.9, 101.2, 102.5, -0.5, -1.5];
    const dem = rasterOf({ width: 5, height: 1, cellSize: 10 }, (x) => values[x]!);
    // trunc: 100, 101, 102 (unlisted), -0 = 0, -1. Mostly flat: the hillshade stays near 180.
    const cm = [
      [100, 255, 0, 0],
      [101, 0, 255, 0],
      [0, 0, 0, 255],
      [-1, 255, 255, 255],
    ];
    const r = await runFunction(shadedRelief, { Colormap: cm }, [dem]);
    const shade = await runFunction(hillshade, {}, [dem]);
    const A = (x: number) => shade.value(x, 0);
    expect(rgbAt(r, 0, 0)).toEqual([A(0), 0, 0]);
    expect(rgbAt(r, 1, 0)).toEqual([0, A(1), 0]);
    expect(r.valid(2, 0)).toBe(false);
    expect(rgbAt(r, 2, 0)).toEqual([0, 0, 0]);
    expect(rgbAt(r, 3, 0)).toEqual([0, 0, A(3)]);
    expect(rgbAt(r, 4, 0)).toEqual([A(4), A(4), A(4)]);
  });

  it('agrees with itself whatever the lookup path (blend table or per cell; dense index or binary search)', async () => {
    expect(LUT_MAX_COLORS).toBe(4096);
    const dem = rasterOf({ width: 40, height: 30, cellSize: 30 }, (x, y) => 100 + 37 * Math.sin(x / 5) + 23 * Math.cos(y / 4) + x);
    const color = (v: number) => [v, (v * 7) % 256, (v * 13 + 50) % 256, (v * 29 + 100) % 256];
    const small = Array.from({ length: 200 }, (_, i) => color(i + 40)).filter((e) => e[0]! % 5 !== 0); // blend table, dense index
    const large = [...small, ...Array.from({ length: 5000 }, (_, i) => color(i + 1000))]; // > 4096 colours: per cell
    const sparse = [...small, color(5_000_000)]; // spans more than 2^20: binary search
    const paramsOf = (args: Record<string, unknown>) => applyFunction(shadedRelief, args, [dem]).plan.params as ShadedReliefParams;
    expect(paramsOf({ Colormap: small }).lut).toBeDefined();
    expect(paramsOf({ Colormap: large }).lut).toBeUndefined();
    expect(paramsOf({ Colormap: sparse }).dense).toBeUndefined();
    const a = await runFunction(shadedRelief, { Colormap: small }, [dem]);
    for (const other of [large, sparse]) {
      expect(firstDifference(a.block, (await runFunction(shadedRelief, { Colormap: other }, [dem])).block)).toBeUndefined();
    }
    expect([...a.block.mask].filter((m) => m === 0).length).toBeGreaterThan(100); // values ending in 0 or 5
  });

  it('prefers Colormap over Colorramp, with a warning', () => {
    const node = applyFunction(shadedRelief, { Colormap: [[1, 2, 3, 4]], Colorramp: 'Slope' }, [flat(1)]);
    expect(node.plan.warnings).toEqual(['Colorramp is ignored: Colormap is given and takes precedence']);
  });
});

describe('ShadedRelief: output, NoData and arguments', () => {
  const W = 23;
  const H = 19;
  const holes = new Uint8Array(W * H).fill(1);
  for (const [x, y] of [
    [5, 5],
    [6, 5],
    [12, 3],
    [0, 9],
    [22, 18],
    [15, 12],
  ] as const)
    holes[y * W + x] = 0;
  const surface = (x: number, y: number): number => 400 + 90 * Math.sin(x / 4) * Math.cos(y / 3) + 5 * x - 3 * y;
  const dem = rasterOf({ width: W, height: H, cellSize: 30 }, surface, holes);
  // Grey HSV ramp: every colour has S = 0, so the output is (A, A, A).
  const grey = { type: 'algorithmic', fromColor: [0, 0, 0, 255], toColor: [255, 255, 255, 255], algorithm: 'geoHSVAlgorithm' };

  it('is 3-band U8 RGB on the DEM grid, statistics 0..255, NoData only in the mask', () => {
    const { info } = applyFunction(shadedRelief, {}, [dem]);
    expect([info.bandCount, info.pixelType, info.width, info.height, info.noData]).toEqual([3, 'U8', W, H, undefined]);
    expect(info.bandNames).toEqual(['Red', 'Green', 'Blue']);
    expect(info.statistics).toEqual([
      { min: 0, max: 255 },
      { min: 0, max: 255 },
      { min: 0, max: 255 },
    ]);
  });

  it.each([[{}], [{ HillshadeType: 1 }], [{ RemoveEdgeEffect: true }], [{ SlopeType: 3, Azimuth: 100, Altitude: 20, ZFactor: 2 }]])(
    'with a grey ramp it is the Hillshade in every band, masks included: %j',
    async (extra) => {
      const r = await runFunction(shadedRelief, { ...extra, Colorramp: grey }, [dem]);
      const h = await runFunction(hillshade, extra, [dem]);
      expect(applyFunction(shadedRelief, extra, [dem]).plan.halo).toBe(h.node.plan.halo);
      let masked = 0;
      for (let y = 0; y < H; y++) {
        for (let x = 0; x < W; x++) {
          expect(r.valid(x, y), `(${x}, ${y})`).toBe(h.valid(x, y));
          if (!h.valid(x, y)) {
            masked++;
            expect(rgbAt(r, x, y)).toEqual([0, 0, 0]);
          } else {
            const a = h.value(x, y);
            expect(rgbAt(r, x, y), `(${x}, ${y})`).toEqual([a, a, a]);
          }
        }
      }
      expect(masked).toBeGreaterThan(0); // the holes (and, vendor rule, cells with 2+ NoData neighbours)
    },
  );

  it('accepts DEM as an alias of Raster', () => {
    const parsed = parseArgs(shadedRelief.args, { DEM: '$2' }, 'rasterFunctionArguments');
    expect(parsed.issues).toEqual([]);
    expect(parsed.rasters.map((r) => [r.name, r.value])).toEqual([['Raster', '$2']]);
    expect(shadedRelief.variableName).toBe('Raster');
  });

  const P = 'rasterFunctionArguments';
  it.each([
    [{ Colormap: 'red' }, `${P}.Colormap`],
    [
      {
        Colormap: [
          [100, 0, 0, 0],
          [101, 0, 256, 0],
        ],
      },
      `${P}.Colormap[1][2]`,
    ],
    [{ Colormap: [[100.5, 0, 0, 0]] }, `${P}.Colormap[0][0]`],
    [{ Colormap: [[100, 0, 0]] }, `${P}.Colormap[0]`],
    [{ Colorramp: 'Rainbow' }, `${P}.Colorramp`],
    [{ Colorramp: 7 }, `${P}.Colorramp`],
    [{ Colorramp: { type: 'algorithmic', fromColor: [0, 0, 0], toColor: [1, 1, 1], algorithm: 'geoRGB' } }, `${P}.Colorramp.algorithm`],
    [{ Colorramp: { type: 'multipart', colorRamps: [{ fromColor: [0, 0, 0], toColor: [1, 1] }] } }, `${P}.Colorramp.colorRamps[0].toColor`],
    [{ Colorramp: { type: 'stops' } }, `${P}.Colorramp.type`],
    [{ Altitude: 95 }, `${P}.Altitude`],
    [{ HillshadeType: 2 }, `${P}.HillshadeType`],
  ])('rejects %j at %s', (args, path) => {
    const e = catchError(() => applyFunction(shadedRelief, args, [dem]));
    expect(e?.code).toBe('INVALID_ARGUMENT');
    expect(e?.path).toBe(path);
  });

  it('rejects a multi-band or complex raster at Raster', () => {
    const rgb = rasterOf({ width: 4, height: 4, bandCount: 3, pixelType: 'U8' }, () => 1);
    const e = catchError(() => applyFunction(shadedRelief, {}, [rgb]));
    expect([e?.code, e?.path]).toEqual(['INVALID_ARGUMENT', `${P}.Raster`]);
    expect(e?.message).toMatch(/single-band/);
    const c = memorySource('c64', gridInfo({ width: 2, height: 2, pixelType: 'C64' }), [new Float32Array(8)]);
    expect(catchError(() => applyFunction(shadedRelief, {}, [c]))?.path).toBe(`${P}.Raster`);
  });
});

describe('ShadedRelief: tiled rendering equals whole rendering', () => {
  const W = 61;
  const H = 47;
  const holes = new Uint8Array(W * H).fill(1);
  for (const [x, y] of [
    [10, 10],
    [11, 10],
    [30, 5],
    [0, 20],
    [60, 46],
    [45, 30],
  ] as const)
    holes[y * W + x] = 0;
  for (let y = 20; y < 24; y++) for (let x = 25; x < 29; x++) holes[y * W + x] = 0;
  const surface = (x: number, y: number): number =>
    500 + 120 * Math.sin(x / 7) * Math.cos(y / 5) + 3 * x - 2 * y + ((x * 7919 + y * 104729) % 13);
  const info = { ...gridInfo({ width: W, height: H, cellSize: 30 }), statistics: [{ min: 350, max: 700 }] };
  const plane = new Float32Array(W * H);
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) plane[y * W + x] = surface(x, y);
  const dem = memorySource('tiling-dem', info, [plane], holes);
  const colormap = Array.from({ length: 400 }, (_, i) => [350 + i, (i * 7) % 256, (i * 13) % 256, (i * 29) % 256]).filter(
    (e) => e[0]! % 7 !== 0,
  );

  it.each([
    [{ HillshadeType: 0 }],
    [{ HillshadeType: 1 }],
    [{ HillshadeType: 0, Colorramp: 'Spectrum-Full Bright' }],
    [
      {
        HillshadeType: 1,
        RemoveEdgeEffect: true,
        Colorramp: { type: 'algorithmic', fromColor: [0, 0, 255, 255], toColor: [255, 0, 0, 255] },
      },
    ],
    [{ HillshadeType: 0, Colormap: colormap }],
    [{ HillshadeType: 1, Colormap: colormap, RemoveEdgeEffect: true }],
  ])('%j', async (args) => {
    const node = applyFunction(shadedRelief, args, [dem]);
    for (const tile of [
      [37, 53],
      [7, 5],
      [1, 3],
    ] as [number, number][]) {
      expect(await tiledVersusWhole(node, tile), `tile ${tile.join('x')}`).toBeUndefined();
    }
  });

  it('geographic DEM, both hillshade types', async () => {
    const geo = rasterOf({ width: W, height: H, cellSize: 1 / 1200, geographic: true, origin: { x: -84.4, y: 36.7 } }, surface, holes);
    for (const HillshadeType of [0, 1]) {
      const node = applyFunction(shadedRelief, { HillshadeType, Colorramp: 'Elevation #2' }, [geo]);
      for (const tile of [
        [37, 53],
        [7, 5],
        [1, 3],
      ] as [number, number][]) {
        expect(await tiledVersusWhole(node, tile), `type ${HillshadeType} tile ${tile.join('x')}`).toBeUndefined();
      }
    }
  });
});

// ---- Golden cases through the whole engine (rule builder, io, tiled render), as test/golden.test.ts
// does, with ShadedRelief added to the registry until the registry lists it.

interface GoldenCase {
  readonly id: string;
  readonly rule: unknown;
  readonly inputs: readonly string[];
  readonly expected: string;
  readonly tolerance: { readonly abs: number };
  readonly edge?: number;
}

const ROOT = resolve(import.meta.dirname, '../../..');
const golden = JSON.parse(readFileSync(join(ROOT, 'golden/shaded-relief/cases.json'), 'utf8')) as GoldenCase[];
const registry = createRegistry(builtinFunctions.includes(shadedRelief) ? builtinFunctions : [...builtinFunctions, shadedRelief]);

describe('ShadedRelief goldens (gdaldem + NumPy) through the engine', () => {
  it('has cases', () => expect(golden.length).toBeGreaterThanOrEqual(3));

  for (const c of golden) {
    it(c.id, async () => {
      const inputs: Record<string, string> = {};
      c.inputs.forEach((p, i) => {
        if (i === 0) inputs.$$ = join(ROOT, p);
        inputs[`$${i + 1}`] = join(ROOT, p);
      });
      const { root } = await buildGraph(c.rule, { registry, resolveSource: bindSources(inputs, openRaster) });
      const actual = await render(root, { tileSize: 128 });
      const exp = await openRaster(join(ROOT, c.expected));
      const { width, height } = exp.info;
      expect([root.info.width, root.info.height, root.info.bandCount]).toEqual([width, height, 3]);
      const expected = await exp.read({ x: 0, y: 0, width, height });
      const edge = c.edge ?? 0;
      let bad = 0;
      let maxDiff = 0;
      let first: string | undefined;
      let masked = 0;
      for (let y = edge; y < height - edge; y++) {
        for (let x = edge; x < width - edge; x++) {
          const i = y * width + x;
          if (expected.mask[i] !== actual.mask[i]) {
            bad++;
            first ??= `(${x}, ${y}): mask ${actual.mask[i]}, expected ${expected.mask[i]}`;
            continue;
          }
          if (expected.mask[i] === 0) {
            masked++;
            continue;
          }
          for (let b = 0; b < 3; b++) {
            const d = Math.abs(actual.bands[b]![i]! - expected.bands[b]![i]!);
            maxDiff = Math.max(maxDiff, d);
            if (d > c.tolerance.abs) {
              bad++;
              first ??= `(${x}, ${y}, band ${b}): ${actual.bands[b]![i]} vs ${expected.bands[b]![i]}`;
            }
          }
        }
      }
      expect(bad, `${bad} bad (max |diff| ${maxDiff}); first at ${first}`).toBe(0);
      if (c.id.includes('colormap')) expect(masked).toBeGreaterThan(1000); // unlisted colormap values
    });
  }
});

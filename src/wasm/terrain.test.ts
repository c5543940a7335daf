/**
 * The wasm terrain kernels against their TypeScript kernels (the reference): the same output, bit
 * for bit (NaN payloads aside: a NaN is compared as NaN), and the same mask, over the terrain
 * goldens' DEMs and seeded random rasters with NaN values, NoData masks, raster and tile edges,
 * terraces (flat cells, axis-aligned gradients), geographic grids and every parameter family.
 * Each comparison also checks that the wasm path ran (it falls back silently otherwise).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fromFile } from 'geotiff';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RasterInfo } from '../core/pixel-block.js';
import type { PixelType, Plane } from '../core/pixel-type.js';
import { aspect } from '../functions/terrain/aspect.js';
import { hillshade } from '../functions/terrain/hillshade.js';
import { slope } from '../functions/terrain/slope.js';
import { memorySource } from '../graph/memory-source.js';
import { render } from '../graph/render.js';
import type { RasterFunction } from '../graph/types.js';
import { applyFunction, gridInfo, prng } from '../../test/helpers.js';
import { setWasmEnabled, wasmStatus } from './module.js';
import { wasmCallCount } from './terrain.js';

const ROOT = resolve(import.meta.dirname, '../..');

afterEach(() => {
  setWasmEnabled(true);
});

interface Result {
  readonly band: Plane;
  readonly mask: Uint8Array;
}

async function run(
  fn: RasterFunction,
  args: Record<string, unknown>,
  info: RasterInfo,
  z: Plane,
  mask: Uint8Array | undefined,
  tileSize: number,
  wasm: boolean,
  to?: PixelType,
): Promise<Result> {
  setWasmEnabled(wasm);
  try {
    const node = applyFunction(fn, args, [memorySource('dem', info, [z], mask)], to);
    const out = await render(node, { tileSize });
    return { band: out.bands[0]!, mask: out.mask };
  } finally {
    setWasmEnabled(true);
  }
}

/** Both paths; the first difference, or undefined. Throws when the wasm path did not run. */
async function compare(
  fn: RasterFunction,
  args: Record<string, unknown>,
  info: RasterInfo,
  z: Plane,
  mask: Uint8Array | undefined,
  tileSize: number,
  to?: PixelType,
): Promise<string | undefined> {
  const ts = await run(fn, args, info, z, mask, tileSize, false, to);
  const before = wasmCallCount();
  const wa = await run(fn, args, info, z, mask, tileSize, true, to);
  expect(wasmCallCount(), `${fn.name} ran in wasm`).toBeGreaterThan(before);
  expect(wa.band.constructor).toBe(ts.band.constructor);
  for (let i = 0; i < ts.band.length; i++) {
    if (ts.mask[i] !== wa.mask[i]) return `${fn.name} ${JSON.stringify(args)}: mask differs at ${i}`;
    if (!Object.is(ts.band[i], wa.band[i])) return `${fn.name} ${JSON.stringify(args)}: at ${i} TS ${ts.band[i]}, wasm ${wa.band[i]}`;
  }
  return undefined;
}

describe('wasm terrain kernels', () => {
  it('are loaded (the test script builds them)', () => {
    expect(wasmStatus()).toMatchObject({ enabled: true });
  });

  describe('equal the TypeScript kernels on the golden DEMs', () => {
    interface Case {
      readonly id: string;
      readonly rule: { readonly rasterFunction: string; readonly rasterFunctionArguments: Record<string, unknown> };
      readonly inputs: readonly string[];
    }
    const FUNCTIONS: Record<string, RasterFunction> = { slope, hillshade, aspect };
    const cases = (JSON.parse(readFileSync(resolve(ROOT, 'golden/terrain/cases.json'), 'utf8')) as Case[]).filter(
      (c) => FUNCTIONS[c.rule.rasterFunction.toLowerCase()] !== undefined,
    );
    it('has cases', () => expect(cases.length).toBeGreaterThan(10));
    for (const c of cases) {
      it(c.id, async () => {
        const tiff = await fromFile(resolve(ROOT, c.inputs[0]!));
        const image = await tiff.getImage();
        const [band] = (await image.readRasters()) as unknown as Plane[];
        const width = image.getWidth();
        const height = image.getHeight();
        const [xmin, ymin, xmax, ymax] = image.getBoundingBox() as [number, number, number, number];
        const keys = image.getGeoKeys() as Record<string, number> | null;
        const geographic = keys?.GTModelTypeGeoKey === 2;
        const noData = image.getGDALNoData() ?? undefined;
        // The wasm path takes F32 DEMs: integer goldens are compared as F32 (the same values).
        const info: RasterInfo = {
          width,
          height,
          bandCount: 1,
          pixelType: 'F32',
          ...(noData === undefined ? {} : { noData }),
          extent: { xmin, ymin, xmax, ymax },
          cellSize: { x: (xmax - xmin) / width, y: (ymax - ymin) / height },
          spatialReference: geographic ? { wkid: 4326, geographic: true } : { wkid: 32616, metersPerUnit: 1 },
        };
        const fn = FUNCTIONS[c.rule.rasterFunction.toLowerCase()]!;
        for (const tile of [128, 61]) {
          expect(await compare(fn, c.rule.rasterFunctionArguments, info, Float32Array.from(band!), undefined, tile)).toBeUndefined();
        }
      });
    }
  });

  it('equal the TypeScript kernels on random rasters (NaN, NoData, edges, terraces, every parameter family)', async () => {
    const rnd = prng(2100);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    let compared = 0;
    for (let trial = 0; trial < 60; trial++) {
      const width = 1 + Math.floor(rnd() * 70);
      const height = 1 + Math.floor(rnd() * 50);
      const n = width * height;
      const style = trial % 4; // 0 smooth, 1 terraces, 2 sparse NoData, 3 NaN/Infinity values and NoData
      const z = new Float32Array(n);
      const scale = pick([1, 1000, 1e-3, 5e6]);
      for (let i = 0; i < n; i++) {
        const x = i % width;
        const y = Math.floor(i / width);
        z[i] = style === 1 ? Math.round(rnd() * 2) : scale * (Math.sin(x / 7) + Math.cos(y / 5) + 0.1 * rnd());
      }
      let mask: Uint8Array | undefined;
      if (style >= 2) {
        mask = new Uint8Array(n).fill(1);
        const holes = 1 + Math.floor(rnd() * 4);
        for (let k = 0; k < holes; k++) mask[Math.floor(rnd() * n)] = 0;
      }
      if (style === 3) for (let k = 0; k < 3; k++) z[Math.floor(rnd() * n)] = pick([Number.NaN, Infinity, -Infinity]);
      const geographic = rnd() < 0.3;
      const info = gridInfo({
        width,
        height,
        cellSize: geographic ? 1 / 1200 : pick([1, 10, 30.5]),
        geographic,
        origin: geographic ? { x: -84, y: pick([37, 70, -45]) } : { x: 0, y: 0 },
      });
      const common = {
        RemoveEdgeEffect: rnd() < 0.5,
        ZFactor: pick([1, 0.3048, 2.5, 0.00001]),
        GeographicCellSize: pick(['Geodesic', 'Vendor111000']),
      };
      const tile = pick([16, 23, 64, 256]);
      const cases: [RasterFunction, Record<string, unknown>, PixelType?][] = [
        [slope, { ...common, SlopeType: pick([1, 2, 3]) }],
        [aspect, { ...common }],
        [
          hillshade,
          { ...common, HillshadeType: 0, Azimuth: pick([315, 0, 90, 200.5]), Altitude: pick([45, 0, 90, 12]), SlopeType: pick([1, 3]) },
        ],
        [hillshade, { ...common, HillshadeType: 1 }, pick([undefined, 'F32'] as const)],
      ];
      for (const [fn, args, to] of cases) {
        expect(await compare(fn, args, info, z, mask, tile, to)).toBeUndefined();
        compared++;
      }
    }
    expect(compared).toBe(240);
  });

  it('fall back to TypeScript for what they do not take (an S16 DEM, an F64 output)', async () => {
    const info = gridInfo({ width: 20, height: 20, pixelType: 'S16', cellSize: 10 });
    const z = Int16Array.from({ length: 400 }, (_, i) => (i * 37) % 101);
    const before = wasmCallCount();
    const node = applyFunction(slope, {}, [memorySource('s16', info, [z])]);
    await render(node, { tileSize: 64 });
    const f32 = gridInfo({ width: 20, height: 20, cellSize: 10 });
    await render(applyFunction(slope, {}, [memorySource('f32', f32, [Float32Array.from(z)])], 'F64'), { tileSize: 64 });
    expect(wasmCallCount()).toBe(before);
  });

  it('are switched off by RASTERFLOW_SIMD=0 (the TypeScript path runs)', async () => {
    vi.stubEnv('RASTERFLOW_SIMD', '0');
    vi.resetModules();
    try {
      const m = await import('./module.js');
      const t = await import('./terrain.js');
      const s = await import('../functions/terrain/slope.js');
      expect(m.wasmStatus()).toEqual({ enabled: false, detail: 'switched off (RASTERFLOW_SIMD=0)' });
      const info = gridInfo({ width: 40, height: 30, cellSize: 10 });
      const z = Float32Array.from({ length: 1200 }, (_, i) => Math.sin(i / 9) * 50);
      const out = await render(applyFunction(s.slope, {}, [memorySource('off', info, [z])]), { tileSize: 64 });
      expect(t.wasmCallCount()).toBe(0);
      expect(out.mask.some((v) => v === 1)).toBe(true);
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  });
});

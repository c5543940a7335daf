import { describe, expect, it } from 'vitest';
import type { PixelBlock } from '../../core/pixel-block.js';
import type { SourceNode } from '../../graph/types.js';
import { applyFunction, catchError, gridInfo, rasterOf, runFunction, tiledVersusWhole } from '../../../test/helpers.js';
import { classify } from './classify.js';
import { cholesky, invertLower } from './definition.js';
import { MAX_WHOLE_PIXELS } from './whole-image.js';

type Cls = { v: number; m: number[]; c: number[][]; rgb?: [number, number, number]; name?: string };
const def = (classes: Cls[], extra: Record<string, unknown> = {}) => ({
  geoClassifierDefinitionFile: 0,
  FileVersion: 1,
  NumberDefinitions: 1,
  Definitions: [
    {
      Classifier: 'MaximumLikelihood',
      NumberClasses: classes.length,
      RasterIsSegmented: false,
      NumberBands: classes[0]!.m.length,
      Classes: classes.map((k) => ({
        ClassValue: k.v,
        ClassName: k.name ?? `c${k.v}`,
        ...(k.rgb ? { Red: k.rgb[0], Green: k.rgb[1], Blue: k.rgb[2] } : {}),
        Count: 10,
        Means: k.m,
        Covariances: k.c,
      })),
      ...extra,
    },
  ],
});

// One band: class 1 N(10, 4), class 2 N(20, 16).
const oneBand = def([
  { v: 1, m: [10], c: [[4]], rgb: [0, 0, 255] },
  { v: 2, m: [20], c: [[16]], rgb: [0, 255, 0] },
]);
const P = 'rasterFunctionArguments.ClassifierDefinition';

describe('Classify: hand-derived maximum likelihood', () => {
  it('1-D: class 1 exactly on (-0.53, 13.87)', async () => {
    // Derived by hand from g_k = -0.5 ln s_k^2 - 0.5 (x - m_k)^2 / s_k^2: g1 = g2 <=> 3x^2 - 40x - 16 ln 4 = 0,
    // roots x = (40 +- sqrt(1600 + 192 ln 4)) / 6 = -0.530, 13.864. So -1 -> 2, 0..13 -> 1, 14..30 -> 2.
    const r = await runFunction(classify, { ClassifierDefinition: oneBand }, [rasterOf({ width: 32, height: 1 }, (x) => x - 1)]);
    for (let x = 0; x < 32; x++) {
      const v = x - 1;
      expect(r.value(x, 0), `x = ${v}`).toBe(v >= 0 && v <= 13 ? 1 : 2);
    }
  });

  it('2-D: correlated covariance (quadratic form through the Cholesky factor)', async () => {
    // Class A: mean (0, 0), S = [[4, 2], [2, 3]], |S| = 8, S^-1 = [[3, -2], [-2, 4]] / 8.
    // Class B: mean (3, 3), S = I. By hand, g = -0.5 ln|S| - 0.5 q:
    //   (2, 1): qA = 1, gA = -1.540; qB = 5, gB = -2.5 -> A
    //   (3, 2): qA = 2.375, gA = -2.227; qB = 1, gB = -0.5 -> B
    //   (1, 3): qA = 3.375, gA = -2.727; qB = 4, gB = -2 -> B
    //   (-1, 2): qA = 3.375, gA = -2.727; qB = 17, gB = -8.5 -> A
    const d = def([
      {
        v: 7,
        m: [0, 0],
        c: [
          [4, 2],
          [2, 3],
        ],
      },
      {
        v: 9,
        m: [3, 3],
        c: [
          [1, 0],
          [0, 1],
        ],
      },
    ]);
    const pts = [
      [2, 1],
      [3, 2],
      [1, 3],
      [-1, 2],
    ];
    const r = await runFunction(classify, { ClassifierDefinition: d }, [
      rasterOf({ width: 4, height: 1, bandCount: 2 }, (x, _y, b) => pts[x]![b]!),
    ]);
    expect([0, 1, 2, 3].map((x) => r.value(x, 0))).toEqual([7, 9, 9, 7]);
  });

  it('the Cholesky factor reproduces the inverse and determinant', () => {
    const s = Float64Array.from([4, 2, 2, 3]);
    const l = cholesky(s, 2) as Float64Array;
    const m = invertLower(l, 2);
    // M'M = S^-1 = [[3, -2], [-2, 4]] / 8; ln|S| = 2 (ln L00 + ln L11) = ln 8.
    const inv = [m[0]! * m[0]! + m[2]! * m[2]!, m[2]! * m[3]!, m[3]! * m[3]!];
    expect(inv[0]).toBeCloseTo(3 / 8, 14);
    expect(inv[1]).toBeCloseTo(-2 / 8, 14);
    expect(inv[2]).toBeCloseTo(4 / 8, 14);
    expect(2 * (Math.log(l[0]!) + Math.log(l[3]!))).toBeCloseTo(Math.log(8), 14);
    expect(cholesky(Float64Array.from([1, 1, 1, 1]), 2)).toBe(1);
  });

  it('ties go to the first class; NoData stays NoData', async () => {
    const d = def([
      { v: 5, m: [1], c: [[1]] },
      { v: 3, m: [1], c: [[1]] },
    ]);
    const mask = Uint8Array.from([1, 0, 1]);
    const r = await runFunction(classify, { ClassifierDefinition: d }, [rasterOf({ width: 3, height: 1 }, () => 1, mask)]);
    expect(r.value(0, 0)).toBe(5);
    expect(r.valid(1, 0)).toBe(false);
    expect(r.value(2, 0)).toBe(5);
  });

  it('output info: U8 with colormap and statistics; U16 / S32 for larger or negative values; JSON strings accepted', () => {
    const n = applyFunction(classify, { ClassifierDefinition: JSON.stringify(oneBand) }, [rasterOf({ width: 2, height: 1 }, () => 0)]);
    expect(n.info).toMatchObject({ pixelType: 'U8', bandCount: 1, noData: 0, statistics: [{ min: 1, max: 2 }] });
    expect([...n.info.colormap!.values]).toEqual([1, 2]);
    expect([...n.info.colormap!.rgb]).toEqual([0, 0, 255, 0, 255, 0]);
    const big = def([
      { v: 300, m: [1], c: [[1]] },
      { v: 0, m: [5], c: [[1]] },
    ]);
    const nb = applyFunction(classify, { ClassifierDefinition: big }, [rasterOf({ width: 2, height: 1 }, () => 0)]);
    expect(nb.info.pixelType).toBe('U16');
    expect(nb.info.noData).toBeUndefined(); // 0 is a class
    expect(nb.info.colormap).toBeUndefined(); // no colours given
    const neg = def([
      { v: -1, m: [1], c: [[1]] },
      { v: 2, m: [5], c: [[1]] },
    ]);
    expect(applyFunction(classify, { ClassifierDefinition: neg }, [rasterOf({ width: 2, height: 1 }, () => 0)]).info.pixelType).toBe('S32');
  });
});

describe('Classify: segmented Raster2', () => {
  // Raster (1 band): 12 16 | 0 1 | 25 ; Raster2 ids: 4 4 | 5 5 | 6 | 5 (a second region with id 5).
  const values = [12, 16, 0, 1, 2, 25];
  const ids = [4, 4, 5, 5, 6, 5];
  const raster = rasterOf({ width: 6, height: 1 }, (x) => values[x]!);
  const segs = rasterOf({ width: 6, height: 1, pixelType: 'U16' }, (x) => ids[x]!);

  it('all pixels of a segment take the class of its mean; equal ids apart are separate segments', async () => {
    // Segment {12, 16}: mean 14 > 13.87 -> class 2 (per pixel 12 would be class 1).
    // Segment {0, 1} (id 5): mean 0.5 -> 1; {2} (id 6) -> 1; the lone id-5 pixel 25 is its own segment -> 2.
    const r = await runFunction(classify, { ClassifierDefinition: oneBand }, [raster, segs]);
    expect([0, 1, 2, 3, 4, 5].map((x) => r.value(x, 0))).toEqual([2, 2, 1, 1, 1, 2]);
    const perPixel = await runFunction(classify, { ClassifierDefinition: oneBand }, [raster]);
    expect(perPixel.value(0, 0)).toBe(1);
  });

  it('segments are 8-connected across rows; NoData in Raster2 or in the whole segment gives NoData', async () => {
    // 3 x 2: ids 1 2 2 / 2 1 1 -> id 1 at (0,0) touches (1,1) diagonally: one segment {(0,0), (1,1), (2,1)}.
    const ids2 = [1, 2, 2, 2, 1, 1];
    const vals = [0, 30, 30, 30, 0, 30];
    const maskR = Uint8Array.from([1, 1, 1, 1, 1, 1]);
    const r = await runFunction(classify, { ClassifierDefinition: oneBand }, [
      rasterOf({ width: 3, height: 2 }, (x, y) => vals[y * 3 + x]!),
      rasterOf({ width: 3, height: 2, pixelType: 'U8' }, (x, y) => ids2[y * 3 + x]!, maskR),
    ]);
    // Segment of id 1: mean (0 + 0 + 30) / 3 = 10 -> class 1, including the pixel valued 30.
    expect(r.value(2, 1)).toBe(1);
    expect(r.value(0, 0)).toBe(1);
    // id 2: (1,0), (2,0), (0,1) connected (diagonal (1,0)-(0,1)); mean 30 -> class 2.
    expect(r.value(0, 1)).toBe(2);

    const segMask = Uint8Array.from([0, 1, 1, 1, 1, 1]);
    const rasterMask = Uint8Array.from([1, 0, 0, 0, 1, 1]);
    const r2 = await runFunction(classify, { ClassifierDefinition: oneBand }, [
      rasterOf({ width: 3, height: 2 }, (x, y) => vals[y * 3 + x]!, rasterMask),
      rasterOf({ width: 3, height: 2, pixelType: 'U8' }, (x, y) => ids2[y * 3 + x]!, segMask),
    ]);
    expect(r2.valid(0, 0)).toBe(false); // Raster2 NoData
    expect(r2.valid(2, 0)).toBe(false); // segment id 2 has no valid Raster pixel
    expect(r2.value(1, 1)).toBe(2); // id 1 now {(1,1), (2,1)}: mean 15 -> 2
  });

  it('tiled equals whole for any tile size (whole-image context)', async () => {
    const W = 23;
    const H = 17;
    const node = applyFunction(classify, { ClassifierDefinition: oneBand }, [
      rasterOf({ width: W, height: H }, (x, y) => (x * 7 + y * 11) % 31),
      rasterOf({ width: W, height: H, pixelType: 'U8' }, (x, y) => Math.floor(x / 5) + 5 * Math.floor(y / 4)),
    ]);
    for (const t of [
      [1, 1],
      [4, 3],
      [9, 17],
    ] as [number, number][])
      expect(await tiledVersusWhole(node, t)).toBeUndefined();
  });
});

describe('Classify: bad arguments (code and path)', () => {
  const r1 = rasterOf({ width: 2, height: 1 }, () => 0);
  const err = (d: unknown, inputs = [r1]) => catchError(() => applyFunction(classify, { ClassifierDefinition: d }, inputs));

  it('singular and non-symmetric covariances name the class', () => {
    const sing = def([
      {
        v: 1,
        m: [1, 2],
        c: [
          [1, 0],
          [0, 1],
        ],
      },
      {
        v: 2,
        m: [3, 4],
        c: [
          [1, 1],
          [1, 1],
        ],
        name: 'Water',
      },
    ]);
    const e = err(sing, [rasterOf({ width: 2, height: 1, bandCount: 2 }, () => 0)]);
    expect(e).toMatchObject({ code: 'INVALID_ARGUMENT', path: `${P}.Definitions[0].Classes[1].Covariances` });
    expect(e!.message).toContain('class 2 ("Water")');
    expect(e!.message).toContain('singular');
    const asym = def([
      {
        v: 1,
        m: [1, 2],
        c: [
          [1, 0.5],
          [0, 1],
        ],
      },
    ]);
    expect(err(asym, [rasterOf({ width: 2, height: 1, bandCount: 2 }, () => 0)])).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: `${P}.Definitions[0].Classes[0].Covariances[1][0]`,
    });
  });

  it('shapes, counts and types', () => {
    expect(err(undefined)).toMatchObject({ code: 'INVALID_ARGUMENT', path: P });
    expect(err('{not json')).toMatchObject({ code: 'INVALID_ARGUMENT', path: P });
    expect(err({ Definitions: [] })).toMatchObject({ code: 'INVALID_ARGUMENT', path: `${P}.Definitions` });
    expect(
      err(
        def([
          {
            v: 1,
            m: [1, 2],
            c: [
              [1, 0],
              [0, 1],
            ],
          },
        ]),
      ),
    ).toMatchObject({ code: 'INVALID_ARGUMENT', path: `${P}.Definitions[0].NumberBands` });
    const badMeans = def([{ v: 1, m: [1], c: [[1]] }]);
    (badMeans.Definitions[0]!.Classes[0] as { Means: unknown }).Means = [1, 2];
    expect(err(badMeans)).toMatchObject({ code: 'INVALID_ARGUMENT', path: `${P}.Definitions[0].Classes[0].Means` });
    const badCell = def([{ v: 1, m: [1], c: [['x' as unknown as number]] }]);
    expect(err(badCell)).toMatchObject({ code: 'INVALID_ARGUMENT', path: `${P}.Definitions[0].Classes[0].Covariances[0][0]` });
    expect(
      err(
        def([
          { v: 1, m: [1], c: [[1]] },
          { v: 1, m: [2], c: [[1]] },
        ]),
      ),
    ).toMatchObject({ path: `${P}.Definitions[0].Classes[1].ClassValue` });
    expect(err(def([{ v: 1.5, m: [1], c: [[1]] }]))).toMatchObject({ path: `${P}.Definitions[0].Classes[0].ClassValue` });
    expect(err(def([{ v: 1, m: [1], c: [[1]], rgb: [0, 0, 300] }]))).toMatchObject({ path: `${P}.Definitions[0].Classes[0].Blue` });
    expect(err(def([{ v: 1, m: [1], c: [[1]] }], { NumberClasses: 3 }))).toMatchObject({ path: `${P}.Definitions[0].NumberClasses` });
    expect(err(def([{ v: 1, m: [1], c: [[1]] }], { Classifier: 'SVM' }))).toMatchObject({
      code: 'UNSUPPORTED_INPUT',
      path: `${P}.Definitions[0].Classifier`,
    });
    const noCov = def([{ v: 1, m: [1], c: [[1]] }]);
    delete (noCov.Definitions[0]!.Classes[0] as { Covariances?: unknown }).Covariances;
    expect(err(noCov)).toMatchObject({ code: 'INVALID_ARGUMENT', path: `${P}.Definitions[0].Classes[0].Covariances` });
  });

  it('Raster2 on another grid is aligned, one that does not overlap is INVALID_ARGUMENT; whole-image size is LIMIT_EXCEEDED', () => {
    const other = rasterOf({ width: 3, height: 1 }, () => 0);
    const aligned = applyFunction(classify, { ClassifierDefinition: oneBand }, [r1, other]);
    expect(aligned.plan.align?.[1]).toEqual({ method: 'nearest' });
    expect(aligned.inputs[1]!.info.width).toBe(2);
    const far = rasterOf({ width: 2, height: 1, origin: { x: 100, y: 0 } }, () => 0);
    expect(catchError(() => applyFunction(classify, { ClassifierDefinition: oneBand }, [r1, far]))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.Raster2',
    });
    const side = Math.ceil(Math.sqrt(MAX_WHOLE_PIXELS)) + 1;
    const huge = (id: string): SourceNode => ({
      kind: 'source',
      id,
      info: gridInfo({ width: side, height: side }),
      read: () => Promise.reject(new Error('not read')) as Promise<PixelBlock>,
    });
    expect(catchError(() => applyFunction(classify, { ClassifierDefinition: oneBand }, [huge('a'), huge('b')]))).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      path: 'rasterFunctionArguments.Raster2',
    });
    // Per pixel, any size is fine.
    expect(applyFunction(classify, { ClassifierDefinition: oneBand }, [huge('a')]).info.width).toBe(side);
  });
});

/**
 * Colour ramps (spec Appendix B). Expected colours are derived by hand from the formulas of B.1
 * (the derivation is in each test's comment), except the "faithful port" check values, which the
 * spec's Colormap section lists for its named HSV colormaps.
 */
import { describe, expect, it } from 'vitest';
import { EngineError } from '../../core/errors.js';
import {
  type AlgorithmicRamp,
  type ColorRamp,
  colormapIndex,
  hsvToRgb,
  hueSaturation,
  labToRgb,
  parseColormap,
  parseColorRamp,
  PREDEFINED_RAMP_NAMES,
  PREDEFINED_RAMPS,
  predefinedRamp,
  rampColors,
  rgbToHsv,
  rgbToLab,
} from './ramps.js';

const colors = (t: { rgb: Uint8Array }): number[][] => {
  const out: number[][] = [];
  for (let i = 0; i < t.rgb.length; i += 3) out.push([t.rgb[i]!, t.rgb[i + 1]!, t.rgb[i + 2]!]);
  return out;
};
const ramp = (fromColor: number[], toColor: number[], algorithm: AlgorithmicRamp['algorithm'] = 'geoHSVAlgorithm'): AlgorithmicRamp => ({
  type: 'algorithmic',
  fromColor,
  toColor,
  algorithm,
});

function thrown(f: () => unknown): EngineError {
  try {
    f();
  } catch (e) {
    if (e instanceof EngineError) return e;
    throw e;
  }
  throw new Error('expected an EngineError');
}

describe('colour conversions (B.1)', () => {
  it('RGB -> HSV as ColorspaceConversion: H 0..360, S and V 0..100', () => {
    expect([...rgbToHsv(255, 0, 0)]).toEqual([0, 100, 100]);
    // max = b: H = 60 ((r - g) / d + 4) = 60 (4 - 128/255) = 209.882...
    const h = rgbToHsv(0, 128, 255);
    expect(h[0]).toBeCloseTo(60 * (4 - 128 / 255), 12);
    expect([h[1], h[2]]).toEqual([100, 100]);
    // max = r, g < b: (g - b) / d mod 6 = 6 - 1/3 -> 340 degrees
    expect(rgbToHsv(255, 0, 85)[0]).toBeCloseTo(340, 12);
    expect([...rgbToHsv(100, 100, 100)]).toEqual([0, 0, (100 * 100) / 255]);
    expect([...rgbToHsv(0, 0, 0)]).toEqual([0, 0, 0]);
  });

  it('HSV -> RGB rounds half up', () => {
    const out = [0, 0, 0];
    hsvToRgb(330, 100, 100, out); // sector 5 (C, 0, X), X = 255 (1 - |5.5 mod 2 - 1|) = 127.5 -> 128
    expect(out).toEqual([255, 0, 128]);
    hsvToRgb(90, 100, 100, out); // sector 1 (X, C, 0), X = 127.5 -> 128
    expect(out).toEqual([128, 255, 0]);
    hsvToRgb(0, 0, 50, out); // grey 127.5 -> 128
    expect(out).toEqual([128, 128, 128]);
  });

  it('RGB -> Lab with the spec matrix and D65 white', () => {
    // White: X = 95.05, Y = 100, Z = 108.9 (row sums x 100): L 100, a = 500 (f(95.05/95.047) - 1) = 0.00526,
    // b = 200 (1 - f(108.9/108.883)) = -0.0104.
    const w = rgbToLab(255, 255, 255);
    expect(w[0]).toBeCloseTo(100, 10);
    expect(w[1]).toBeCloseTo(0.00526, 5);
    expect(w[2]).toBeCloseTo(-0.01041, 5);
    expect([...rgbToLab(0, 0, 0)]).toEqual([0, 0, 0]);
    // Pure red: (53.23, 80.11, 67.22) (the textbook sRGB value is 53.24, 80.09, 67.20).
    const r = rgbToLab(255, 0, 0);
    expect(r[0]).toBeCloseTo(53.233, 3);
    expect(r[1]).toBeCloseTo(80.109, 3);
    expect(r[2]).toBeCloseTo(67.22, 3);
  });

  it('Lab -> RGB: L 50 grey is 119', () => {
    // fy = 66/116, Y = fy^3 = 0.18419; X = 0.17506, Z = 0.20055; each channel (inverse matrix) about
    // 0.18418, gamma 1.055 c^(1/2.4) - 0.055 = 0.4663, x 255 = 118.9 -> 119.
    const out = [0, 0, 0];
    labToRgb(50, 0, 0, out);
    expect(out).toEqual([119, 119, 119]);
    labToRgb(100, 0, 0, out);
    expect(out).toEqual([255, 255, 255]);
  });

  it('hue in sextants and saturation 0..1, the form the ShadedRelief tint reads', () => {
    const { hue, saturation } = hueSaturation(Uint8Array.of(255, 0, 0, 0, 128, 255, 200, 100, 50, 90, 90, 90));
    expect([...hue]).toEqual([0, 4 - 128 / 255, 50 / 150, 0]);
    expect([...saturation]).toEqual([1, 1, 0.75, 0]);
  });
});

describe('algorithmic ramps (B.1)', () => {
  it('HSV red -> blue goes the short way round (through magenta)', () => {
    // H 0 -> 240: |dh| = 240 >= 180, H1 < H2: step -(360 - 240) / 4 = -30 per colour: 0, 330, 300, 270, then toColor.
    // 330 and 270 put X = 127.5 in R or B, rounded half up to 128.
    expect(colors(rampColors(ramp([255, 0, 0], [0, 0, 255]), 5))).toEqual([
      [255, 0, 0],
      [255, 0, 128],
      [255, 0, 255],
      [128, 0, 255],
      [0, 0, 255],
    ]);
    // Magenta (300) -> red (0): |dh| = 300, H1 > H2: +60 over the ramp, through 330.
    expect(colors(rampColors(ramp([255, 0, 255], [255, 0, 0]), 3))).toEqual([
      [255, 0, 255],
      [255, 0, 128],
      [255, 0, 0],
    ]);
  });

  it('HSV: a grey end takes the other end hue', () => {
    // Grey (100,100,100) -> blue: the grey end gets H 240. Colour 1 (t 0.25): S 25, V = 39.216 + 0.25 x 60.784 = 54.412;
    // sector 4 with X = 0: (m, m, C + m) = (0.40809, 0.40809, 0.54412) x 255 = (104.06, 104.06, 138.75).
    // Without the rule the hue would run 0 -> 330 (reddish).
    const t = colors(rampColors(ramp([100, 100, 100], [0, 0, 255]), 5));
    expect(t[1]).toEqual([104, 104, 139]);
    expect(t[0]).toEqual([100, 100, 100]);
    expect(t[4]).toEqual([0, 0, 255]);
  });

  it('CIELab black -> white: L steps linearly', () => {
    // Colour 1 of 3: L 50, a and b half of white's (0.0026, -0.0052): (119, 119, 119) as L 50 grey.
    expect(colors(rampColors(ramp([0, 0, 0], [255, 255, 255], 'geoCIELabAlgorithm'), 3))).toEqual([
      [0, 0, 0],
      [119, 119, 119],
      [255, 255, 255],
    ]);
  });

  it('CIELab and LCh part ways on saturated colours', () => {
    // Red (53.233, 80.109, 67.220) -> blue (32.303, 79.197, -107.864).
    // Lab midpoint (42.768, 79.653, -20.322) -> (202, 0, 136).
    // LCh: C 104.576 -> 133.816, h 0.69813 -> -0.93747 rad (shorter arc -1.63560): midpoint C 119.196,
    // h -0.11967 -> (a, b) = (118.343, -14.233) -> (251, 0, 128).
    expect(colors(rampColors(ramp([255, 0, 0], [0, 0, 255], 'geoCIELabAlgorithm'), 3))[1]).toEqual([202, 0, 136]);
    expect(colors(rampColors(ramp([255, 0, 0], [0, 0, 255], 'geoLabLChAlgorithm'), 3))[1]).toEqual([251, 0, 128]);
    // Greys have almost no chroma (white's is 0.0117): LCh and Lab agree within a rounding tie.
    const bw = (alg: AlgorithmicRamp['algorithm']) => [...rampColors(ramp([0, 0, 0], [255, 255, 255], alg)).rgb];
    const lab = bw('geoCIELabAlgorithm');
    expect(Math.max(...bw('geoLabLChAlgorithm').map((v, i) => Math.abs(v - lab[i]!)))).toBeLessThanOrEqual(1);
  });

  it('interpolates alpha when the ramp has it, else has none', () => {
    const t = rampColors(ramp([0, 0, 0, 0], [0, 0, 0, 255]), 3);
    expect([...t.alpha!]).toEqual([0, 128, 255]); // 127.5 rounded half up
    expect(rampColors(ramp([0, 0, 0], [9, 9, 9]), 3).alpha).toBeUndefined();
  });

  it('ends exactly on toColor', () => {
    const t = rampColors(ramp([12, 34, 56], [201, 7, 99], 'geoCIELabAlgorithm'), 256);
    expect(colors(t)[255]).toEqual([201, 7, 99]);
    expect(t.size).toBe(256);
  });
});

describe('multipart ramps (B.1)', () => {
  const ry = ramp([255, 0, 0], [255, 255, 0]); // H 0 -> 60
  const yg = ramp([255, 255, 0], [0, 255, 0]); // H 60 -> 120
  const two: ColorRamp = { type: 'multipart', colorRamps: [ry, yg] };

  it('N = 5, equal weights: ceil(0.5 / 0.25) = 2 colours per part, then the final toColor', () => {
    // Part 1 at local 0, 0.5 (H 0, 30); part 2 (offset 0) at local 0, 0.5 (H 60, 90); then green.
    expect(colors(rampColors(two, 5))).toEqual([
      [255, 0, 0],
      [255, 128, 0],
      [255, 255, 0],
      [128, 255, 0],
      [0, 255, 0],
    ]);
  });

  it('N = 4: the offset carries into the next part so colours stay evenly spaced', () => {
    // Step 1/3. Part 1: ceil(0.5 x 3) = 2 colours at t 0, 1/3 (local 0, 2/3 -> H 40 -> (255, 170, 0)).
    // Offset 2/3 - 1/2 = 1/6; part 2 makes the remaining 1 colour at t 2/3 (local 1/3 -> H 80 -> (170, 255, 0)).
    expect(colors(rampColors(two, 4))).toEqual([
      [255, 0, 0],
      [255, 170, 0],
      [170, 255, 0],
      [0, 255, 0],
    ]);
  });

  // The spec's Colormap section lists these named colormaps as HSV multipart ramps with weights equal
  // to the stop gaps (Elevation, NDVI2) or explicit (Hillshade), and check values from a faithful port.
  const hsvStops = (stops: [number, number[]][], weights?: number[]): ColorRamp => ({
    type: 'multipart',
    colorRamps: stops.slice(1).map((s, i) => ramp(stops[i]![1], s[1])),
    weights: weights ?? stops.slice(1).map((s, i) => s[0] - stops[i]![0]),
  });
  const at = (t: { rgb: Uint8Array }, i: number) => [t.rgb[3 * i], t.rgb[3 * i + 1], t.rgb[3 * i + 2]];

  it('reproduces the spec check values of the Elevation colormap (weights = stop gaps)', () => {
    const t = rampColors(
      hsvStops([
        [0, [0, 191, 191]],
        [51, [0, 255, 0]],
        [102, [255, 255, 0]],
        [153, [255, 127, 0]],
        [204, [191, 127, 63]],
        [256, [20, 20, 20]],
      ]),
    );
    const want: [number, number[]][] = [
      [0, [0, 191, 191]],
      [1, [0, 192, 188]],
      [25, [0, 222, 113]],
      [50, [0, 254, 4]],
      [51, [1, 255, 0]],
      [100, [247, 255, 0]],
      [128, [255, 188, 0]],
      [150, [255, 133, 0]],
      [200, [195, 128, 60]],
      [254, [23, 23, 23]],
      [255, [20, 20, 20]],
    ];
    for (const [i, c] of want) expect(at(t, i), `[${i}]`).toEqual(c);
  });

  it('reproduces the spec check values of NDVI2 (201 colours) and Hillshade (explicit weights)', () => {
    const ndvi2 = rampColors(
      hsvStops([
        [0, [255, 255, 255]],
        [70, [0, 0, 255]],
        [80, [205, 193, 173]],
        [100, [150, 150, 150]],
        [110, [120, 100, 51]],
        [130, [120, 200, 100]],
        [140, [28, 144, 3]],
        [160, [6, 55, 0]],
        [180, [10, 30, 25]],
        [201, [6, 27, 7]],
      ]),
      201,
    );
    // [100] is a half-up tie (V 58.235 -> 148.5): it needs the carried offset without drift.
    const want: [number, number[]][] = [
      [1, [251, 251, 255]],
      [25, [163, 163, 255]],
      [50, [72, 72, 255]],
      [100, [149, 147, 144]],
      [128, [123, 195, 96]],
      [150, [14, 96, 1]],
      [200, [6, 27, 7]],
    ];
    for (const [i, c] of want) expect(at(ndvi2, i), `NDVI2 [${i}]`).toEqual(c);
    const hs = rampColors(
      hsvStops(
        [
          [0, [38, 54, 41]],
          [69, [79, 90, 82]],
          [131, [156, 156, 156]],
          [256, [253, 241, 253]],
        ],
        [0.268, 0.238, 0.495],
      ),
    );
    const wantHs: [number, number[]][] = [
      [25, [52, 67, 55]],
      [100, [117, 125, 119]],
      [128, [155, 155, 155]],
      [200, [211, 205, 211]],
      [255, [253, 241, 253]],
    ];
    for (const [i, c] of wantHs) expect(at(hs, i), `Hillshade [${i}]`).toEqual(c);
  });
});

describe('predefined ramps (B.2)', () => {
  it('lists the 57 names of B.2 and finds them in any case', () => {
    expect(PREDEFINED_RAMP_NAMES).toHaveLength(57);
    expect(PREDEFINED_RAMPS.size).toBe(57);
    // The spelling used in the spec's REST examples.
    for (const name of ['Black To White', 'Yellow To Red', 'Slope', ' elevation #1 ']) expect(predefinedRamp(name), name).toBeDefined();
    expect(predefinedRamp('Black to White')).toEqual(ramp([0, 0, 0], [255, 255, 255], 'geoCIELabAlgorithm'));
    expect(predefinedRamp('Rainbow')).toBeUndefined();
  });

  it('expands with CIELab and equal weights; the multipart Slope ramp splits 128 + 127 + 1', () => {
    const slope = predefinedRamp('Slope')!;
    expect(slope.type).toBe('multipart');
    if (slope.type !== 'multipart') return;
    expect(slope.colorRamps.every((r) => r.algorithm === 'geoCIELabAlgorithm')).toBe(true);
    const t = colors(rampColors(slope));
    // Part 1 makes ceil(0.5 x 255) = 128 colours (0..127); colour 128 is part 2 at local (128/255 - 0.5) / 0.5 = 1/255,
    // i.e. colour 1 of a 256-colour yellow -> red Lab ramp.
    const yellowRed = colors(rampColors(ramp([255, 255, 0], [255, 0, 0], 'geoCIELabAlgorithm')));
    expect(t[128]).toEqual(yellowRed[1]);
    expect(t[255]).toEqual([255, 0, 0]);
    // Colour 127 = part 1 at local 254/255, i.e. colour 254 of a green -> yellow Lab ramp.
    expect(t[127]).toEqual(colors(rampColors(ramp([56, 168, 0], [255, 255, 0], 'geoCIELabAlgorithm')))[254]);
  });

  it('every ramp makes 256 colours that start at its first colour (Lab round trip within 1) and end on its last', () => {
    for (const [name, r] of PREDEFINED_RAMPS) {
      const t = colors(rampColors(r));
      expect(t, name).toHaveLength(256);
      const parts = r.type === 'algorithmic' ? [r] : r.colorRamps;
      const first = parts[0]!.fromColor;
      for (let k = 0; k < 3; k++) expect(Math.abs(t[0]![k]! - first[k]!), `${name} colour 0`).toBeLessThanOrEqual(1);
      expect(t[255], name).toEqual(parts[parts.length - 1]!.toColor.slice(0, 3));
    }
  });
});

describe('parsing ramps from rule JSON', () => {
  const P = 'rasterFunctionArguments.Colorramp';

  it('accepts a name, an algorithmic and a multipart object (member names in any case)', () => {
    expect(parseColorRamp('yellow to red', P)).toBe(predefinedRamp('Yellow to Red'));
    expect(
      parseColorRamp({ type: 'algorithmic', fromColor: [0, 0, 0, 255], toColor: ['255', 0, 0, 255], algorithm: 'geoCIELabAlgorithm' }, P),
    ).toEqual(ramp([0, 0, 0, 255], [255, 0, 0, 255], 'geoCIELabAlgorithm'));
    expect(
      parseColorRamp({ Type: 'Multipart', ColorRamps: [{ FromColor: [1, 2, 3], ToColor: [4, 5, 6], Algorithm: 'GEOHSVALGORITHM' }] }, P),
    ).toEqual({
      type: 'multipart',
      colorRamps: [ramp([1, 2, 3], [4, 5, 6])],
    });
  });

  it('defaults a missing algorithm to HSV (the template reader)', () => {
    expect(parseColorRamp({ type: 'algorithmic', fromColor: [0, 0, 0], toColor: [9, 9, 9] }, P)).toEqual(
      ramp([0, 0, 0], [9, 9, 9], 'geoHSVAlgorithm'),
    );
  });

  it.each([
    ['Rainbow', P, /unknown colour ramp "Rainbow"/],
    ['Slop', P, /did you mean Slope/],
    [42, P, /name or a ramp object/],
    [{ type: 'gradient' }, `${P}.type`, /algorithmic" or "multipart/],
    [{ fromColor: [0, 0, 0], toColor: [1, 1, 1] }, `${P}.type`, /algorithmic" or "multipart/],
    [{ type: 'algorithmic', toColor: [1, 1, 1] }, `${P}.fromColor`, /needs fromColor/],
    [{ type: 'algorithmic', fromColor: [0, 0], toColor: [1, 1, 1] }, `${P}.fromColor`, /colour must be/],
    [{ type: 'algorithmic', fromColor: [0, 0, 256], toColor: [1, 1, 1] }, `${P}.fromColor[2]`, /integer 0\.\.255/],
    [
      { type: 'algorithmic', fromColor: [0, 0, 0], toColor: [1, 1, 1], algorithm: 'rgb' },
      `${P}.algorithm`,
      /geoHSVAlgorithm, geoCIELabAlgorithm/,
    ],
    [{ type: 'multipart', colorRamps: [] }, `${P}.colorRamps`, /non-empty/],
    [
      { type: 'multipart', colorRamps: [{ type: 'algorithmic', fromColor: [0, 0, 0], toColor: [1, 1, 1] }, 'x'] },
      `${P}.colorRamps[1]`,
      /algorithmic ramp object/,
    ],
    [{ type: 'multipart', colorRamps: [{ type: 'multipart', colorRamps: [] }] }, `${P}.colorRamps[0].type`, /must be "algorithmic"/],
    [
      { type: 'multipart', colorRamps: [{ fromColor: [0, 0, 0], toColor: [1, 1, -1] }] },
      `${P}.colorRamps[0].toColor[2]`,
      /integer 0\.\.255/,
    ],
  ])('rejects %j at %s', (value, path, message) => {
    const e = thrown(() => parseColorRamp(value, P));
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.path).toBe(path);
    expect(e.message).toMatch(message);
  });
});

describe('colormaps', () => {
  const P = 'rasterFunctionArguments.Colormap';

  it('sorts entries by value, keeps the last colour of a repeated value, accepts numeric strings', () => {
    const cm = parseColormap(
      [
        [10, 1, 2, 3],
        [-5, 4, 5, 6],
        ['10', '7', 8, 9],
        [3, 0, 0, 0],
      ],
      P,
    );
    expect([...cm.values]).toEqual([-5, 3, 10]);
    expect([...cm.rgb]).toEqual([4, 5, 6, 0, 0, 0, 7, 8, 9]);
    expect(cm.alpha).toBeUndefined();
  });

  it('keeps an alpha column when an entry has one (255 for the others)', () => {
    const cm = parseColormap(
      [
        [1, 1, 1, 1, 0],
        [2, 2, 2, 2],
      ],
      P,
    );
    expect([...cm.alpha!]).toEqual([0, 255]);
  });

  it('looks values up by binary search, -1 when absent', () => {
    const { values } = parseColormap(
      [
        [0, 0, 0, 0],
        [5, 0, 0, 0],
        [7, 0, 0, 0],
        [100, 0, 0, 0],
        [1000, 0, 0, 0],
      ],
      P,
    );
    expect([0, 5, 7, 100, 1000, -1, 6, 2000, Number.NaN].map((v) => colormapIndex(values, v))).toEqual([0, 1, 2, 3, 4, -1, -1, -1, -1]);
  });

  it.each([
    ['abc', P, /non-empty array/],
    [[], P, /non-empty array/],
    [[[1, 2, 3]], `${P}[0]`, /\[value, red, green, blue\]/],
    [[[1, 0, 0, 0], 7], `${P}[1]`, /\[value, red, green, blue\]/],
    [[[1.5, 0, 0, 0]], `${P}[0][0]`, /must be an integer/],
    [
      [
        [1, 0, 0, 0],
        [2, 0, 300, 0],
      ],
      `${P}[1][2]`,
      /integer 0\.\.255/,
    ],
    [[[1, 0, 0, 0, -1]], `${P}[0][4]`, /integer 0\.\.255/],
    [[[1, 0, 'red', 0]], `${P}[0][2]`, /integer 0\.\.255/],
  ])('rejects %j at %s', (value, path, message) => {
    const e = thrown(() => parseColormap(value, P));
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.path).toBe(path);
    expect(e.message).toMatch(message);
  });
});

import { describe, expect, it } from 'vitest';
import { applyFunction, catchError, rasterOf, runFunction } from '../../../test/helpers.js';
import { mlClassify, parseSignature } from './ml-classify.js';

// The 2-D case of classify.test.ts as GSG text: class 7 mean (0, 0), S = [[4, 2], [2, 3]]; class 9
// mean (3, 3), S = I. Hand-derived classes: (2,1) -> 7, (3,2) -> 9, (1,3) -> 9, (-1,2) -> 7.
const GSG = `#  Signatures produced by hand
#  Type  Number of Classes  Number of Layers  Number of Parametric Layers
     1          2                 2                   2
# ===============================================================
#  Class ID    Number of Cells    Class Name
        7           120           bare soil
#  Layers          1             2
#  Means
      0  0
#  Covariance
        1   4  2
        2   2  3
# ---------------------------------------------------------------
        9           80
   3, 3
        1   1  0
        2   0  1
`;
const PATH = 'rasterFunctionArguments.SignatureFile';

describe('MLClassify', () => {
  it('parses GSG text (comments, optional names, commas)', () => {
    const s = parseSignature(GSG);
    expect(s.layers).toBe(2);
    expect(s.classes.map((c) => [c.value, c.name, c.count])).toEqual([
      [7, 'bare soil', 120],
      [9, 'Class 9', 80],
    ]);
    expect([...s.classes[0]!.covariance]).toEqual([4, 2, 2, 3]);
  });

  it('classifies with the hand-derived discriminant', async () => {
    const pts = [
      [2, 1],
      [3, 2],
      [1, 3],
      [-1, 2],
    ];
    const mask = Uint8Array.from([1, 1, 1, 1, 0]);
    const r = await runFunction(mlClassify, { SignatureFile: GSG }, [
      rasterOf({ width: 5, height: 1, bandCount: 2 }, (x, _y, b) => pts[x]?.[b] ?? 0, mask),
    ]);
    expect([0, 1, 2, 3].map((x) => r.value(x, 0))).toEqual([7, 9, 9, 7]);
    expect(r.valid(4, 0)).toBe(false);
    expect(r.info).toMatchObject({ pixelType: 'U8', noData: 0, statistics: [{ min: 7, max: 9 }] });
  });

  it('bad signature text: INVALID_ARGUMENT at SignatureFile with the line number', () => {
    const two = rasterOf({ width: 1, height: 1, bandCount: 2 }, () => 0);
    const err = (text: string | undefined, inputs = [two]) =>
      catchError(() => applyFunction(mlClassify, text === undefined ? {} : { SignatureFile: text }, inputs));
    expect(err(undefined)).toMatchObject({ code: 'INVALID_ARGUMENT', path: PATH });
    expect(err('# only a comment\n')).toMatchObject({ code: 'INVALID_ARGUMENT', path: PATH });
    expect(err(GSG.replace('      0  0', '      0  x'))!.message).toContain('line 9');
    expect(err(GSG.replace('        2   2  3', '        3   2  3'))!.message).toMatch(/line 12: covariance row 2 .* starts with layer 3/);
    expect(err(GSG.replace('        2   2  3', '        2   2.5  3'))!.message).toContain('not symmetric');
    expect(err(GSG.replace('        2   0  1\n', ''))!.message).toContain('ends early');
    expect(err(`${GSG}1 2 3\n`)!.message).toContain('unexpected data');
    expect(err(GSG, [rasterOf({ width: 1, height: 1, bandCount: 3 }, () => 0)])!.message).toContain('3 band(s)');
    const singular = GSG.replace('        1   1  0\n        2   0  1', '        1   1  1\n        2   1  1');
    const e = err(singular);
    expect(e).toMatchObject({ code: 'INVALID_ARGUMENT', path: PATH });
    expect(e!.message).toContain('class 9');
  });
});

import { describe, expect, it } from 'vitest';
import { grow, intersect, rect, tiles } from './rect.js';

describe('rect', () => {
  it('cuts an area into row-major tiles with ragged last row and column', () => {
    const t = tiles(rect(3, 4, 10, 7), 4, 5);
    expect(t).toEqual([rect(3, 4, 4, 5), rect(7, 4, 4, 5), rect(11, 4, 2, 5), rect(3, 9, 4, 2), rect(7, 9, 4, 2), rect(11, 9, 2, 2)]);
    expect(t.reduce((s, r) => s + r.width * r.height, 0)).toBe(70);
  });

  it('grows by a halo and intersects', () => {
    expect(grow(rect(0, 0, 2, 2), 2)).toEqual(rect(-2, -2, 6, 6));
    expect(intersect(rect(0, 0, 5, 5), rect(3, -1, 5, 3))).toEqual(rect(3, 0, 2, 2));
    expect(intersect(rect(0, 0, 2, 2), rect(2, 0, 2, 2))).toBeUndefined();
  });
});

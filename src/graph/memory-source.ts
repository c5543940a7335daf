/** In-memory rasters and constant operands as graph sources (tests, embedders, scalar arguments). */
import { allocateBlock, type PixelBlock, type RasterInfo } from '../core/pixel-block.js';
import { allocatePlane, PIXEL_TYPE_INFO, type Plane } from '../core/pixel-type.js';
import { invalidArgument } from '../core/errors.js';
import type { Rect } from '../core/rect.js';
import type { SourceNode } from './types.js';

/**
 * A source over whole-raster planes already in memory. `mask` (1 valid) is optional; pixels equal
 * to `info.noData` are masked too. Reads outside the raster come back with mask 0.
 */
export function memorySource(id: string, info: RasterInfo, bands: readonly Plane[], mask?: Uint8Array): SourceNode {
  const n = info.width * info.height;
  const k = PIXEL_TYPE_INFO[info.pixelType].complex ? 2 : 1;
  if (bands.length !== info.bandCount) {
    throw invalidArgument('bands', `memorySource ${id}: expected ${info.bandCount} band(s) (info.bandCount), got ${bands.length}`);
  }
  const bad = bands.findIndex((b) => b.length !== k * n);
  if (bad >= 0) {
    throw invalidArgument(
      `bands[${bad}]`,
      `memorySource ${id}: expected ${k * n} values (${info.width} x ${info.height}${k === 2 ? ' x 2 for re/im' : ''}), got ${bands[bad]!.length}`,
    );
  }
  if (mask !== undefined && mask.length !== n) {
    throw invalidArgument('mask', `memorySource ${id}: expected ${n} mask values (${info.width} x ${info.height}), got ${mask.length}`);
  }
  const valid = mask ? Uint8Array.from(mask, (m) => (m ? 1 : 0)) : new Uint8Array(n).fill(1);
  if (info.noData !== undefined && k === 1) {
    const nd = info.noData;
    for (const b of bands) for (let i = 0; i < n; i++) if (b[i] === nd || (nd !== nd && b[i] !== b[i])) valid[i] = 0;
  }
  let allValid = true;
  for (let i = 0; i < n && allValid; i++) if (valid[i] !== 1) allValid = false;
  return {
    kind: 'source',
    id,
    info,
    read(r: Rect): Promise<PixelBlock> {
      const x0 = Math.max(0, r.x);
      const x1 = Math.min(info.width, r.x + r.width);
      const y0 = Math.max(0, r.y);
      const y1 = Math.min(info.height, r.y + r.height);
      const inside = x0 === r.x && x1 === r.x + r.width && y0 === r.y && y1 === r.y + r.height;
      const bandsOut: Plane[] = [];
      for (let b = 0; b < bands.length; b++) {
        const src = bands[b]!;
        // Whole rows inside the raster: one contiguous copy per band.
        if (inside && r.width === info.width) bandsOut.push(src.slice(k * r.y * info.width, k * (r.y + r.height) * info.width));
        else bandsOut.push(allocatePlane(info.pixelType, r.width * r.height));
      }
      // The mask: all valid inside a raster without masked pixels, else copied row by row (0 outside).
      const mask = inside && allValid ? new Uint8Array(r.width * r.height).fill(1) : new Uint8Array(r.width * r.height);
      const rowsCopied = inside && r.width === info.width;
      for (let y = y0; y < y1; y++) {
        if (x1 <= x0) break;
        const s = y * info.width + x0;
        const d = (y - r.y) * r.width + (x0 - r.x);
        if (!(inside && allValid)) mask.set(valid.subarray(s, s + x1 - x0), d);
        if (rowsCopied) continue;
        for (let b = 0; b < bands.length; b++) {
          (bandsOut[b] as Plane).set(bands[b]!.subarray(k * s, k * (s + x1 - x0)), k * d);
        }
      }
      return Promise.resolve({ rect: r, pixelType: info.pixelType, bands: bandsOut, mask });
    },
  };
}

/** A constant operand: the same values (one per band) everywhere, on whatever grid is asked. */
export function constantSource(values: readonly number[], like?: RasterInfo): SourceNode {
  const info: RasterInfo = {
    width: like?.width ?? 1,
    height: like?.height ?? 1,
    bandCount: values.length,
    pixelType: 'F64',
    extent: like?.extent ?? { xmin: 0, ymin: 0, xmax: 1, ymax: 1 },
    cellSize: like?.cellSize ?? { x: 1, y: 1 },
    constant: values,
  };
  return {
    kind: 'source',
    id: `const:${JSON.stringify(values)}`,
    info,
    read(r: Rect): Promise<PixelBlock> {
      const out = allocateBlock(r, 'F64', values.length);
      values.forEach((v, b) => out.bands[b]!.fill(v));
      return Promise.resolve(out);
    },
  };
}

/**
 * The pixels of a chip: a candidate's window rendered through the engine (any pool: chips never
 * depend on each other), or, for a rotated candidate, a window large enough to have no blank
 * corners resampled into the chip (bilinear for imagery, nearest for class rasters).
 */
import { allocateBlock, copyInto, type PixelBlock } from '../core/pixel-block.js';
import { rect, type Rect } from '../core/rect.js';
import type { HeldBlock } from '../graph/evaluate.js';
import { bindRequest, inlinePool, renderTiles, type TilePool } from '../graph/render.js';
import { chipToRaster, type Candidate } from './grid.js';
import type { OpenedRaster } from './inputs.js';

/** Render candidate `c` of raster `r` as a chip-sized block (origin 0, 0). */
export async function renderChip(
  r: OpenedRaster,
  c: Candidate,
  pool: TilePool | undefined,
  signal: AbortSignal | undefined,
  nearest = false,
): Promise<PixelBlock> {
  const { x, y, width: w, height: h } = c.window;
  const tileSize = Math.max(w, h, 16);
  if (c.angle === 0) {
    const b = await renderWindow(r, rect(x, y, w, h), tileSize, pool, signal);
    return { ...b, rect: rect(0, 0, w, h) };
  }
  const reach = Math.ceil(Math.hypot(w, h) / 2) + 2;
  const cx = Math.floor(x + w / 2);
  const cy = Math.floor(y + h / 2);
  const src = await renderWindow(r, rect(cx - reach, cy - reach, 2 * reach, 2 * reach), 2 * reach, pool, signal);
  return resampleRotated(src, c, nearest);
}

/**
 * renderChip, the chip's planes left where the renderer computed them (wasm memory, when the pool
 * lends it: the inline pool does) until `release()`: the consumer reads (encodes, counts) the block,
 * then releases it, after which no plane of it may be used. Saves copying every chip out of wasm
 * memory and, for the statistics and the GeoTIFF's predictor, back in. The same pixels as renderChip:
 * the window evaluated as one tile, as renderChip's single-tile render does. Rotated chips and pools
 * that cannot lend memory (worker pools) give renderChip's block, `release` doing nothing.
 */
export async function renderChipHeld(
  r: OpenedRaster,
  c: Candidate,
  pool: TilePool | undefined,
  signal: AbortSignal | undefined,
): Promise<HeldBlock> {
  const p = pool ?? inlinePool;
  if (c.angle !== 0 || p.runHeld === undefined) return { block: await renderChip(r, c, pool, signal), release: () => undefined };
  const { x, y, width: w, height: h } = c.window;
  const area = rect(x, y, w, h);
  const { root, recipe } = await bindRequest(r.root, area, { recipe: r.recipe, signal });
  const held = await p.runHeld(root, area, signal, recipe);
  let released = false;
  return {
    block: { ...held.block, rect: rect(0, 0, w, h) },
    release: () => {
      if (released) return;
      released = true;
      held.release();
    },
  };
}

/**
 * `render` of `area`: the window's one tile as it is (a tile the size of the window, the
 * consumer's to keep), not copied into a block of its own; tiles gathered into one block otherwise.
 */
async function renderWindow(
  r: OpenedRaster,
  area: Rect,
  tileSize: number,
  pool: TilePool | undefined,
  signal: AbortSignal | undefined,
): Promise<PixelBlock> {
  const tiles: PixelBlock[] = [];
  for await (const tile of renderTiles(r.root, { rect: area, tileSize, pool, recipe: r.recipe, signal })) tiles.push(tile);
  const only = tiles.length === 1 ? tiles[0]! : undefined;
  const { x, y, width, height } = area;
  if (only && only.rect.x === x && only.rect.y === y && only.rect.width === width && only.rect.height === height) return only;
  const out = allocateBlock(area, r.root.info.pixelType, r.root.info.bandCount);
  for (const tile of tiles) copyInto(tile, out);
  return out;
}

/** Bilinear (or nearest) sample of `src` (raster-space block) at raster pixel coordinates. */
function resampleRotated(src: PixelBlock, c: Candidate, nearest: boolean): PixelBlock {
  const { width: w, height: h } = c.window;
  const out = allocateBlock(rect(0, 0, w, h), src.pixelType, src.bands.length);
  const toRaster = chipToRaster(c);
  const sw = src.rect.width;
  const sh = src.rect.height;
  const integer = !src.pixelType.startsWith('F');
  const nb = src.bands.length;
  const acc = new Float64Array(nb);
  for (let v = 0; v < h; v++) {
    for (let u = 0; u < w; u++) {
      const o = v * w + u;
      const [px, py] = toRaster(u + 0.5, v + 0.5);
      const fx = px - 0.5 - src.rect.x;
      const fy = py - 0.5 - src.rect.y;
      if (nearest) {
        const ix = Math.floor(fx + 0.5);
        const iy = Math.floor(fy + 0.5);
        if (ix < 0 || iy < 0 || ix >= sw || iy >= sh || src.mask[iy * sw + ix] === 0) {
          out.mask[o] = 0;
          continue;
        }
        for (let b = 0; b < src.bands.length; b++) out.bands[b]![o] = src.bands[b]![iy * sw + ix]!;
        continue;
      }
      const x0 = Math.floor(fx);
      const y0 = Math.floor(fy);
      const ax = fx - x0;
      const ay = fy - y0;
      let wsum = 0;
      acc.fill(0);
      for (let k = 0; k < 4; k++) {
        const x = x0 + (k & 1);
        const y = y0 + (k >> 1);
        const wk = (k & 1 ? ax : 1 - ax) * (k >> 1 ? ay : 1 - ay);
        if (wk === 0 || x < 0 || y < 0 || x >= sw || y >= sh || src.mask[y * sw + x] === 0) continue;
        wsum += wk;
        for (let b = 0; b < nb; b++) acc[b]! += wk * src.bands[b]![y * sw + x]!;
      }
      // Renormalised over valid neighbours; NoData when less than half the weight is valid.
      if (wsum < 0.5) {
        out.mask[o] = 0;
        continue;
      }
      for (let b = 0; b < nb; b++) {
        const val = acc[b]! / wsum;
        out.bands[b]![o] = integer ? Math.round(val) : val;
      }
    }
  }
  return out;
}

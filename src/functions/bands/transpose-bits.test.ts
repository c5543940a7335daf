// Expected values derived by hand from the spec formula (start from the fill, then output bit
// OutputBitPositions[k] := input bit InputBitPositions[k]) on Landsat 8 QA words, whose bit layout
// the spec's examples use: 0 designated fill, 1 dropped frame, 2 terrain occlusion, 4-5 water,
// 6-7 cloud shadow, 8-9 vegetation, 10-11 snow/ice, 12-13 cirrus, 14-15 cloud confidence.
import { describe, expect, it } from 'vitest';
import { memorySource } from '../../graph/memory-source.js';
import { applyFunction, catchError, gridInfo, rasterOf, runFunction, tiledVersusWhole } from '../../../test/helpers.js';
import { transposeBits } from './transpose-bits.js';

// QA words: 1 = designated fill; 2720 = 0b0000_1010_1010_0000 (bits 5, 7, 9, 11);
// 53248 = 0b1101_0000_0000_0000 (bits 12, 14, 15: cloud 3 high, cirrus 1 low);
// 2976 = 2720 + 256 (bit 8 too); 6 = dropped frame + terrain occlusion.
const QA = [1, 2720, 53248, 2976, 6, 0];
const qa = () => rasterOf({ width: 6, height: 1, pixelType: 'U16' }, (x) => QA[x]!);
const values = async (args: Record<string, unknown>, extra: ReturnType<typeof qa>[] = []) => {
  const r = await runFunction(transposeBits, { ConstantFillValue: 0, ...args }, [qa(), ...extra]);
  return { r, v: Array.from(r.block.bands[0]!) };
};

describe('TransposeBits', () => {
  it('two-bit confidence fields of Landsat 8 QA to values 0..3 (spec examples)', async () => {
    const field = async (lo: number) => (await values({ InputBitPositions: [lo, lo + 1], OutputBitPositions: [0, 1] })).v;
    expect(await field(4)).toEqual([0, 2, 0, 2, 0, 0]); // water: bit 5 set in 2720
    expect(await field(6)).toEqual([0, 2, 0, 2, 0, 0]); // cloud shadow
    expect(await field(8)).toEqual([0, 2, 0, 3, 0, 0]); // vegetation: 2976 has bits 8 and 9
    expect(await field(10)).toEqual([0, 2, 0, 2, 0, 0]); // snow/ice
    expect(await field(12)).toEqual([0, 0, 1, 0, 0, 0]); // cirrus
    expect(await field(14)).toEqual([0, 0, 3, 0, 0, 0]); // cloud
  });

  it('single flags at input bit 0, 1, 2 to output bit 0 (spec examples)', async () => {
    const flag = async (bit: number) => (await values({ InputBitPositions: [bit], OutputBitPositions: [0] })).v;
    expect(await flag(0)).toEqual([1, 0, 0, 0, 0, 0]);
    expect(await flag(1)).toEqual([0, 0, 0, 0, 1, 0]);
    expect(await flag(2)).toEqual([0, 0, 0, 0, 1, 0]);
  });

  it('natural type U8 / U16 / U32 by the highest output bit; space-delimited strings accepted', async () => {
    const a = await values({ InputBitPositions: '14 15', OutputBitPositions: '6 7' });
    expect(a.r.info.pixelType).toBe('U8');
    expect(a.v).toEqual([0, 0, 192, 0, 0, 0]);
    const b = await values({ InputBitPositions: [15], OutputBitPositions: [8] });
    expect(b.r.info.pixelType).toBe('U16');
    expect(b.v).toEqual([0, 0, 256, 0, 0, 0]);
    const c = await values({ InputBitPositions: [15, 0], OutputBitPositions: [31, 16] });
    expect(c.r.info.pixelType).toBe('U32');
    expect(c.v).toEqual([65536, 0, 2 ** 31, 0, 0, 0]);
    expect(c.r.block.bands[0]).toBeInstanceOf(Uint32Array);
  });

  it('the constant fill initialises the other bits; its own bits widen the type', async () => {
    // fill 0b1111_1111: output bits 0, 1 are cleared then set from input bits 14, 15.
    const a = await values({ InputBitPositions: [14, 15], OutputBitPositions: [0, 1], ConstantFillCheck: true, ConstantFillValue: 255 });
    expect(a.r.info.pixelType).toBe('U8');
    expect(a.v).toEqual([252, 252, 255, 252, 252, 252]);
    const b = await values({ InputBitPositions: [0], OutputBitPositions: [0], ConstantFillValue: 4096 });
    expect(b.r.info.pixelType).toBe('U16');
    expect(b.v).toEqual([4097, 4096, 4096, 4096, 4096, 4096]);
  });

  it('FillRaster initialises the output; ConstantFillCheck false without one reverts to the constant', async () => {
    const fill = rasterOf({ width: 6, height: 1, pixelType: 'U8' }, (x) => 0xf0 + x, Uint8Array.from([1, 1, 1, 1, 1, 0]));
    const r = await runFunction(transposeBits, { InputBitPositions: [14, 15], OutputBitPositions: [0, 1], ConstantFillCheck: false }, [
      qa(),
      fill,
    ]);
    expect(Array.from(r.block.bands[0]!).slice(0, 5)).toEqual([0xf0, 0xf1 & ~3, (0xf2 & ~3) | 3, 0xf3 & ~3, 0xf4]);
    expect(Array.from(r.block.mask)).toEqual([1, 1, 1, 1, 1, 0]); // the FillRaster's NoData too
    // ConstantFillCheck absent with a FillRaster: the raster fills.
    const r2 = await runFunction(transposeBits, { InputBitPositions: [14, 15], OutputBitPositions: [0, 1] }, [qa(), fill]);
    expect(Array.from(r2.block.bands[0]!)).toEqual(Array.from(r.block.bands[0]!));
    // ConstantFillCheck true: the FillRaster is ignored, with a warning.
    const r3 = await runFunction(
      transposeBits,
      { InputBitPositions: [14, 15], OutputBitPositions: [0, 1], ConstantFillCheck: true, ConstantFillValue: 8 },
      [qa(), fill],
    );
    expect(Array.from(r3.block.bands[0]!)).toEqual([8, 8, 11, 8, 8, 8]);
    expect(r3.node.plan.warnings).toEqual(['ConstantFillCheck is true: FillRaster is ignored']);
    const r4 = await values({ InputBitPositions: [0], OutputBitPositions: [3], ConstantFillCheck: false, ConstantFillValue: 1 });
    expect(r4.v).toEqual([9, 1, 1, 1, 1, 1]);
    expect(r4.r.node.plan.warnings?.[0]).toMatch(/reverts|no FillRaster/);
  });

  it("NoData of the input passes through; signed and float inputs use their 32-bit two's complement bits", async () => {
    const src = memorySource('s16', gridInfo({ width: 3, height: 1, pixelType: 'S16', noData: -32768 }), [
      Int16Array.from([-1, -32768, -2]),
    ]);
    const r = await runFunction(transposeBits, { InputBitPositions: [0, 15], OutputBitPositions: [0, 1], ConstantFillValue: 0 }, [src]);
    expect(Array.from(r.block.mask)).toEqual([1, 0, 1]);
    expect([r.value(0, 0), r.value(2, 0)]).toEqual([3, 2]);
    const f = await runFunction(transposeBits, { InputBitPositions: [0, 1], OutputBitPositions: [0, 1], ConstantFillValue: 0 }, [
      rasterOf({ width: 2, height: 1, pixelType: 'F32' }, (x) => (x ? 2.9 : 3.5)),
    ]);
    expect(Array.from(f.block.bands[0]!)).toEqual([3, 2]); // truncated: 3, 2
  });

  it('bad arguments: INVALID_ARGUMENT naming the field', () => {
    const bad = (args: Record<string, unknown>) => catchError(() => applyFunction(transposeBits, args, [qa()]));
    expect(bad({ OutputBitPositions: [0], ConstantFillValue: 0 })).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.InputBitPositions',
    });
    expect(bad({ InputBitPositions: [0], ConstantFillValue: 0 })).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.OutputBitPositions',
    });
    const len = bad({ InputBitPositions: [4, 5], OutputBitPositions: [0], ConstantFillValue: 0 });
    expect(len).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.OutputBitPositions' });
    expect(len?.message).toMatch(/1 position.*InputBitPositions has 2/);
    expect(bad({ InputBitPositions: [32], OutputBitPositions: [0], ConstantFillValue: 0 })).toMatchObject({
      path: 'rasterFunctionArguments.InputBitPositions',
    });
    expect(bad({ InputBitPositions: [1], OutputBitPositions: [-1], ConstantFillValue: 0 })).toMatchObject({
      path: 'rasterFunctionArguments.OutputBitPositions',
    });
    expect(bad({ InputBitPositions: [1, 2], OutputBitPositions: [0, 0], ConstantFillValue: 0 })?.message).toMatch(/given twice/);
    expect(bad({ InputBitPositions: [1.5], OutputBitPositions: [0], ConstantFillValue: 0 })).toMatchObject({
      path: 'rasterFunctionArguments.InputBitPositions',
    });
    expect(bad({ InputBitPositions: [1], OutputBitPositions: [0] })).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'rasterFunctionArguments.ConstantFillValue',
    });
    expect(bad({ InputBitPositions: [1], OutputBitPositions: [0], ConstantFillValue: 2 ** 32 })).toMatchObject({
      path: 'rasterFunctionArguments.ConstantFillValue',
    });
    // A FillRaster that does not overlap the Raster would leave the output NoData (local/grid.ts).
    const far = rasterOf({ width: 6, height: 1, pixelType: 'U8', origin: { x: 100, y: 0 } }, () => 0);
    const grid = catchError(() => applyFunction(transposeBits, { InputBitPositions: [1], OutputBitPositions: [0] }, [qa(), far]));
    expect(grid).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'rasterFunctionArguments.FillRaster' });
  });

  it("a FillRaster on another grid is resampled onto the Raster's grid (Plan.align, nearest)", async () => {
    // 3 cells of 2 units over the Raster's 6 cells of 1: each fill value covers two output pixels.
    const coarse = rasterOf({ width: 3, height: 1, pixelType: 'U8', cellSize: 2 }, (x) => 0x10 * (x + 1));
    const r = await runFunction(transposeBits, { InputBitPositions: [0], OutputBitPositions: [0] }, [qa(), coarse]);
    expect(r.node.plan.align?.[1]).toEqual({ method: 'nearest' });
    expect(r.node.inputs[1]!.info.width).toBe(6);
    expect(Array.from(r.block.bands[0]!).map((v) => v & ~1)).toEqual([0x10, 0x10, 0x20, 0x20, 0x30, 0x30]);
  });

  it('tiled equals whole, constant and raster fill', async () => {
    const w = 64;
    const h = 48;
    const src = rasterOf(
      { width: w, height: h, pixelType: 'U16' },
      (x, y) => (x * 977 + y * 3571) % 65536,
      Uint8Array.from({ length: w * h }, (_, i) => (i % 9 ? 1 : 0)),
    );
    const fill = rasterOf({ width: w, height: h, pixelType: 'U8' }, (x, y) => (x + 2 * y) % 256);
    const a = applyFunction(transposeBits, { InputBitPositions: [14, 15, 0], OutputBitPositions: [0, 1, 9], ConstantFillValue: 7 }, [src]);
    const b = applyFunction(transposeBits, { InputBitPositions: [4, 5], OutputBitPositions: [2, 3] }, [src, fill]);
    expect(await tiledVersusWhole(a, [13, 7])).toBeUndefined();
    expect(await tiledVersusWhole(b, [13, 7])).toBeUndefined();
  });
});

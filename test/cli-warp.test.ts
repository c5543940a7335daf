/**
 * `rasterflow render --t_srs/--te/--te_srs/--tr/--ts/-r` (gdalwarp's options) and `-r` with
 * `--outsize`, against gdalwarp 3.6 outputs (golden/warp, made by golden/warp/make-goldens.py):
 * the same pixels (nearest exact; bilinear/cubic within 1e-3 m on the Float32 DEM, 1 DN on U8),
 * the same grid and spatial reference in the written GeoTIFF, the same with worker threads.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Command } from 'commander';
import { afterEach, describe, expect, it } from 'vitest';
import { run, type CliIo } from '../src/cli/commands.js';
import { closingOpener, runCli } from './helpers.js';

const files = closingOpener();
afterEach(files.closeAll);

const ROOT = resolve(import.meta.dirname, '..');
const DEM = join(ROOT, 'golden/data/jacksboro_fault_dem_utm16n_75m.tif');
const LANDSAT = join(ROOT, 'golden/data/L7_ETMs.tif');
const IDENTITY = '{"rasterFunction":"Identity"}';
const out = mkdtempSync(join(tmpdir(), 'rasterflow-cli-warp-'));

interface GoldenCase {
  readonly id: string;
  readonly te: [number, number, number, number];
  readonly ts: [number, number];
  readonly t_srs: string | null;
  readonly expected: string;
}
const golden = JSON.parse(readFileSync(join(ROOT, 'golden/warp/warp-cases.json'), 'utf8')) as { cases: GoldenCase[] };
const caseOf = (id: string): GoldenCase => golden.cases.find((c) => c.id === id)!;

/** Runs `rasterflow` in this process; resolves to the error it threw (undefined on success). */
async function rasterflow(...args: string[]): Promise<{ code?: string; path?: string; message?: string } | undefined> {
  const io: CliIo = { out: () => undefined, err: () => undefined, isTTY: false };
  try {
    await run(new Command(), io).parseAsync(args, { from: 'user' });
    return undefined;
  } catch (e) {
    return e as { code?: string; path?: string; message?: string };
  }
}

/** Compares band 1 and the mask of `file` with a golden (its alpha band marks gdalwarp's empty pixels). */
async function compare(file: string, expected: string, abs: number): Promise<{ bad: number; maxDiff: number; first?: string }> {
  const a = await files.open(file);
  const e = await files.open(join(ROOT, expected));
  const { width, height } = e.info;
  expect([a.info.width, a.info.height]).toEqual([width, height]);
  const ab = await a.read({ x: 0, y: 0, width, height });
  const eb = await e.read({ x: 0, y: 0, width, height });
  let bad = 0;
  let maxDiff = 0;
  let first: string | undefined;
  for (let i = 0; i < width * height; i++) {
    const ev = eb.bands[1]![i]! > 0;
    const av = ab.mask[i] === 1;
    if (ev !== av) {
      bad++;
      first ??= `mask at ${i % width},${Math.floor(i / width)}`;
      continue;
    }
    if (!ev) continue;
    const d = Math.abs(ab.bands[0]![i]! - eb.bands[0]![i]!);
    maxDiff = Math.max(maxDiff, d);
    if (d > abs) {
      bad++;
      first ??= `value at ${i % width},${Math.floor(i / width)}: ${ab.bands[0]![i]} vs ${eb.bands[0]![i]}`;
    }
  }
  return { bad, maxDiff, ...(first ? { first } : {}) };
}

describe('rasterflow render --t_srs (gdalwarp)', () => {
  for (const [id, r, abs] of [
    ['dem-3857-near', 'near', 0],
    ['dem-3857-bilinear', 'bilinear', 1e-3],
    ['dem-4326-cubic', 'cubic', 1e-3],
    ['dem-3857-down3-cubic', 'cubic', 1e-3],
  ] as const) {
    it(`${id}: --t_srs --te --ts -r ${r} equals gdalwarp; the GeoTIFF has the target SR and geotransform`, async () => {
      const c = caseOf(id);
      const file = join(out, `${id}.tif`);
      const args = ['render', '--rule', IDENTITY, '--input', DEM, '--output', file, '--t_srs', c.t_srs!, '--te', ...c.te.map(String)];
      expect(await rasterflow(...args, '--ts', ...c.ts.map(String), '-r', r, '--tile', '37')).toBeUndefined();
      const res = await compare(file, c.expected, abs);
      expect(res.bad, res.first).toBe(0);
      const info = (await files.open(file)).info;
      expect(info.spatialReference?.wkid).toBe(Number(c.t_srs!.slice(5)));
      expect(info.extent.xmin).toBeCloseTo(c.te[0], 6);
      expect(info.extent.ymax).toBeCloseTo(c.te[3], 6);
      expect(info.cellSize.x).toBeCloseTo((c.te[2] - c.te[0]) / c.ts[0], 9);
    });
  }

  it("default grid (gdalwarp -t_srs EPSG:3857, no -te/-ts) and -r's default (near): exact, edges included; workers give the same file", async () => {
    const c = caseOf('dem-3857-default-near');
    const inline = join(out, 'default-inline.tif');
    const workers = join(out, 'default-workers.tif');
    expect(await rasterflow('render', '--rule', IDENTITY, '--input', DEM, '--output', inline, '--t_srs', 'EPSG:3857')).toBeUndefined();
    const res = await compare(inline, c.expected, 0);
    expect(res.bad, res.first).toBe(0);
    const w = runCli([
      'render',
      '--rule',
      IDENTITY,
      '--input',
      DEM,
      '--output',
      workers,
      '--t_srs',
      '3857',
      '--workers',
      '2',
      '--tile',
      '64',
    ]);
    expect(w.code, w.stderr).toBe(0);
    expect((await compare(workers, c.expected, 0)).bad).toBe(0);
  }, 60_000);

  it('U8: Landsat band 1 to EPSG:4326, cubic (rounding as gdalwarp), with --te as one comma list', async () => {
    const c = caseOf('l7b1-4326-cubic');
    const file = join(out, 'l7-cubic.tif');
    const rule = '{"rasterFunction":"ExtractBand","rasterFunctionArguments":{"BandIDs":[0]}}';
    const args = ['render', '--rule', rule, '--input', LANDSAT, '--output', file, '--t_srs', 'EPSG:4326', '--te', c.te.join(',')];
    expect(await rasterflow(...args, '--ts', String(c.ts[0]), String(c.ts[1]), '-r', 'cubic')).toBeUndefined();
    expect((await files.open(file)).info.pixelType).toBe('U8');
    const res = await compare(file, c.expected, 1);
    expect(res.bad, res.first).toBe(0);
  });

  it('--te_srs, --tr: the grid gdalwarp makes', async () => {
    const file = join(out, 'te-srs.tif');
    const a = ['render', '--rule', IDENTITY, '--input', DEM, '--output', file, '--t_srs', 'EPSG:3857'];
    expect(
      await rasterflow(...a, '--te', '-84.39', '36.46', '-84.10', '36.72', '--te_srs', 'EPSG:4326', '--ts', '200', '180'),
    ).toBeUndefined();
    let info = (await files.open(file)).info;
    // gdalwarp -t_srs EPSG:3857 -te -84.39 36.46 -84.10 36.72 -te_srs EPSG:4326 -ts 200 180 (golden/warp/warp-cases.json)
    expect(info.extent.xmin).toBeCloseTo(-9394251.828044357, 3);
    expect(info.extent.ymax).toBeCloseTo(4400149.92978171, 3);
    expect(info.cellSize.y).toBeCloseTo(200.2625478355214, 6);
    const tr = join(out, 'tr.tif');
    expect(
      await rasterflow('render', '--rule', IDENTITY, '--input', DEM, '--output', tr, '--t_srs', 'EPSG:3857', '--tr', '100', '120'),
    ).toBeUndefined();
    info = (await files.open(tr)).info;
    expect([info.width, info.height, info.cellSize.x, info.cellSize.y]).toEqual([368, 326, 100, 120]);
  });

  it('--te/--ts without --t_srs resample in the output SR (no reprojection)', async () => {
    const c = caseOf('dem-ts-upsample-bilinear');
    const file = join(out, 'same-sr.tif');
    expect(
      await rasterflow(
        'render',
        '--rule',
        IDENTITY,
        '--input',
        DEM,
        '--output',
        file,
        '--te',
        ...c.te.map(String),
        '--ts',
        '574',
        '610',
        '-r',
        'bilinear',
      ),
    ).toBeUndefined();
    expect((await compare(file, c.expected, 1e-3)).bad).toBe(0);
  });
  it('--window cuts the warped grid: the same pixels as the whole warp there', async () => {
    const c = caseOf('dem-3857-bilinear');
    const whole = join(out, 'window-whole.tif');
    const part = join(out, 'window-part.tif');
    const args = [
      'render',
      '--rule',
      IDENTITY,
      '--input',
      DEM,
      '--t_srs',
      'EPSG:3857',
      '--te',
      ...c.te.map(String),
      '--ts',
      ...c.ts.map(String),
      '-r',
      'bilinear',
    ];
    expect(await rasterflow(...args, '--output', whole)).toBeUndefined();
    expect(await rasterflow(...args, '--output', part, '--window', '31,17,45,29')).toBeUndefined();
    const a = await (await files.open(whole)).read({ x: 31, y: 17, width: 45, height: 29 });
    const b = await (await files.open(part)).read({ x: 0, y: 0, width: 45, height: 29 });
    expect(Buffer.from(b.bands[0]!.buffer).equals(Buffer.from(a.bands[0]!.buffer))).toBe(true);
  });
});

describe('rasterflow render --outsize -r', () => {
  it("-r bilinear|cubic resample through the warp kernels (gdalwarp -ts, up and down); -r near is today's --outsize", async () => {
    for (const [size, r, id] of [
      ['574,610', 'bilinear', 'dem-ts-upsample-bilinear'],
      ['574,610', 'cubic', 'dem-ts-upsample-cubic'],
      ['128,136', 'bilinear', 'dem-ts-down3-bilinear'],
      ['128,136', 'cubic', 'dem-ts-down3-cubic'],
    ] as const) {
      const file = join(out, `outsize-${id}.tif`);
      expect(await rasterflow('render', '--rule', IDENTITY, '--input', DEM, '--output', file, '--outsize', size, '-r', r)).toBeUndefined();
      const res = await compare(file, caseOf(id).expected, 1e-3);
      expect(res.bad, res.first).toBe(0);
    }
    const plain = join(out, 'outsize-plain.tif');
    const near = join(out, 'outsize-near.tif');
    expect(await rasterflow('render', '--rule', IDENTITY, '--input', DEM, '--output', plain, '--outsize', '50%,50%')).toBeUndefined();
    expect(
      await rasterflow('render', '--rule', IDENTITY, '--input', DEM, '--output', near, '--outsize', '50%,50%', '-r', 'near'),
    ).toBeUndefined();
    expect(readFileSync(near).equals(readFileSync(plain))).toBe(true);
    const bilinear = join(out, 'outsize-bilinear-half.tif');
    expect(
      await rasterflow('render', '--rule', IDENTITY, '--input', DEM, '--output', bilinear, '--outsize', '50%,50%', '-r', 'bilinear'),
    ).toBeUndefined();
    expect(readFileSync(bilinear).equals(readFileSync(plain))).toBe(false);
  });

  it('with worker threads: the same file', () => {
    const a = join(out, 'outsize-cubic-inline.tif');
    const b = join(out, 'outsize-cubic-workers.tif');
    const args = ['render', '--rule', IDENTITY, '--input', DEM, '--outsize', '200,0', '-r', 'cubic', '--tile', '32'];
    expect(runCli([...args, '--output', a]).code).toBe(0);
    expect(runCli([...args, '--output', b, '--workers', '2']).code).toBe(0);
    expect(readFileSync(a).equals(readFileSync(b))).toBe(true);
  }, 60_000);
});

describe('rasterflow render warp options: errors name the option', () => {
  const base = ['render', '--rule', IDENTITY, '--input', DEM, '--output', join(out, 'never.tif')];
  for (const [args, path] of [
    [['--t_srs', 'EPSG:999999'], 't_srs'],
    [['--t_srs', 'nonsense'], 't_srs'],
    [['--t_srs', '3857', '--te', '1', '2', '3'], 'te'],
    [['--t_srs', '3857', '--te', '3', '2', '1', '4'], 'te'],
    [['--t_srs', '3857', '--te', 'a', 'b', 'c', 'd'], 'te'],
    [['--t_srs', '3857', '--te_srs', '4326'], 'te_srs'],
    [['--t_srs', '3857', '--te', '0', '91', '1', '95', '--te_srs', '4326', '--ts', '10', '10'], 'te_srs'],
    [['--t_srs', '3857', '--te_srs', 'EPSG:0', '--te', '0', '0', '1', '1'], 'te_srs'],
    [['--t_srs', '3857', '--tr', '10', '10', '--ts', '10', '10'], 'ts'],
    [['--t_srs', '3857', '--tr', '0', '10'], 'tr'],
    [['--t_srs', '3857', '--tr', '10'], 'tr'],
    [['--t_srs', '3857', '--ts', '0', '0'], 'ts'],
    [['--t_srs', '3857', '--ts', '10.5', '10'], 'ts'],
    [['--t_srs', '3857', '-r', 'lanczos'], 'r'],
    [['-r', 'bilinear'], 'r'],
    [['--t_srs', '3857', '--outsize', '10,10'], 'outsize'],
  ] as const) {
    it(`${args.join(' ')} -> ${path}`, async () => {
      const e = await rasterflow(...base, ...args);
      expect(e?.code).toBe('INVALID_ARGUMENT');
      expect(e?.path).toBe(path);
    });
  }

  it('an output over --max-pixels is refused before any pixel work, at the option that sized it', async () => {
    expect(await rasterflow(...base, '--t_srs', '3857', '--ts', '100000', '100000', '--max-pixels', '1000')).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      path: 'ts',
    });
    expect(await rasterflow(...base, '--t_srs', '3857', '--tr', '1', '1', '--max-pixels', '1000')).toMatchObject({ path: 'tr' });
  });

  it('as a process: exit status 2 and the option in the message', () => {
    const r = runCli([...base, '--t_srs', '3857', '--tr', '10', '10', '--ts', '10', '10']);
    expect([r.code, r.stderr.trim()]).toEqual([2, 'error INVALID_ARGUMENT at ts: --tr and --ts cannot be used together']);
  }, 30_000);
});

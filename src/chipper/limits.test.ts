/**
 * The chipper's server-side limits: `maxBytes` (a disk budget checked before each chip) and
 * `inputPolicy` (where inputs may be read from), on the Landsat 7 sample of landsat.test.ts.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.js';
import { exportTrainingData } from './export.js';
import { inputLocations, inputRefusal, inputRefusals, type InputPolicy } from './inputs.js';
import { parseChipParams } from './params.js';

const ROOT = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'rf-chipper-limits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const LABELS = join(ROOT, 'golden/chipper/l7-labels.geojson');
const RASTER = join(ROOT, 'golden/data/L7_ETMs.tif');
const base = { inputRaster: RASTER, inputClassData: LABELS, tileSize: { x: 64, y: 64 }, strideSize: { x: 64, y: 64 } };

function files(root: string): Map<string, number> {
  const m = new Map<string, number>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p);
      else m.set(relative(root, p), statSync(p).size);
    }
  };
  walk(root);
  return m;
}

const failure = async (p: Promise<unknown>): Promise<EngineError> => {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(EngineError);
  return e as EngineError;
};

describe('maxBytes: a disk budget', () => {
  it(
    'stops before the chip that would pass it, with LIMIT_EXCEEDED naming the setting; every recorded chip is whole',
    { timeout: 60_000 },
    async () => {
      const whole = join(dir, 'whole');
      const full = await exportTrainingData({ ...base, outputLocation: whole });
      expect(full.chips).toBeGreaterThan(4);
      const chipBytes = full.bytes / full.chips;

      const out = join(dir, 'budget');
      const max = Math.round(3 * chipBytes + 6 * 64 * 64 + 2 * 64 * 64 + 16 * 1024);
      const e = await failure(exportTrainingData({ ...base, outputLocation: out }, { maxBytes: max, maxBytesName: 'exportQuotaBytes' }));
      expect(e.code).toBe('LIMIT_EXCEEDED');
      expect(e.path).toBe('exportQuotaBytes');
      expect(e.message).toMatch(/^the export stopped before passing the disk quota \(exportQuotaBytes\): it wrote \d+ chip/);
      const got = files(out);
      let total = 0;
      for (const [name, n] of got) if (!name.startsWith('.rasterflow-journal')) total += n;
      expect(total).toBeLessThanOrEqual(max);
      const journal = readFileSync(join(out, '.rasterflow-journal.ndjson'), 'utf8').trim().split('\n').slice(1);
      expect(journal.length).toBeGreaterThan(0);
      expect(journal.length).toBeLessThan(full.chips);
      // The chips the journal records are the first ones of the full export, byte for byte.
      const wholeFiles = files(whole);
      for (const line of journal) {
        const image = (JSON.parse(line) as { image: string }).image;
        expect(got.get(image), image).toBe(wholeFiles.get(image));
      }
      expect(got.has('geo_accumulated_stats.json')).toBe(false);
    },
  );

  it('a function budget is asked before each chip with the bytes written so far', { timeout: 60_000 }, async () => {
    const seen: number[] = [];
    const out = join(dir, 'fn');
    const e = await failure(
      exportTrainingData(
        { ...base, outputLocation: out },
        {
          maxBytes: (written) => {
            seen.push(written);
            return seen.length <= 4 ? Infinity : 0;
          },
        },
      ),
    );
    expect(e.path).toBe('maxBytes');
    // Asked before each chip and again once it is written, before it is recorded: two chips
    // pass, the third is refused before it is written.
    expect(seen).toHaveLength(5);
    const [b0, b1, b2, b3, b4] = seen as [number, number, number, number, number];
    expect([b0, b1]).toEqual([0, 0]);
    expect(b2).toBeGreaterThan(0);
    expect(b3).toBe(b2);
    expect(b4).toBeGreaterThan(b3);
    const journal = readFileSync(join(out, '.rasterflow-journal.ndjson'), 'utf8').trim().split('\n').slice(1);
    expect(journal.map((l) => (JSON.parse(l) as { bytes: number }).bytes)).toEqual([b2, b4 - b2]);
  });

  it('no budget, or a budget large enough: the export is the same', { timeout: 60_000 }, async () => {
    const a = join(dir, 'big');
    const s = await exportTrainingData({ ...base, outputLocation: a }, { maxBytes: 1e12 });
    const b = files(a);
    const c = files(join(dir, 'whole'));
    expect(s.chips).toBeGreaterThan(4);
    expect([...b.entries()].sort()).toEqual([...c.entries()].sort());
  });
});

describe('inputPolicy: where inputs are read from', () => {
  const policy: InputPolicy = { roots: [join(ROOT, 'golden')], origins: ['https://data.example.com'] };

  it('every input is found, including the rasters of a rule and a rule on one raster', () => {
    const p = parseChipParams({
      inputRaster: [
        { url: RASTER, renderingRule: { rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [0] } } },
        {
          rasterFunction: 'BandArithmetic',
          rasterFunctionArguments: { Raster: { url: 'https://data.example.com/a.tif' }, Method: 0, BandIndexes: 'B1' },
        },
        { rasterFunction: 'Identity', rasterFunctionArguments: { Raster: 'plain/path.tif' } },
      ],
      processAllRasterItems: true,
      outputLocation: join(dir, 'x'),
      inputClassData: LABELS,
      inputMaskPolygons: { url: 'file:///etc/hosts' },
      tileSize: { x: 64, y: 64 },
    });
    expect(inputLocations(p)).toEqual([
      { location: RASTER, path: 'inputRaster[0]' },
      { location: 'https://data.example.com/a.tif', path: 'inputRaster[1].rasterFunctionArguments.Raster' },
      { location: 'plain/path.tif', path: 'inputRaster[2].rasterFunctionArguments.Raster' },
      { location: LABELS, path: 'inputClassData' },
      { location: 'file:///etc/hosts', path: 'inputMaskPolygons' },
    ]);
  });

  it.each([
    [RASTER, undefined],
    [`file://${RASTER}`, undefined],
    [join(ROOT, 'golden', '..', 'package.json'), 'inputRoots'],
    ['/etc/passwd', 'inputRoots'],
    ['file:///etc/passwd', 'inputRoots'],
    ['relative.tif', 'inputRoots'],
    ['https://data.example.com:443/a.tif', undefined],
    ['HTTPS://DATA.EXAMPLE.COM/a.tif', undefined],
    ['http://data.example.com/a.tif', 'inputOrigins'],
    ['https://data.example.com.evil.net/a.tif', 'inputOrigins'],
    ['https://data.example.com@169.254.169.254/latest', 'inputOrigins'],
    ['http://127.0.0.1:8080/a.tif', 'inputOrigins'],
    ['http://[::1]/a.tif', 'inputOrigins'],
    ['s3://bucket/a.tif', 'only local paths and http(s) URLs'],
    ['gopher://127.0.0.1:6379/_x', 'only local paths and http(s) URLs'],
  ])('%s', (location, why) => {
    const r = inputRefusal(policy, location, 'inputRaster');
    if (why === undefined) expect(r).toBeUndefined();
    else {
      expect(r?.path).toBe('inputRaster');
      expect(r?.message).toContain(why);
    }
  });

  it('a symbolic link in a root that leads out is refused; one that stays in is read', () => {
    const root = join(dir, 'root');
    mkdirSync(root);
    symlinkSync(dirname(RASTER), join(root, 'data'));
    symlinkSync('/etc', join(root, 'etc'));
    const p: InputPolicy = { roots: [root, dirname(RASTER)], origins: [] };
    expect(inputRefusal(p, join(root, 'data', 'L7_ETMs.tif'), 'inputRaster')).toBeUndefined();
    expect(inputRefusal(p, join(root, 'etc', 'passwd'), 'inputRaster')?.message).toContain('outside the folders');
    expect(inputRefusal({ roots: [root], origins: [] }, join(root, 'data', 'L7_ETMs.tif'), 'inputRaster')).toBeDefined();
  });

  it('a multidimensional manifest in a root cannot name slice files outside it', async () => {
    const root = join(dir, 'md');
    mkdirSync(root);
    const manifest = (paths: string[]) => ({
      variables: [
        { name: 'v', dimensions: ['StdTime'], slices: paths.map((path, i) => ({ path, dimensions: { StdTime: `2020-0${i + 1}-01` } })) },
      ],
    });
    writeFileSync(join(root, 'bad.json'), JSON.stringify(manifest(['../../escape.tif', RASTER, '/etc/hosts'])));
    writeFileSync(join(root, 'good.json'), JSON.stringify(manifest([RASTER])));
    const p: InputPolicy = { roots: [root, dirname(RASTER), dirname(LABELS)], origins: [] };
    const params = (raster: string) =>
      parseChipParams({ inputRaster: raster, outputLocation: join(dir, 'md-out'), inputClassData: LABELS, tileSize: { x: 64, y: 64 } });
    expect((await inputRefusals(params(join(root, 'bad.json')), p)).map((i) => i.path)).toEqual([
      'inputRaster.variables[0].slices[0].path',
      'inputRaster.variables[0].slices[2].path',
    ]);
    expect(await inputRefusals(params(join(root, 'good.json')), p)).toEqual([]);
    // As the export opens it, too.
    const e = await failure(
      exportTrainingData({ ...base, inputRaster: join(root, 'bad.json'), outputLocation: join(dir, 'md-out') }, { inputPolicy: p }),
    );
    expect(e.issues[0]?.message).toMatch(/^the manifest names ".*escape\.tif" is outside the folders/);
  });

  it('an export refused by the policy writes nothing, naming every refused input', async () => {
    const out = join(dir, 'refused');
    const e = await failure(
      exportTrainingData(
        {
          ...base,
          inputRaster: { rasterFunction: 'Identity', rasterFunctionArguments: { Raster: { url: 'http://127.0.0.1:9/x.tif' } } },
          inputMaskPolygons: '/etc/hosts',
          outputLocation: out,
        },
        { inputPolicy: policy },
      ),
    );
    expect(e.issues.map((i) => i.path)).toEqual(['inputRaster.rasterFunctionArguments.Raster', 'inputMaskPolygons']);
    expect(existsSync(out)).toBe(false);
  });

  it('inside the policy the export is the one without it', { timeout: 60_000 }, async () => {
    const out = join(dir, 'allowed');
    await exportTrainingData({ ...base, outputLocation: out }, { inputPolicy: policy });
    expect([...files(out).entries()].sort()).toEqual([...files(join(dir, 'whole')).entries()].sort());
  });
});

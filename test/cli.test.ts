/** The `rasterflow` command as a user runs it: a real process, real files, exit codes and stderr. */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Command } from 'commander';
import { afterEach, describe, expect, it } from 'vitest';
import { run, type CliIo } from '../src/cli/commands.js';
import { closingOpener, runCli } from './helpers.js';

// Rasters opened here are closed after each test (no file handle left to the garbage collector).
const files = closingOpener();
const openRaster = files.open;
afterEach(files.closeAll);

const ROOT = resolve(import.meta.dirname, '..');
const DEM = join(ROOT, 'golden/data/jacksboro_fault_dem_utm16n_75m.tif');
const LANDSAT = join(ROOT, 'golden/data/L7_ETMs.tif');
const out = mkdtempSync(join(tmpdir(), 'rasterflow-cli-'));
const PYTHON = '/usr/bin/python3';
const HAS_GDAL =
  spawnSync('gdal_translate', ['--version']).status === 0 &&
  spawnSync(PYTHON, ['-c', 'from osgeo import gdal'], { encoding: 'utf8' }).status === 0;
if (!HAS_GDAL)
  console.warn('cli.test.ts: gdal_translate or /usr/bin/python3 osgeo not found: the --outsize cross-check with GDAL is SKIPPED');

const cli = (...args: string[]): { code: number | null; stdout: string; stderr: string } => runCli(args);

const BUNDLE = join(ROOT, 'dist/cli/rasterflow.js');
if (!existsSync(BUNDLE)) console.warn('cli.test.ts: dist/cli/rasterflow.js not built (npm run build); the bundle test is SKIPPED');

describe('rasterflow CLI', () => {
  it.skipIf(!existsSync(BUNDLE))(
    'the built bin (the esbuild bundle) writes the same bytes as the source, with codec threads or without',
    () => {
      const rule = '{"rasterFunction":"Hillshade"}';
      const a = join(out, 'bundle-src.tif');
      const b = join(out, 'bundle-bin.tif');
      const c = join(out, 'bundle-inline.tif');
      expect(cli('render', '--rule', rule, '--input', DEM, '--output', a, '--co', 'COMPRESS=DEFLATE', '--tile', '64').code).toBe(0);
      const run = (file: string, threads: string) =>
        runCli(['render', '--rule', rule, '--input', DEM, '--output', file, '--co', 'COMPRESS=DEFLATE', '--tile', '64'], {
          bin: BUNDLE,
          env: { ...process.env, RASTERFLOW_CODEC_THREADS: threads },
        }).code;
      expect(run(b, '2')).toBe(0);
      expect(run(c, '0')).toBe(0);
      expect(readFileSync(b).equals(readFileSync(a))).toBe(true);
      expect(readFileSync(c).equals(readFileSync(a))).toBe(true);
    },
  );

  it.skipIf(!existsSync(BUNDLE))("the built bin's render loads no node:child_process (commander's is loaded on first use only)", () => {
    const hook = join(out, 'builtins-hook.mjs');
    const list = join(out, 'builtins.txt');
    writeFileSync(
      hook,
      `import { writeFileSync } from 'node:fs';\nprocess.on('exit', () => writeFileSync(${JSON.stringify(list)}, process.moduleLoadList.join('\\n')));\n`,
    );
    const r = runCli(['render', '--rule', '{"rasterFunction":"Hillshade"}', '--input', DEM, '--output', join(out, 'builtins.tif')], {
      bin: BUNDLE,
      env: { ...process.env, NODE_OPTIONS: `--import ${pathToFileURL(hook).href}` },
    });
    expect(r.code, r.stderr).toBe(0);
    const loaded = readFileSync(list, 'utf8').split('\n');
    expect(loaded).toContain('NativeModule zlib');
    expect(loaded).not.toContain('NativeModule child_process');
  });

  it('renders a Hillshade rule to a GeoTIFF that keeps the grid', async () => {
    const file = join(out, 'hs.tif');
    const r = cli(
      'render',
      '--rule',
      '{"rasterFunction":"Hillshade","rasterFunctionArguments":{"Azimuth":315}}',
      '--input',
      DEM,
      '--output',
      file,
      '--tile',
      '100',
    );
    expect(r.stderr).toMatch(/wrote/);
    expect(r.code).toBe(0);
    const written = await openRaster(file);
    const dem = await openRaster(DEM);
    expect(written.info).toMatchObject({ width: dem.info.width, height: dem.info.height, pixelType: 'U8', extent: dem.info.extent });
    expect(written.info.spatialReference?.wkid).toBe(32616);
  });

  it('renders Hillshade and Slope through the CLI within 1 DN / 1e-3 deg of gdaldem away from the edge', async () => {
    const cases = [
      {
        rule: '{"rasterFunction":"Hillshade","rasterFunctionArguments":{"Azimuth":315,"Altitude":45,"ZFactor":1}}',
        expected: 'golden/terrain/utm-hillshade-315-45.tif',
        tol: 1,
        gdalByte: true,
      },
      { rule: '{"rasterFunction":"Slope"}', expected: 'golden/terrain/utm-slope-degree.tif', tol: 1e-3, gdalByte: false },
    ];
    for (const c of cases) {
      const file = join(out, `cli-${c.gdalByte ? 'hs' : 'slope'}.tif`);
      expect(cli('render', '--rule', c.rule, '--input', DEM, '--output', file, '--tile', '64').code).toBe(0);
      const ours = await openRaster(file);
      const ref = await openRaster(join(ROOT, c.expected));
      const { width: w, height: h } = ref.info;
      const a = await ours.read({ x: 0, y: 0, width: w, height: h });
      const e = await ref.read({ x: 0, y: 0, width: w, height: h });
      let worst = 0;
      for (let y = 1; y < h - 1; y++) {
        for (let x = 1; x < w - 1; x++) {
          const i = y * w + x;
          // gdaldem hillshade bytes are 1 + 254 x (0 = NoData); the vendor scale is trunc(255 x).
          const want = c.gdalByte ? Math.trunc(((e.bands[0]![i]! - 1) * 255) / 254) : e.bands[0]![i]!;
          worst = Math.max(worst, Math.abs(a.bands[0]![i]! - want));
        }
      }
      expect(worst).toBeLessThanOrEqual(c.tol);
    }
  });

  it.skipIf(!HAS_GDAL)(
    '--outsize reads the overviews as gdal_translate -outsize -r nearest does: same pixels, same grid',
    () => {
      for (const size of ['87,88', '50%,50%', '100,0', '30,30', '100,37', '60,200']) {
        const ours = join(out, 'outsize-ours.tif');
        const theirs = join(out, 'outsize-gdal.tif');
        const r = cli(
          'render',
          '--rule',
          '{"rasterFunction":"Identity"}',
          '--input',
          LANDSAT,
          '--output',
          ours,
          '--outsize',
          size,
          '--co',
          'COMPRESS=NONE',
          '--tile',
          '32',
        );
        expect(r.code, r.stderr).toBe(0);
        const [w, h] = /\((\d+)x(\d+),/.exec(r.stderr)!.slice(1);
        expect(spawnSync('gdal_translate', ['-q', '-r', 'nearest', '-outsize', w!, h!, LANDSAT, theirs]).status).toBe(0);
        const py = `
import sys
from osgeo import gdal
a, b = gdal.Open(sys.argv[1]), gdal.Open(sys.argv[2])
print((a.ReadAsArray() != b.ReadAsArray()).sum(), max(abs(x - y) for x, y in zip(a.GetGeoTransform(), b.GetGeoTransform())))`;
        const cmp = spawnSync(PYTHON, ['-c', py, ours, theirs], { encoding: 'utf8' });
        const [differ, transform] = cmp.stdout.trim().split(' ').map(Number);
        expect([size, differ], cmp.stderr).toEqual([size, 0]);
        expect(transform).toBeLessThan(1e-6);
      }
      // Workers open the inputs downsampled too: the same bytes as inline.
      const inline = join(out, 'outsize-inline.tif');
      const workers = join(out, 'outsize-workers.tif');
      const rule = '{"rasterFunction":"NDVI","rasterFunctionArguments":{"VisibleBandID":3,"InfraredBandID":4}}';
      expect(cli('render', '--rule', rule, '--input', LANDSAT, '--output', inline, '--outsize', '25%,25%', '--tile', '16').code).toBe(0);
      expect(
        cli('render', '--rule', rule, '--input', LANDSAT, '--output', workers, '--outsize', '25%,25%', '--tile', '16', '--workers', '2')
          .code,
      ).toBe(0);
      expect(readFileSync(workers).equals(readFileSync(inline))).toBe(true);
    },
    120_000,
  );

  it('refuses a bad --outsize, naming it', () => {
    for (const bad of ['0,0', '10', 'a,b', '-5,5', '10,10,10']) {
      const r = cli(
        'render',
        '--rule',
        '{"rasterFunction":"Identity"}',
        '--input',
        LANDSAT,
        '--output',
        join(out, 'x.tif'),
        '--outsize',
        bad,
      );
      // A bad option value is a usage error: exit 2, in the one-line error form.
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^error INVALID_ARGUMENT at outsize: --outsize must be/);
    }
  });

  it('renders a window to PNG and binds $2 and named inputs', () => {
    const file = join(out, 'nir-red.png');
    const rule = JSON.stringify({
      rasterFunction: 'CompositeBand',
      outputPixelType: 'U8',
      rasterFunctionArguments: {
        Rasters: [
          { rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [3], Raster: '$2' } },
          { rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [2], Raster: 'landsat' } },
          { rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [1] } },
        ],
      },
    });
    const r = cli(
      'render',
      '--rule',
      rule,
      '--input',
      LANDSAT,
      '--input',
      LANDSAT,
      '--input',
      `landsat=${LANDSAT}`,
      '--output',
      file,
      '--window',
      '10,20,64,32',
    );
    expect(r.stderr).toMatch(/64x32/);
    expect(r.code).toBe(0);
    expect(existsSync(file)).toBe(true);
  });

  it('reports every error of a broken rule with its JSON path, exit 1, no stack trace', () => {
    const rule = JSON.stringify({
      rasterFunction: 'Arithmetic',
      rasterFunctionArguments: {
        Raster: { rasterFunction: 'NoSuchFunction' },
        Raster2: {
          rasterFunction: 'Slope',
          rasterFunctionArguments: { ZFactor: 'high', DEM: { rasterFunction: 'Hillshade', rasterFunctionArguments: { Altitude: 'up' } } },
        },
        Operation: 9,
      },
    });
    for (const command of ['render', 'validate']) {
      const args = command === 'render' ? ['--input', DEM, '--output', join(out, 'x.tif')] : [];
      const r = cli(command, '--rule', rule, ...args);
      expect(r.code).toBe(1);
      const lines = r.stderr.trim().split('\n');
      expect(lines).toEqual([
        'error INVALID_ARGUMENT at rasterFunctionArguments.Operation: must be one of 1, 2, 3, 4, 5, 6 or Plus, Minus, Multiply, Divide, Power, Mode, got 9',
        expect.stringMatching(/^error UNKNOWN_FUNCTION at rasterFunctionArguments\.Raster\.rasterFunction: "NoSuchFunction" is neither/),
        'error INVALID_ARGUMENT at rasterFunctionArguments.Raster2.rasterFunctionArguments.ZFactor: expected a number, got "high"',
        'error INVALID_ARGUMENT at rasterFunctionArguments.Raster2.rasterFunctionArguments.DEM.rasterFunctionArguments.Altitude: expected a number, got "up"',
      ]);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('chip exports training data, dry-runs, and names bad parameters', () => {
    const params = (o: string) =>
      JSON.stringify({
        inputRaster: LANDSAT,
        inputClassData: join(ROOT, 'golden/chipper/l7-labels.geojson'),
        outputLocation: join(out, o),
        metadataFormat: 'KITTI_rectangles',
        tileSize: { x: 64, y: 64 },
      });
    // The summary goes to stderr, as every command's; stdout is for data only.
    const dry = cli('chip', params('dry'), '--dry-run');
    expect([dry.stdout, dry.stderr]).toEqual(['', expect.stringMatching(/^would write 28 chips .* with 32 labels from 36 candidates/)]);
    expect(existsSync(join(out, 'dry'))).toBe(false);
    const r = cli('chip', params('chips'), '--workers', '1');
    expect([r.code, r.stdout, r.stderr]).toEqual([0, '', expect.stringMatching(/^wrote 28 chips \(indexes 0\.\.27\)/)]);
    expect(existsSync(join(out, 'chips', 'geo_accumulated_stats.json'))).toBe(true);
    const bad = cli('chip', '{"outputLocation":"x","metadataFormat":"Foo"}');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/error INVALID_ARGUMENT at metadataFormat: must be one of/);
    expect(bad.stderr).toMatch(/error INVALID_ARGUMENT at inputRaster: inputRaster is required/);
  });

  it('demo writes every gallery file', async () => {
    const { GALLERY, runDemo } = await import('../src/cli/demo.js');
    const written = await runDemo(join(out, 'demo'), () => undefined);
    expect(written).toHaveLength(GALLERY.reduce((n, e) => n + e.formats.length, 0));
    for (const f of written) expect(existsSync(f), f).toBe(true);
  });

  it('validate prints the canonical DAG', () => {
    const r = cli('validate', '--rule', '{"rasterfunction":"slope","rasterfunctionarguments":{"slopetype":"2"},"outputPixelType":"f32"}');
    expect(r.code).toBe(0);
    const dag = JSON.parse(r.stdout) as {
      nodes: { rasterFunction?: string; rasterFunctionArguments?: unknown; outputPixelType?: string }[];
    };
    expect(dag.nodes.at(-1)).toMatchObject({
      rasterFunction: 'Slope',
      rasterFunctionArguments: { SlopeType: 2, ZFactor: 1 },
      outputPixelType: 'F32',
    });
  });

  it('lists functions and describes rasters', () => {
    const f = cli('functions', '--json');
    expect(f.code).toBe(0);
    expect((JSON.parse(f.stdout) as { name: string }[]).map((x) => x.name)).toContain('Hillshade');
    const i = cli('info', DEM);
    expect(i.code).toBe(0);
    expect(JSON.parse(i.stdout)).toMatchObject({ width: 383, height: 407 });
    const missing = cli('info', join(out, 'nope.tif'));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error IO_ERROR/);
  });

  it('fails clearly on a missing input and a bad window', () => {
    const r = cli('render', '--rule', '{"rasterFunction":"Slope"}', '--output', join(out, 'y.tif'));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/no raster is bound to \$\$/);
    const w = cli('render', '--rule', '{"rasterFunction":"Slope"}', '--input', DEM, '--output', join(out, 'y.tif'), '--window', '1,2,3');
    expect(w.code).toBe(2);
    expect(w.stderr).toMatch(/--window/);
  });
});

describe('rasterflow CLI as a Unix tool', () => {
  const hillshade = '{"rasterFunction":"Hillshade"}';

  it('usage errors exit 2 in the one-line error form; a mistyped option is unknown, with a did-you-mean', () => {
    const cases: [string[], string][] = [
      [
        ['render', '--rule', hillshade, '--input', DEM, '--ouput', join(out, 'u.tif')],
        'error INVALID_ARGUMENT at ouput: unknown option --ouput; did you mean --output?',
      ],
      [
        ['render', '--input', DEM, '--output', join(out, 'u.tif')],
        'error INVALID_ARGUMENT at rule: render needs --rule <file|json> (rasterflow render --help lists the options)',
      ],
      [['render', '--rule', hillshade, '--output'], 'error INVALID_ARGUMENT at output: option --output <path> needs a value'],
      [['rendr'], 'error INVALID_ARGUMENT at command: unknown command rendr; did you mean render?'],
      [
        ['render', '--rule', hillshade, '--input', DEM, '--output', join(out, 'u.tif'), '--tile', 'x'],
        'error INVALID_ARGUMENT at tile: --tile must be a whole number from 1, got x',
      ],
      [
        ['render', '--rule', hillshade, '--input', DEM, '--output', join(out, 'u.tif'), '--co', 'COMPRESS=LZMA'],
        'error INVALID_ARGUMENT at co.COMPRESS: COMPRESS must be NONE or DEFLATE, got LZMA',
      ],
      [['info'], 'error INVALID_ARGUMENT at path: missing argument <path>'],
    ];
    for (const [args, line] of cases) {
      const r = cli(...args);
      expect([args.join(' '), r.code, r.stderr.trim()]).toEqual([args.join(' '), 2, line]);
    }
    expect(existsSync(join(out, 'u.tif'))).toBe(false);
  });

  it('--max-pixels: an oversized render fails at once with the numbers, before any pixel work', () => {
    const file = join(out, 'huge.tif');
    const started = Date.now();
    const r = cli(
      'render',
      '--rule',
      '{"rasterFunction":"Identity"}',
      '--input',
      LANDSAT,
      '--output',
      file,
      '--outsize',
      '1000000,1000000',
    );
    expect(Date.now() - started).toBeLessThan(20_000);
    expect([r.code, r.stderr.trim()]).toEqual([
      1,
      'error LIMIT_EXCEEDED at outsize: the output would be 1000000x1000000 = 1,000,000,000,000 pixels, over the limit of 2,147,483,648 (raise it with --max-pixels N; 0 turns the check off)',
    ]);
    expect(readdirSync(out).filter((f) => f.startsWith('huge'))).toEqual([]);
    const small = cli('render', '--rule', hillshade, '--input', DEM, '--output', join(out, 'small.png'), '--max-pixels', '1000');
    expect([small.code, small.stderr.trim()]).toEqual([
      1,
      expect.stringMatching(/^error LIMIT_EXCEEDED at output: the output would be 383x407 = 155,881 pixels, over the limit of 1,000 /),
    ]);
    expect(cli('render', '--rule', hillshade, '--input', DEM, '--output', join(out, 'small.png'), '--max-pixels', '155881').code).toBe(0);
    expect(cli('render', '--rule', hillshade, '--input', DEM, '--output', join(out, 'small.png'), '--max-pixels', 'lots').code).toBe(2);
  });

  it('SIGINT and SIGTERM stop a render, remove the partial file, and exit 130 / 143', async () => {
    for (const [signal, status] of [
      ['SIGINT', 130],
      ['SIGTERM', 143],
    ] as const) {
      const dir = mkdtempSync(join(out, 'signal-'));
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          join(ROOT, 'src/cli/main.ts'),
          'render',
          '--rule',
          '{"rasterFunction":"Identity"}',
          '--input',
          LANDSAT,
          '--output',
          join(dir, 'big.tif'),
          '--outsize',
          '20000,20000',
        ],
        {
          cwd: ROOT,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      // Signal once the render is writing its partial output.
      const deadline = Date.now() + 30_000;
      while (!readdirSync(dir).some((f) => f.includes('.partial')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(readdirSync(dir).some((f) => f.includes('.partial'))).toBe(true);
      child.kill(signal);
      expect(await exited).toBe(status);
      expect(readdirSync(dir)).toEqual([]);
      expect(stderr.trim()).toBe(`error ABORTED: interrupted by ${signal}; the partial output was removed`);
    }
  }, 90_000);

  it('a progress bar on render, on a terminal only, for PNG as for GeoTIFF', async () => {
    for (const [file, tty] of [
      ['progress.png', true],
      ['progress.tif', true],
      ['quiet.png', false],
    ] as const) {
      const drawn: string[] = [];
      const messages: string[] = [];
      const io: CliIo = {
        out: () => undefined,
        err: (s) => messages.push(s),
        isTTY: tty,
        progress: (s) => drawn.push(s),
        progressAfterMs: 0,
      };
      const program = run(new Command(), io);
      await program.parseAsync(['render', '--rule', hillshade, '--input', DEM, '--output', join(out, file), '--tile', '128'], {
        from: 'user',
      });
      if (tty) {
        expect(drawn.at(0)).toMatch(/^\r\[#*\.*\] +\d+% 1\/12 tiles$/);
        expect(drawn.at(-2)).toBe(`\r[${'#'.repeat(25)}] 100% 12/12 tiles`);
        expect(drawn.at(-1)).toBe('\n');
      } else expect(drawn).toEqual([]);
      expect(messages).toEqual([expect.stringMatching(/^wrote /)]);
    }
  });

  it('a closed pipe ends quietly with exit 0', () => {
    const entry = `"${process.execPath}" --import tsx src/cli/main.ts`;
    const r = spawnSync('bash', ['-c', `${entry} functions --json | head -1; echo "status=\${PIPESTATUS[0]}" >&2`], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(r.stdout).toBe('[\n');
    expect(r.stderr).toBe('status=0\n');
  });

  it('--output - writes the image to stdout, the format from --format or -of; the summary to stderr', async () => {
    const ref = join(out, 'ref.png');
    expect(cli('render', '--rule', hillshade, '--input', DEM, '--output', ref).code).toBe(0);
    const root = new URL('..', import.meta.url).pathname;
    const png = spawnSync(
      process.execPath,
      ['--import', 'tsx', `${root}src/cli/main.ts`, 'render', '--rule', hillshade, '--input', DEM, '--output', '-', '-of', 'png'],
      { cwd: ROOT },
    );
    expect([png.status, png.stderr.toString()]).toEqual([0, expect.stringMatching(/^wrote PNG to stdout \(383x407, 1 band\(s\) U8\)/)]);
    expect(png.stdout.equals(readFileSync(ref))).toBe(true);
    const tif = spawnSync(
      process.execPath,
      ['--import', 'tsx', `${root}src/cli/main.ts`, 'render', '--rule', hillshade, '--input', DEM, '--output', '-', '--format', 'GTiff'],
      { cwd: ROOT, maxBuffer: 1 << 26 },
    );
    expect(tif.status).toBe(0);
    const again = join(out, 'from-stdout.tif');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(again, tif.stdout);
    const written = await openRaster(again);
    expect(written.info).toMatchObject({ width: 383, height: 407, pixelType: 'U8' });
    expect(written.info.spatialReference?.wkid).toBe(32616);
    const none = cli('render', '--rule', hillshade, '--input', DEM, '--output', '-');
    expect([none.code, none.stderr.trim()]).toEqual([
      2,
      'error INVALID_ARGUMENT at format: --output - writes the image to stdout: name its format with --format GTiff, PNG or JPEG',
    ]);
    // Not to a terminal, as gzip -c.
    const { PassThrough } = await import('node:stream');
    const terminal = Object.assign(new PassThrough(), { isTTY: true });
    const io: CliIo = { out: () => undefined, err: () => undefined, isTTY: false, stdout: terminal };
    await expect(
      run(new Command(), io).parseAsync(
        ['render', '--rule', hillshade, '--input', DEM, '--output', '-', '-of', 'PNG'].map((a) => (a === '-of' ? '--format' : a)),
        { from: 'user' },
      ),
    ).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'output',
      message: '--output - would write PNG bytes to the terminal: redirect stdout (> out.png) or pipe it',
    });
    const typo = cli('render', '--rule', hillshade, '--input', DEM, '--output', '-', '--format', 'PNF');
    expect([typo.code, typo.stderr.trim()]).toEqual([
      2,
      'error INVALID_ARGUMENT at format: --format must be GTiff, PNG or JPEG, got PNF; did you mean PNG?',
    ]);
  });

  it('functions NAME prints one function in full: arguments, types, defaults, values, docs; a typo gets a did-you-mean', () => {
    const r = cli('functions', 'slope');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Slope \[terrain\]: /);
    expect(r.stdout).toMatch(/\n {2}SlopeType: enum, default 1\n {6}values: 1 \w+/);
    expect(r.stdout).toMatch(/\n {2}ZFactor: number/);
    expect(r.stdout).toMatch(/\n {2}DEM \(also Raster\): raster/);
    const json = cli('functions', 'HILLSHADE', '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({
      name: 'Hillshade',
      arguments: expect.arrayContaining([expect.objectContaining({ name: 'Azimuth', default: 315 })]),
    });
    const typo = cli('functions', 'Hilshade');
    expect([typo.code, typo.stdout, typo.stderr.trim()]).toEqual([
      2,
      '',
      'error UNKNOWN_FUNCTION at name: no raster function is named "Hilshade"; did you mean Hillshade? (rasterflow functions lists them)',
    ]);
  });

  it('chip takes plain local paths for every input, also inside a rule; errors name the parameter and no --input flag', () => {
    const labels = join(ROOT, 'golden/chipper/l7-labels.geojson');
    const params = (inputRaster: unknown, o: string) =>
      JSON.stringify({
        inputRaster,
        inputClassData: 'golden/chipper/l7-labels.geojson',
        inputMaskPolygons: labels,
        outputLocation: join(out, o),
        tileSize: { x: 64, y: 64 },
      });
    const ndvi = (raster: unknown) => ({
      rasterFunction: 'NDVI',
      rasterFunctionArguments: { VisibleBandID: 3, InfraredBandID: 4, Raster: raster },
    });
    let n = 0;
    // Relative and absolute paths, file: URLs, {"url"}, a rule over a plain path (rendered in a worker too), {"url", "renderingRule"}.
    for (const [input, workers] of [
      ['golden/data/L7_ETMs.tif', '0'],
      [`file://${LANDSAT}`, '0'],
      [{ url: LANDSAT }, '0'],
      [ndvi('golden/data/L7_ETMs.tif'), '1'],
      [ndvi({ url: LANDSAT }), '0'],
      [{ url: LANDSAT, renderingRule: ndvi('$$') }, '0'],
    ] as const) {
      const r = cli('chip', params(input, `forms-${n++}`), '--workers', workers);
      expect([JSON.stringify(input), r.code, r.stderr]).toEqual([
        JSON.stringify(input),
        0,
        expect.stringMatching(/^wrote 1 chips .* with 1 labels/),
      ]);
    }
    const unbound = cli('chip', params(ndvi(undefined), 'unbound'), '--dry-run');
    expect([unbound.code, unbound.stderr.trim()]).toEqual([
      1,
      'error INVALID_ARGUMENT at inputRaster.rasterFunctionArguments.Raster: no raster is bound to $$ (bound: none); a rule given as inputRaster names its rasters as plain paths or {"url": PATH} (e.g. "Raster": "scene.tif"), or applies to one raster as {"url": PATH, "renderingRule": RULE}',
    ]);
    const missing = cli('chip', params(ndvi('nope.tif'), 'missing'), '--dry-run');
    expect([missing.code, missing.stderr.trim()]).toEqual([
      1,
      'error IO_ERROR at inputRaster.rasterFunctionArguments.Raster: cannot open nope.tif: no such file',
    ]);
    const plainMissing = cli('chip', params('nope.tif', 'missing'), '--dry-run');
    expect([plainMissing.code, plainMissing.stderr.trim()]).toEqual([
      1,
      'error IO_ERROR at inputRaster: cannot open nope.tif: no such file',
    ]);
  });

  it('one stream for summaries: render, chip and demo summaries on stderr, stdout for data only', () => {
    const r = cli('render', '--rule', hillshade, '--input', DEM, '--output', join(out, 'summary.tif'));
    expect([r.code, r.stdout, r.stderr]).toEqual([0, '', expect.stringMatching(/^wrote /)]);
  });
});

/**
 * `npm run bench:scale`: the job queue's throughput with 1, 2 and 4 `rasterflow worker` processes
 * beside one process, on this machine. Redis is started on a free loopback port and stopped at the
 * end. Two workloads, each checked byte for byte against the one-process output:
 * - a training-data export: PASCAL_VOC_rectangles over the 8192 x 8192 Landsat bench raster with
 *   the hand-drawn labels, 256-px chips every 128 px, every tile exported (about 4,000 chips);
 * - a batch render: Hillshade of the 16384 x 16384 DEFLATE DEM (bench/make-big-dem.sh) to a
 *   DEFLATE-tiled GeoTIFF.
 * Workers are started before the clock starts (as a standing pool would be); the clock covers the
 * submitting command from its start to its exit. Every process runs through tsx, one side as the
 * other. Usage: npm run bench:scale [-- --only chip|render] [--workers 1,2,4]
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { upscaled } from '../chipper.bench.js';
import { startRedis } from '../../test/redis-harness.js';

const ROOT = resolve(import.meta.dirname, '../..');
const DATA = resolve(ROOT, 'bench/data');
const DEM = join(DATA, 'dem16384-deflate.tif');
const args = process.argv.slice(2);
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
const counts = (args.includes('--workers') ? args[args.indexOf('--workers') + 1]! : '1,2,4').split(',').map(Number);

interface Proc {
  readonly done: Promise<{ code: number | null; stderr: string; ms: number }>;
  kill(): void;
  readonly stderr: () => string;
}

function run(cliArgs: readonly string[]): Proc {
  const t = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...cliArgs], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const done = new Promise<{ code: number | null; stderr: string; ms: number }>((r) =>
    child.on('exit', (code) => r({ code, stderr: err, ms: performance.now() - t })),
  );
  return { done, kill: () => child.kill('SIGTERM'), stderr: () => err };
}

async function workers(url: string, n: number): Promise<Proc[]> {
  const ws = Array.from({ length: n }, () => run(['worker', '--queue', url, '--concurrency', '1']));
  for (const w of ws) {
    while (!/worker on redis:/.test(w.stderr())) {
      if (/error/i.test(w.stderr())) throw new Error(w.stderr());
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return ws;
}

async function stop(ws: Proc[]): Promise<void> {
  for (const w of ws) w.kill();
  await Promise.all(ws.map((w) => w.done));
}

/** Every file below `a` equal to the one below `b`. */
function sameTree(a: string, b: string): boolean {
  const list = (d: string): string[] =>
    (readdirSync(d, { recursive: true }) as string[]).filter((f) => statSync(join(d, f)).isFile()).sort();
  const fa = list(a);
  const fb = list(b);
  return fa.length === fb.length && fa.every((f, i) => f === fb[i] && readFileSync(join(a, f)).equals(readFileSync(join(b, f))));
}

const line = (s: string): void => console.log(s);

async function main(): Promise<void> {
  line(
    `bench:scale on ${cpus().length} cores, load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')} at the start`,
  );
  const redis = await startRedis();
  const dir = mkdtempSync(join(tmpdir(), 'rasterflow-scale-'));
  try {
    if (only === undefined || only === 'chip') {
      const raster = await upscaled();
      const params = (out: string): string => {
        const file = join(dir, `${relative(dir, out).replace(/\W/g, '_')}.json`);
        writeFileSync(
          file,
          JSON.stringify({
            inputRaster: raster,
            inputClassData: join(ROOT, 'golden/chipper/l7-labels.geojson'),
            outputLocation: out,
            metadataFormat: 'PASCAL_VOC_rectangles',
            tileSize: { x: 256, y: 256 },
            strideSize: { x: 128, y: 128 },
            context: { exportAllTiles: true },
          }),
        );
        return file;
      };
      const local = join(dir, 'chip-local');
      const l = await run(['chip', params(local)]).done;
      if (l.code !== 0) throw new Error(l.stderr);
      const chips = Number(/wrote (\d+) chips/.exec(l.stderr)![1]);
      const perMin = (ms: number): string => `${Math.round((chips * 60000) / ms).toLocaleString('en')} chips/min`;
      line(`chip: one process (rasterflow chip): ${chips} chips in ${(l.ms / 1000).toFixed(1)} s = ${perMin(l.ms)}`);
      for (const n of counts) {
        const ws = await workers(redis.url, n);
        const out = join(dir, `chip-q${n}`);
        const q = await run(['chip', '--queue', redis.url, params(out)]).done;
        await stop(ws);
        if (q.code !== 0) throw new Error(q.stderr);
        line(
          `chip: ${n} worker(s) (chip --queue): ${(q.ms / 1000).toFixed(1)} s = ${perMin(q.ms)}, ${(l.ms / q.ms).toFixed(2)}x one process; identical: ${sameTree(local, out)}`,
        );
        rmSync(out, { recursive: true, force: true });
      }
      rmSync(local, { recursive: true, force: true });
    }
    if (only === undefined || only === 'render') {
      if (!existsSync(DEM)) spawnSync(resolve(ROOT, 'bench/make-big-dem.sh'), [DATA], { stdio: 'ignore' });
      if (!existsSync(DEM)) line(`render: ${DEM} could not be made (bench/make-big-dem.sh needs GDAL): skipped`);
      else {
        const rule = JSON.stringify({ rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: 315, Altitude: 45, ZFactor: 1 } });
        const base = ['render', '--rule', rule, '--input', DEM, '--co', 'COMPRESS=DEFLATE'];
        const local = join(dir, 'render-local.tif');
        const l = await run([...base, '--output', local]).done;
        if (l.code !== 0) throw new Error(l.stderr);
        const mpx = (ms: number): string => `${((16384 * 16384) / 1e6 / (ms / 1000)).toFixed(0)} Mpx/s`;
        line(`render: one process (rasterflow render): ${(l.ms / 1000).toFixed(1)} s = ${mpx(l.ms)}`);
        for (const n of counts) {
          const ws = await workers(redis.url, n);
          const out = join(dir, `render-q${n}.tif`);
          const q = await run([...base, '--queue', redis.url, '--output', out]).done;
          await stop(ws);
          if (q.code !== 0) throw new Error(q.stderr);
          line(
            `render: ${n} worker(s) (render --queue): ${(q.ms / 1000).toFixed(1)} s = ${mpx(q.ms)}, ${(l.ms / q.ms).toFixed(2)}x one process; identical: ${readFileSync(local).equals(readFileSync(out))}`,
          );
          rmSync(out, { force: true });
        }
      }
    }
  } finally {
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  line(
    `load average at the end: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
}

await main();

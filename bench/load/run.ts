/**
 * `npm run loadtest`: 1,000 concurrent clients against `rasterflow serve` for 60 s, on loopback
 * only, mixing the four kinds of traffic a public site gets:
 *
 *  - exportImage (256 x 256 PNG) on an anonymous image service, over a 4 x 4 grid of boxes;
 *  - identify (a point, JSON) on the same service;
 *  - a token check: the secured image service's resource with a requestip-bound token;
 *  - SOAP GetMapTile on the fixture map service (every tile of its first four levels).
 *
 * Every answer is checked: the right status and content type, a PNG signature or a SOAP Result.
 * Back-pressure ("The server is busy", HTTP 503 from the bounded render queue) is counted on its
 * own; anything else that is not the expected answer is an error. The server runs in a child
 * process, so its peak RSS (VmHWM) is its own. Results: bench/load/results.json.
 *
 * Environment: LOAD_CLIENTS (default 1000), LOAD_SECONDS (default 60), LOAD_DEM (default the
 * shared Jacksboro DEM). The server is stopped at the end (SIGTERM, SIGKILL after 15 s) whatever happens.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { olindaMapDefinition } from '../../test/map-fixture.js';
import { gridBboxes, runLoad, startServeChild, type RequestSpec, type ServeChild } from '../serve/load.js';

const int = (name: string, fallback: number): number => {
  const v = Number(process.env[name]);
  return Number.isInteger(v) && v > 0 ? v : fallback;
};
const CLIENTS = int('LOAD_CLIENTS', 1000);
const SECONDS = int('LOAD_SECONDS', 60);
const DEM = process.env['LOAD_DEM'] ?? '/work/shared/data/jacksboro_fault_dem_utm16n_75m.tif';
const HERE = new URL('.', import.meta.url).pathname;
const MIB = 1024 * 1024;
const USER = 'loadadmin';
const PASSWORD = `load-${process.pid}-${Date.now()}`;
const NS = 'http://www.geo.example/schemas/Geo/3.5.0';

const log = (s: string): void => void process.stderr.write(`${s}\n`);

/** A token from generateToken over HTTPS (bound to the requesting address: the load comes from 127.0.0.1 too). */
function generateToken(httpsOrigin: string, ca: string): Promise<string> {
  const body = new URLSearchParams({ username: USER, password: PASSWORD, client: 'requestip', expiration: '120', f: 'json' }).toString();
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      `${httpsOrigin}/portal/sharing/rest/generateToken`,
      { method: 'POST', ca, headers: { 'content-type': 'application/x-www-form-urlencoded' } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => {
          const token = (JSON.parse(text) as { token?: string }).token;
          if (token) resolve(token);
          else reject(new Error(`generateToken: ${text}`));
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const tileEnvelope = (level: number, row: number, col: number): string =>
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:g="${NS}"><soap:Body><g:GetMapTile><MapName>Layers</MapName><Level>${level}</Level><Row>${row}</Row><Column>${col}</Column></g:GetMapTile></soap:Body></soap:Envelope>`;

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'rf-loadtest-'));
  let server: ServeChild | undefined;
  const counts = { busy: 0, fiveHundreds: 0, wrong: 0 };
  const samples = new Set<string>();
  const wrong = (why: string): string => {
    counts.wrong++;
    if (samples.size < 5) samples.add(why);
    return why;
  };
  /** 200 + content type + `ok(body)`; 503 "busy" is back-pressure; any other 5xx is counted as such. */
  const checker =
    (type: string, ok: (b: Buffer) => boolean) =>
    (status: number, contentType: string, body: Buffer): string | undefined => {
      if (status === 503 && /busy/i.test(body.toString('utf8'))) {
        counts.busy++;
        return undefined;
      }
      if (status >= 500) {
        counts.fiveHundreds++;
        return wrong(`HTTP ${status}: ${body.subarray(0, 200).toString('utf8')}`);
      }
      if (status !== 200 || !contentType.startsWith(type) || !ok(body))
        return wrong(`HTTP ${status} ${contentType}: ${body.subarray(0, 160).toString('utf8')}`);
      return undefined;
    };
  const png = checker('image/png', (b) => b.length > 8 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47);
  const json = checker('application/json', (b) => !b.includes('"error"'));
  const soap = checker('text/xml', (b) => b.includes('<tns:GetMapTileResponse><Result>'));
  try {
    server = await startServeChild({
      dataDir,
      config: {
        services: [
          { serviceName: 'dem', type: 'ImageServer', properties: { path: DEM, anonymous: true } },
          { serviceName: 'secured', type: 'ImageServer', properties: { path: DEM } },
          olindaMapDefinition(),
        ],
      },
      env: { RASTERFLOW_ADMIN_USERNAME: USER, RASTERFLOW_ADMIN_PASSWORD: PASSWORD },
      limitMs: (SECONDS + 300) * 1000,
    });
    const http = server.httpOrigin;
    const token = await generateToken(server.httpsOrigin, readFileSync(join(dataDir, 'tls', 'cert.pem'), 'utf8'));
    const info = (await (await fetch(`${http}/server/rest/services/dem/ImageServer?f=json`)).json()) as { extent: Record<string, number> };
    const e = info.extent;
    const extent: [number, number, number, number] = [e['xmin']!, e['ymin']!, e['xmax']!, e['ymax']!];
    const boxes = gridBboxes(extent, 4);
    const specs: RequestSpec[] = [];
    let tile = 0;
    const tiles: [number, number, number][] = [];
    for (let level = 0; level < 4; level++)
      for (let r = 0; r < 2 ** level; r++) for (let c = 0; c < 2 ** level; c++) tiles.push([level, r, c]);
    for (let i = 0; i < 64; i++) {
      const box = boxes[i % boxes.length]!;
      const [x0, y0, x1, y1] = box.split(',').map(Number) as [number, number, number, number];
      specs.push({
        url: `${http}/server/rest/services/dem/ImageServer/exportImage?bbox=${box}&size=256,256&format=png&f=image`,
        check: png,
      });
      specs.push({
        url: `${http}/server/rest/services/dem/ImageServer/identify?geometry=${(x0 + x1) / 2},${(y0 + y1) / 2}&geometryType=esriGeometryPoint&f=json`,
        check: json,
      });
      specs.push({ url: `${http}/server/rest/services/secured/ImageServer?f=json&token=${encodeURIComponent(token)}`, check: json });
      const [level, row, col] = tiles[tile++ % tiles.length]!;
      specs.push({
        url: `${http}/server/services/olinda/MapServer`,
        method: 'POST',
        headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '""' },
        body: tileEnvelope(level, row, col),
        check: soap,
      });
    }
    const idle = server.memory();
    log(`rasterflow serve pid ${server.pid}; idle RSS ${((idle?.rss ?? 0) / MIB).toFixed(0)} MiB; ${CLIENTS} clients for ${SECONDS} s`);
    let peak = 0;
    const result = await runLoad({
      urls: specs,
      concurrency: CLIENTS,
      requests: Number.MAX_SAFE_INTEGER,
      warmup: specs.length,
      durationMs: SECONDS * 1000,
      timeoutMs: 120_000,
      onTick: () => {
        const m = server?.memory();
        if (m && m.rss > peak) peak = m.rss;
      },
    });
    const mem = server.memory();
    const exit = await server.stop();
    server = undefined;
    const out = {
      when: new Date().toISOString(),
      clients: CLIENTS,
      seconds: SECONDS,
      requests: result.requests,
      reqPerSec: Math.round(result.reqPerSec),
      p50Ms: Math.round(result.p50Ms),
      p99Ms: Math.round(result.p99Ms),
      maxMs: Math.round(result.maxMs),
      busy: counts.busy,
      fiveHundreds: counts.fiveHundreds,
      errors: result.errors,
      errorSamples: [...new Set([...result.errorSamples, ...samples])],
      retriedOnClosedConnection: result.retriedOnClosedConnection,
      peakRssMiB: Math.round(Math.max(peak, mem?.hwm ?? 0) / MIB),
      serverExit: exit,
    };
    writeFileSync(join(HERE, 'results.json'), `${JSON.stringify(out, null, 2)}\n`);
    log(JSON.stringify(out, null, 2));
    if (out.errors > 0 || out.fiveHundreds > 0 || exit !== 0) process.exitCode = 1;
  } finally {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();

/**
 * `npm run loadtest`: 1,000 concurrent clients against `rasterflow serve` for 60 s, on loopback
 * only, mixing the four kinds of traffic a public site gets (one request of each kind in turn):
 *
 *  - `exportImage`: a 256 x 256 PNG of an anonymous image service, over a 4 x 4 grid of boxes;
 *  - `identify`: a point (JSON) on the same service;
 *  - `token`: the secured image service's resource with a token (a token check on every request);
 *  - `GetMapTile`: SOAP GetMapTile on the fixture map service, cycling over every tile of its first
 *    levels that belongs to the cache (so every request can be served: hits once drawn, misses at first).
 *
 * The clients are distinct as clients behind a reverse proxy are: the server trusts 127.0.0.1 as a
 * proxy and each client sends its own `X-Forwarded-For` (10.x.y.z), so per-client limits apply per
 * client. The token is bound to a Referer (as a web app's), which every client sends.
 *
 * Every answer is checked: the right status and content type, a PNG signature, JSON without an
 * error, a SOAP Result. "Server busy" answers (REST: an error body with code 503; SOAP: a Server
 * fault with code 503, HTTP 500 by the SOAP 1.1 rule) are back-pressure, counted on their own; any
 * other answer that is not the expected one is an error. The server runs in a child process, so its
 * peak RSS (VmHWM) is its own. Results: bench/load/results.json (or `--out`).
 *
 * Options (environment fallbacks in brackets): `--clients N` [LOAD_CLIENTS] (default 1000),
 * `--seconds S` [LOAD_SECONDS] (default 60), `--dem PATH` [LOAD_DEM] (default the shared Jacksboro
 * DEM), `--levels L` tile levels 0..L-1 in the mix (default 5), `--out FILE`, `--cpu-prof DIR` (the
 * server writes a V8 CPU profile there when it stops), `--setting key=value` (repeatable: a site
 * setting of the server's config file, the value read as JSON when it parses, e.g.
 * `--setting maxQueuedRenders=64`; the default is the shipped limits), `--cold` (the map tiles are
 * not drawn before the clock starts: GetMapTile then measures drawing on demand under the full load;
 * by default every tile of the mix is drawn first, as a cached map service's cache is built before
 * it is published, so GetMapTile measures serving the cache). The server is stopped at the end (SIGTERM,
 * SIGKILL after 15 s) whatever happens, and killed if it outlives the run by 5 minutes.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { cacheTileRange } from '../../src/adapters/map/tile-cache.js';
import { olindaMapDefinition } from '../../test/map-fixture.js';
import { BUSY, gridBboxes, runLoad, startServeChild, type Check, type RequestSpec, type ServeChild } from '../serve/load.js';

const { values: args } = parseArgs({
  options: {
    clients: { type: 'string' },
    seconds: { type: 'string' },
    dem: { type: 'string' },
    levels: { type: 'string' },
    out: { type: 'string' },
    'cpu-prof': { type: 'string' },
    setting: { type: 'string', multiple: true },
    cold: { type: 'boolean' },
  },
  strict: true,
});

const whole = (name: string, value: string | undefined, fallback: number, max: number): number => {
  if (value === undefined || value === '') return fallback;
  const v = Number(value);
  if (!Number.isInteger(v) || v < 1 || v > max) throw new Error(`${name} must be a whole number from 1 to ${max}, not '${value}'`);
  return v;
};
const CLIENTS = whole('--clients', args.clients ?? process.env['LOAD_CLIENTS'], 1000, 20_000);
const SECONDS = whole('--seconds', args.seconds ?? process.env['LOAD_SECONDS'], 60, 3600);
const LEVELS = whole('--levels', args.levels, 5, 12);
const DEM = args.dem ?? process.env['LOAD_DEM'] ?? `${import.meta.dirname}/../../golden/data/jacksboro_fault_dem_utm16n_75m.tif`;
const HERE = new URL('.', import.meta.url).pathname;
const OUT = args.out !== undefined ? resolve(args.out) : join(HERE, 'results.json');
const MIB = 1024 * 1024;
const USER = 'loadadmin';
const PASSWORD = `load-${process.pid}-${Date.now()}`;
/** `--setting key=value` pairs: the value as JSON when it parses, else the string. */
const SETTINGS: Record<string, unknown> = Object.fromEntries(
  (args.setting ?? []).map((kv) => {
    const at = kv.indexOf('=');
    if (at <= 0) throw new Error(`--setting takes key=value, not '${kv}'`);
    const raw = kv.slice(at + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      value = raw;
    }
    return [kv.slice(0, at), value];
  }),
);
const REFERER = 'https://maps.load.example/app/';
const NS = 'http://www.geo.example/schemas/Geo/3.5.0';

const log = (s: string): void => void process.stderr.write(`${s}\n`);

/** Client i's address behind the proxy: 10.x.y.z, distinct for up to 16 million clients. */
const clientAddress = (i: number): string => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

/** A token from generateToken over HTTPS, bound to REFERER. */
function generateToken(httpsOrigin: string, ca: string): Promise<string> {
  const body = new URLSearchParams({
    username: USER,
    password: PASSWORD,
    client: 'referer',
    referer: REFERER,
    expiration: '120',
    f: 'json',
  });
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
    req.end(body.toString());
  });
}

const soapEnvelope = (operation: string, inner: string): string =>
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:g="${NS}"><soap:Body><g:${operation}>${inner}</g:${operation}></soap:Body></soap:Envelope>`;
const tileEnvelope = (level: number, row: number, col: number): string =>
  soapEnvelope('GetMapTile', `<MapName>Layers</MapName><Level>${level}</Level><Row>${row}</Row><Column>${col}</Column>`);

/** The text of the first `<name>` element in `xml` (no attributes on it), as a number. */
function numberIn(xml: string, name: string): number {
  const m = new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml);
  const v = Number(m?.[1]);
  if (!m || !Number.isFinite(v)) throw new Error(`no <${name}> in the answer: ${xml.slice(0, 300)}`);
  return v;
}

/** Every tile of levels 0..levels-1 of the map's cache (asked of the service: its tile scheme and full extent). */
async function cacheTiles(endpoint: string, levels: number): Promise<[number, number, number][]> {
  const ask = async (operation: string, inner: string): Promise<string> => {
    const res = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '""' },
      body: soapEnvelope(operation, inner),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${operation}: HTTP ${res.status} ${text.slice(0, 300)}`);
    return text;
  };
  const info = await ask('GetTileCacheInfo', '<MapName>Layers</MapName>');
  const server = await ask('GetServerInfo', '<MapName>Layers</MapName>');
  const full = /<FullExtent[^>]*>([\s\S]*?)<\/FullExtent>/.exec(server)?.[1] ?? '';
  const lods = [...info.matchAll(/<LODInfo[^>]*>([\s\S]*?)<\/LODInfo>/g)].map((m) => ({
    level: numberIn(m[1]!, 'LevelID'),
    scale: numberIn(m[1]!, 'Scale'),
    resolution: numberIn(m[1]!, 'Resolution'),
  }));
  const origin = /<TileOrigin[^>]*>([\s\S]*?)<\/TileOrigin>/.exec(info)?.[1] ?? '';
  const service = {
    fullExtent: { xmin: numberIn(full, 'XMin'), ymin: numberIn(full, 'YMin'), xmax: numberIn(full, 'XMax'), ymax: numberIn(full, 'YMax') },
    tiling: {
      origin: { x: numberIn(origin, 'X'), y: numberIn(origin, 'Y') },
      cols: numberIn(info, 'TileCols'),
      rows: numberIn(info, 'TileRows'),
      dpi: numberIn(info, 'DPI'),
      lods,
      format: 'PNG' as const,
      quality: 75,
      clientCachingAllowed: true,
      cacheDir: '',
    },
  };
  const out: [number, number, number][] = [];
  for (const { level } of lods.slice(0, levels)) {
    const r = cacheTileRange(service, level);
    if (r) for (let row = r.minRow; row <= r.maxRow; row++) for (let col = r.minCol; col <= r.maxCol; col++) out.push([level, row, col]);
  }
  return out;
}

/** The kernel's count of connections dropped because a listen queue was full (Linux; undefined elsewhere). All listeners of the machine count. */
function listenOverflows(): number | undefined {
  try {
    const lines = readFileSync('/proc/net/netstat', 'utf8').split('\n');
    for (let i = 0; i + 1 < lines.length; i += 2) {
      const names = lines[i]!.split(/\s+/);
      const values = lines[i + 1]!.split(/\s+/);
      const at = names.indexOf('ListenOverflows');
      if (names[0] === 'TcpExt:' && at > 0) return Number(values[at]);
    }
  } catch {
    // not Linux
  }
  return undefined;
}

/** The figures of each kind, rounded for the results file. */
const rounded = (o: Readonly<Record<string, number>>): Record<string, number> =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Math.round(v)]));

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'rf-loadtest-'));
  let server: ServeChild | undefined;
  const samples = new Set<string>();
  const wrong = (why: string): string => {
    if (samples.size < 8) samples.add(why);
    return why;
  };
  /** REST: 200 + content type + `ok(body)`; an error body with code 503 is "server busy". */
  const rest =
    (type: string, ok: (b: Buffer) => boolean): Check =>
    (status, contentType, body) => {
      if (
        status === 200 &&
        contentType.startsWith('application/json') &&
        /^\s*\{\s*"error"\s*:\s*\{\s*"code"\s*:\s*503\b/.test(body.toString('utf8'))
      )
        return BUSY;
      if (status !== 200 || !contentType.startsWith(type) || !ok(body))
        return wrong(`HTTP ${status} ${contentType}: ${body.subarray(0, 200).toString('utf8')}`);
      return undefined;
    };
  const png = rest('image/png', (b) => b.length > 8 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47);
  const json = rest('application/json', (b) => !b.includes('"error"'));
  /** SOAP: 200 + a Result; a Server fault with code 503 is "server busy" (HTTP 500 by the SOAP rule, reported as such). */
  const soap: Check = (status, contentType, body) => {
    const text = body.toString('utf8');
    if (status === 500 && text.includes('<faultcode>soap:Server</faultcode>') && /<Code>503<\/Code>/.test(text)) return BUSY;
    if (status !== 200 || !contentType.startsWith('text/xml') || !text.includes('<tns:GetMapTileResponse><Result>'))
      return wrong(`HTTP ${status} ${contentType}: ${text.slice(0, 300)}`);
    return undefined;
  };
  try {
    server = await startServeChild({
      dataDir,
      config: {
        settings: { ...SETTINGS, trustedProxies: ['127.0.0.1'] },
        services: [
          { serviceName: 'dem', type: 'ImageServer', properties: { path: DEM, anonymous: true } },
          { serviceName: 'secured', type: 'ImageServer', properties: { path: DEM } },
          olindaMapDefinition({ anonymous: true }),
        ],
      },
      env: { RASTERFLOW_ADMIN_USERNAME: USER, RASTERFLOW_ADMIN_PASSWORD: PASSWORD },
      ...(args['cpu-prof'] !== undefined ? { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', resolve(args['cpu-prof'])] } : {}),
      limitMs: (SECONDS + 300) * 1000,
    });
    const http = server.httpOrigin;
    const token = await generateToken(server.httpsOrigin, readFileSync(join(dataDir, 'tls', 'cert.pem'), 'utf8'));
    const info = (await (await fetch(`${http}/server/rest/services/dem/ImageServer?f=json`)).json()) as { extent: Record<string, number> };
    const e = info.extent;
    const extent: [number, number, number, number] = [e['xmin']!, e['ymin']!, e['xmax']!, e['ymax']!];
    const boxes = gridBboxes(extent, 4);
    const soapUrl = `${http}/server/services/olinda/MapServer`;
    const tiles = await cacheTiles(soapUrl, LEVELS);
    if (tiles.length === 0) throw new Error('the map service has no cache tiles');
    const specs: RequestSpec[] = [];
    const n = Math.max(boxes.length, tiles.length);
    for (let i = 0; i < n; i++) {
      const box = boxes[i % boxes.length]!;
      const [x0, y0, x1, y1] = box.split(',').map(Number) as [number, number, number, number];
      specs.push({
        kind: 'exportImage',
        url: `${http}/server/rest/services/dem/ImageServer/exportImage?bbox=${box}&size=256,256&format=png&f=image`,
        check: png,
      });
      specs.push({
        kind: 'identify',
        url: `${http}/server/rest/services/dem/ImageServer/identify?geometry=${(x0 + x1) / 2},${(y0 + y1) / 2}&geometryType=esriGeometryPoint&f=json`,
        check: json,
      });
      specs.push({
        kind: 'token',
        url: `${http}/server/rest/services/secured/ImageServer?f=json&token=${encodeURIComponent(token)}`,
        headers: { referer: REFERER },
        check: json,
      });
      const [level, row, col] = tiles[i % tiles.length]!;
      specs.push({
        kind: 'GetMapTile',
        url: soapUrl,
        method: 'POST',
        headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '""' },
        body: tileEnvelope(level, row, col),
        check: soap,
      });
    }
    if (args.cold !== true) {
      // Build the cache: every tile of the mix drawn once, 4 requests at a time, before the clock starts.
      const t0 = performance.now();
      let next = 0;
      const drawOne = async (): Promise<void> => {
        for (let i = next++; i < tiles.length; i = next++) {
          const [level, row, col] = tiles[i]!;
          const res = await fetch(soapUrl, {
            method: 'POST',
            headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '""' },
            body: tileEnvelope(level, row, col),
          });
          const text = await res.text();
          if (res.status !== 200) throw new Error(`tile ${level}/${row}/${col}: HTTP ${res.status} ${text.slice(0, 300)}`);
        }
      };
      await Promise.all(Array.from({ length: 4 }, drawOne));
      log(`${tiles.length} map tiles drawn in ${((performance.now() - t0) / 1000).toFixed(1)} s before the run`);
    }
    const idle = server.memory();
    log(
      `rasterflow serve pid ${server.pid}; idle RSS ${((idle?.rss ?? 0) / MIB).toFixed(0)} MiB; ${CLIENTS} clients for ${SECONDS} s; ` +
        `${tiles.length} map tiles (levels 0-${LEVELS - 1})`,
    );
    let peak = 0;
    const overflowsBefore = listenOverflows();
    const result = await runLoad({
      urls: specs,
      concurrency: CLIENTS,
      requests: Number.MAX_SAFE_INTEGER,
      // Every client connects and sends one request before the clock starts (the first tiles are drawn then too).
      warmup: CLIENTS,
      durationMs: SECONDS * 1000,
      timeoutMs: 120_000,
      clientHeaders: (i) => ({ 'x-forwarded-for': clientAddress(i) }),
      onTick: () => {
        const m = server?.memory();
        if (m && m.rss > peak) peak = m.rss;
      },
    });
    const overflowsAfter = listenOverflows();
    const mem = server.memory();
    const warnings = server
      .stderr()
      .split('\n')
      .filter((l) => / (warn|error) /.test(l));
    const exit = await server.stop();
    server = undefined;
    const out = {
      when: new Date().toISOString(),
      clients: CLIENTS,
      seconds: SECONDS,
      settings: SETTINGS,
      clientAddresses: `distinct (X-Forwarded-For through a trusted proxy at 127.0.0.1): ${CLIENTS}`,
      mapTiles: tiles.length,
      mapTilesDrawnBefore: args.cold !== true,
      requests: result.requests,
      reqPerSec: Math.round(result.reqPerSec),
      p50Ms: Math.round(result.p50Ms),
      p99Ms: Math.round(result.p99Ms),
      maxMs: Math.round(result.maxMs),
      busy: result.busy,
      fiveHundreds: result.fiveHundreds,
      errors: result.errors,
      byKind: Object.fromEntries(Object.entries(result.byKind).map(([k, v]) => [k, rounded({ ...v })])),
      errorSamples: [...new Set([...result.errorSamples, ...samples])].slice(0, 8),
      retriedOnClosedConnection: result.retriedOnClosedConnection,
      peakRssMiB: Math.round(Math.max(peak, mem?.hwm ?? 0) / MIB),
      // Connections the kernel dropped from a full listen queue during the warm-up and the run (the machine's, all listeners).
      listenOverflows: overflowsBefore === undefined || overflowsAfter === undefined ? null : overflowsAfter - overflowsBefore,
      serverWarnings: warnings.length,
      serverWarningSamples: [...new Set(warnings.map((l) => l.slice(0, 300)))].slice(0, 5),
      serverExit: exit,
    };
    writeFileSync(OUT, `${JSON.stringify(out, null, 2)}\n`);
    log(JSON.stringify(out, null, 2));
    if (out.errors > 0 || out.fiveHundreds > 0 || exit !== 0) process.exitCode = 1;
  } finally {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();

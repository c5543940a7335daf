/**
 * The load client and the child server shared by `npm run bench:serve` (bench/serve/run.ts) and the
 * suite's load test (test/load.test.ts): C concurrent clients, each with its own keep-alive
 * connection (node:http), send a bounded list of GETs cycling over a URL list; every answer is
 * checked (status 200, the expected content type, a PNG signature) and timed from the request to the
 * last body byte. The server under test runs in a child process (`rasterflow serve` via tsx) so that
 * its memory is its own: peak RSS is the kernel's VmHWM of that process.
 *
 * Clients can be told apart by the server as clients behind a proxy are: `clientHeaders(i)` adds
 * headers (an `X-Forwarded-For`) to every request of client i. A check may answer `BUSY` for a
 * "server busy" answer (back-pressure): such answers are counted apart from errors. Figures are also
 * given per request kind (`RequestSpec.kind`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';

/** What a check answers for a "server busy" answer: expected back-pressure, not an error. */
export const BUSY = Symbol('busy');

/** Why an answer is wrong, `BUSY`, or undefined when it is the expected answer. */
export type Check = (status: number, contentType: string, body: Buffer) => string | typeof BUSY | undefined;

/** A request other than a plain GET: method, headers and body (a SOAP POST, a form). */
export interface RequestSpec {
  readonly url: string;
  /** The request's kind in LoadResult.byKind (default `GET` / the method). */
  readonly kind?: string;
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Checks this request's answer instead of LoadOptions.check. */
  readonly check?: Check;
}

export interface LoadOptions {
  /** The requests, in turn (request i sends urls[i % urls.length]); a string is a GET. */
  readonly urls: readonly (string | RequestSpec)[];
  /** Clients running at once; each keeps one connection open. */
  readonly concurrency: number;
  /** Requests counted (after the warm-up). */
  readonly requests: number;
  /** Requests sent first and not counted (default 2 × concurrency). */
  readonly warmup?: number;
  /** Per-request time limit in ms (default 60 s): a request over it is an error. */
  readonly timeoutMs?: number;
  /** Checks an answer; returns why it is wrong, BUSY, or undefined. Default: 200 + image/png + PNG signature. */
  readonly check?: Check;
  /** Headers every request of client `i` (0 .. concurrency - 1) carries, e.g. its `X-Forwarded-For`. */
  readonly clientHeaders?: (client: number) => Readonly<Record<string, string>>;
  /** Stop sending counted requests after this long (ms); `requests` is then an upper bound. */
  readonly durationMs?: number;
  /** Called every ~50 ms while the counted requests run (e.g. to sample the server's RSS). */
  readonly onTick?: () => void;
}

/** The figures of one kind of request. */
export interface KindResult {
  readonly requests: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Answers the check called BUSY (back-pressure). */
  readonly busy: number;
  /** Of those, answers with an HTTP status >= 500 (a SOAP "server busy" fault is HTTP 500 by the SOAP 1.1 rule). */
  readonly busyWith5xx: number;
  /** Answers with an HTTP status >= 500 that are not BUSY. */
  readonly fiveHundreds: number;
  /** Wrong answers and failed requests (the 5xx among them). */
  readonly errors: number;
}

export interface LoadResult {
  readonly requests: number;
  readonly concurrency: number;
  /** Wrong answers and failed requests; BUSY answers are not errors. */
  readonly errors: number;
  /** BUSY answers (back-pressure). */
  readonly busy: number;
  /** Answers with an HTTP status >= 500 that are not BUSY. */
  readonly fiveHundreds: number;
  /** The figures per RequestSpec.kind. */
  readonly byKind: Readonly<Record<string, KindResult>>;
  /** Up to 5 distinct error descriptions. */
  readonly errorSamples: readonly string[];
  /** Requests sent a second time because the kept-alive connection they went out on had been closed by the server (not errors). */
  readonly retriedOnClosedConnection: number;
  /** Up to 5 distinct reasons of those first attempts. */
  readonly retriedSamples: readonly string[];
  readonly wallMs: number;
  readonly reqPerSec: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly meanBytes: number;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function checkPng(status: number, contentType: string, body: Buffer): string | undefined {
  if (status !== 200) return `HTTP ${status}: ${body.subarray(0, 200).toString('utf8')}`;
  if (!contentType.startsWith('image/png')) return `content type ${contentType}: ${body.subarray(0, 200).toString('utf8')}`;
  if (body.length < 8 || !body.subarray(0, 8).equals(PNG_SIGNATURE)) return 'not a PNG';
  return undefined;
}

/** The nearest-rank percentile of sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

interface One {
  readonly kind: string;
  readonly ms: number;
  readonly bytes: number;
  /** HTTP status (0: no answer). */
  readonly status: number;
  readonly busy?: boolean;
  readonly error?: string;
  /** Why the first attempt failed, when it failed before any answer on a kept-alive connection the server had closed and was sent again. */
  readonly retried?: string;
}

function getOnce(
  spec: string | RequestSpec,
  agent: Agent,
  timeoutMs: number,
  defaultCheck: Check,
  clientHeaders: Readonly<Record<string, string>>,
): Promise<One & { staleSocket?: boolean }> {
  const t0 = performance.now();
  const url = typeof spec === 'string' ? spec : spec.url;
  const check = (typeof spec === 'string' ? undefined : spec.check) ?? defaultCheck;
  const method = typeof spec === 'string' ? 'GET' : (spec.method ?? 'GET');
  const kind = typeof spec === 'string' ? 'GET' : (spec.kind ?? method);
  const headers = typeof spec === 'string' ? { ...clientHeaders } : { ...clientHeaders, ...spec.headers };
  return new Promise((resolve) => {
    let answered = false;
    const req = request(url, { agent, method, headers }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        const status = res.statusCode ?? 0;
        const verdict = check(status, String(res.headers['content-type'] ?? ''), body);
        const ms = performance.now() - t0;
        if (verdict === BUSY) resolve({ kind, ms, bytes: body.length, status, busy: true });
        else resolve({ kind, ms, bytes: body.length, status, ...(verdict !== undefined ? { error: verdict } : {}) });
      });
      res.on('error', (e) =>
        resolve({ kind, ms: performance.now() - t0, bytes: 0, status: res.statusCode ?? 0, error: `response: ${e.message}` }),
      );
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)));
    req.on('error', (e: NodeJS.ErrnoException) => {
      const ms = performance.now() - t0;
      // A kept-alive connection that the server closed while the request was on its way: the
      // request was never read. Clients (browsers, Node's own docs) send it again on a new connection.
      const staleSocket = req.reusedSocket && !answered && (e.code === 'ECONNRESET' || e.code === 'EPIPE');
      resolve({
        kind,
        ms,
        bytes: 0,
        status: 0,
        error: `request: ${e.code ?? e.message} after ${ms.toFixed(0)} ms${req.reusedSocket ? ' (reused connection)' : ''}`,
        ...(staleSocket ? { staleSocket } : {}),
      });
    });
    req.end(typeof spec === 'string' ? undefined : spec.body);
  });
}

async function get(
  url: string | RequestSpec,
  agent: Agent,
  timeoutMs: number,
  check: Check,
  headers: Readonly<Record<string, string>>,
): Promise<One> {
  const first = await getOnce(url, agent, timeoutMs, check, headers);
  if (!first.staleSocket) return first;
  const again = await getOnce(url, agent, timeoutMs, check, headers);
  return { ...again, ms: first.ms + again.ms, retried: first.error ?? 'closed' };
}

async function batch(
  urls: readonly (string | RequestSpec)[],
  concurrency: number,
  count: number,
  agent: Agent,
  timeoutMs: number,
  check: Check,
  clientHeaders: LoadOptions['clientHeaders'],
  deadline = Infinity,
): Promise<One[]> {
  const out: One[] = [];
  let next = 0;
  const worker = async (client: number): Promise<void> => {
    const headers = clientHeaders?.(client) ?? {};
    for (let i = next++; i < count && performance.now() < deadline; i = next++)
      out.push(await get(urls[i % urls.length]!, agent, timeoutMs, check, headers));
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, (_, client) => worker(client)));
  return out;
}

/** Runs the load: warm-up (not counted), then `requests` requests at `concurrency`. */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { urls, concurrency, requests } = options;
  if (urls.length === 0) throw new Error('runLoad: no URLs');
  const timeoutMs = options.timeoutMs ?? 60_000;
  const check = options.check ?? checkPng;
  // One keep-alive connection per client, as a browser or a tile client keeps them.
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });
  try {
    await batch(urls, concurrency, options.warmup ?? 2 * concurrency, agent, timeoutMs, check, options.clientHeaders);
    const tick = options.onTick ? setInterval(options.onTick, 50) : undefined;
    const t0 = performance.now();
    const deadline = options.durationMs === undefined ? Infinity : t0 + options.durationMs;
    const results = await batch(urls, concurrency, requests, agent, timeoutMs, check, options.clientHeaders, deadline);
    const wallMs = performance.now() - t0;
    if (tick) clearInterval(tick);
    options.onTick?.();
    const lat = results.map((r) => r.ms).sort((a, b) => a - b);
    const failed = results.filter((r) => r.error !== undefined);
    const kinds = new Map<string, One[]>();
    for (const r of results) {
      const list = kinds.get(r.kind);
      if (list) list.push(r);
      else kinds.set(r.kind, [r]);
    }
    const byKind: Record<string, KindResult> = {};
    for (const [kind, list] of [...kinds].sort(([a], [b]) => a.localeCompare(b))) {
      const ms = list.map((r) => r.ms).sort((a, b) => a - b);
      byKind[kind] = {
        requests: list.length,
        p50Ms: percentile(ms, 50),
        p99Ms: percentile(ms, 99),
        maxMs: ms[ms.length - 1] ?? Number.NaN,
        busy: list.filter((r) => r.busy).length,
        busyWith5xx: list.filter((r) => r.busy && r.status >= 500).length,
        fiveHundreds: list.filter((r) => !r.busy && r.status >= 500).length,
        errors: list.filter((r) => r.error !== undefined).length,
      };
    }
    return {
      requests: results.length,
      concurrency,
      errors: failed.length,
      busy: results.filter((r) => r.busy).length,
      fiveHundreds: results.filter((r) => !r.busy && r.status >= 500).length,
      byKind,
      errorSamples: [...new Set(failed.map((r) => r.error!))].slice(0, 5),
      retriedOnClosedConnection: results.filter((r) => r.retried !== undefined).length,
      retriedSamples: [...new Set(results.flatMap((r) => (r.retried === undefined ? [] : [r.retried])))].slice(0, 5),
      wallMs,
      reqPerSec: (results.length / wallMs) * 1000,
      p50Ms: percentile(lat, 50),
      p95Ms: percentile(lat, 95),
      p99Ms: percentile(lat, 99),
      maxMs: lat[lat.length - 1] ?? Number.NaN,
      meanBytes: Math.round(results.reduce((s, r) => s + r.bytes, 0) / Math.max(1, results.length)),
    };
  } finally {
    agent.destroy();
  }
}

/** VmRSS and VmHWM (peak RSS) of a process in bytes, from /proc (undefined when it is gone or not Linux). */
export function memoryOf(pid: number): { rss: number; hwm: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const kb = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? Number.NaN) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** Splits an extent into n × n equal cells, row by row from the top left, as `xmin,ymin,xmax,ymax` strings. */
export function gridBboxes(extent: readonly [number, number, number, number], n: number): string[] {
  const [x0, y0, x1, y1] = extent;
  const dx = (x1 - x0) / n;
  const dy = (y1 - y0) / n;
  const out: string[] = [];
  for (let j = n - 1; j >= 0; j--) {
    for (let i = 0; i < n; i++)
      out.push([x0 + i * dx, y0 + j * dy, x0 + (i + 1) * dx, y0 + (j + 1) * dy].map((v) => v.toFixed(1)).join(','));
  }
  return out;
}

export interface ServeChild {
  readonly proc: ChildProcess;
  readonly pid: number;
  /** `http://127.0.0.1:<port>` (the plain HTTP listener; no path). */
  readonly httpOrigin: string;
  /** `https://127.0.0.1:<port>` */
  readonly httpsOrigin: string;
  /** Everything the child wrote to stderr, minus the per-request log lines. */
  stderr(): string;
  memory(): { rss: number; hwm: number } | undefined;
  /** SIGTERM (the server drains), SIGKILL after 15 s; resolves with the exit code or signal. */
  stop(): Promise<number | string>;
}

const ROOT = new URL('../..', import.meta.url).pathname;

/**
 * Starts `rasterflow serve` (src/cli/main.ts through tsx) in a child process on loopback: HTTPS and
 * plain HTTP on free ports, the data folder `dataDir`, the config object written to
 * `<dataDir>/config.json`. Resolves once both listeners are up.
 */
export async function startServeChild(options: {
  dataDir: string;
  config: unknown;
  env?: NodeJS.ProcessEnv;
  /** Extra node flags (e.g. `--max-old-space-size=...`). */
  nodeArgs?: readonly string[];
  /** Kills the child after this long (default 10 min). */
  limitMs?: number;
  /** The program, relative to the repository root (default src/cli/main.ts; tests pass an entry that adds test routes). */
  entry?: string;
}): Promise<ServeChild> {
  const configFile = join(options.dataDir, 'config.json');
  writeFileSync(configFile, JSON.stringify(options.config, null, 2));
  const proc = spawn(
    process.execPath,
    [
      ...(options.nodeArgs ?? []),
      '--import',
      'tsx',
      join(ROOT, options.entry ?? 'src/cli/main.ts'),
      'serve',
      '--port',
      '0',
      '--http-port',
      '0',
      '--host',
      '127.0.0.1',
      '--data',
      options.dataDir,
      '--config',
      configFile,
    ],
    { cwd: ROOT, env: { ...process.env, ...options.env }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  let partial = '';
  // The request log is one line per request: keep the rest (start-up lines, warnings, errors).
  proc.stderr!.on('data', (c: Buffer) => {
    const lines = (partial + c.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (!/ info request /.test(line)) err += `${line}\n`;
    if (err.length > 1_000_000) err = err.slice(-500_000);
  });
  const guard = setTimeout(() => proc.kill('SIGKILL'), options.limitMs ?? 600_000);
  const exited = new Promise<number | string>((resolve) =>
    proc.on('exit', (code, signal) => {
      clearTimeout(guard);
      resolve(code ?? signal ?? -1);
    }),
  );
  const origins = await new Promise<{ https: string; http: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`rasterflow serve did not start in 60 s:\n${err}`)), 60_000);
    const look = (): void => {
      const found = [...err.matchAll(/services: (https?:\/\/[^/\s]+)\/server\/rest\/services/g)].map((m) => m[1]!);
      const https = found.find((u) => u.startsWith('https:'));
      const http = found.find((u) => u.startsWith('http:'));
      if (https && http) {
        clearTimeout(timer);
        proc.stderr!.off('data', look);
        resolve({ https, http });
      }
    };
    proc.stderr!.on('data', look);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`rasterflow serve exited (${code}) before listening:\n${err}`));
    });
  });
  return {
    proc,
    pid: proc.pid!,
    httpOrigin: origins.http,
    httpsOrigin: origins.https,
    stderr: () => err,
    memory: () => memoryOf(proc.pid!),
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      const kill = setTimeout(() => proc.kill('SIGKILL'), 15_000);
      const code = await exited;
      clearTimeout(kill);
      return code;
    },
  };
}

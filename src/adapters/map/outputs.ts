/**
 * Map images returned by URL (ImageReturnType geoImageReturnURL; protocols.md §5.5, §5.9): written
 * under `<dataDir>/output/` with unguessable names (128 random bits, base64url), served at
 * `/server/rest/directories/output/<name>` on the server's origin until they expire.
 *
 * - Expiry: `ttlMs` after writing (default 10 minutes, `RASTERFLOW_MAP_OUTPUT_MINUTES` overrides);
 *   expired files are swept whenever an output is written or asked for (Decision: no timer, so an
 *   idle server does no work and tests drive expiry with the site's clock).
 * - Bounded: at most `maxBytes` (default 512 MiB) and `maxFiles` (default 5000) at once, the oldest
 *   removed first.
 * - Secured services: the record remembers that the image needs a token; the URL carries the
 *   caller's token (`?token=`) and the route checks it as any services endpoint does
 *   (`authenticate` with the services audiences). Anonymous services' images are served to anyone
 *   holding the URL (the name is the capability), as the vendor's output directory is.
 * - Decision: the index of outputs lives in memory; files a previous process left in the folder
 *   cannot be vouched for (which service, secured or not) and are removed on first use.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EngineError } from '../../core/errors.js';
import { authenticate } from '../auth.js';
import { servicesAudiences } from '../image/access.js';
import { errorResponse, readParams, requireHttps, type Route } from '../rest.js';
import { fromTrustedProxy, type SiteDeps } from '../site.js';

export const OUTPUT_PATH = '/server/rest/directories/output';
export const DEFAULT_OUTPUT_TTL_MS = 10 * 60_000;
export const DEFAULT_OUTPUT_MAX_BYTES = 512 * 1024 * 1024;
export const DEFAULT_OUTPUT_MAX_FILES = 5000;

const EXT_TYPES: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  gif: 'image/gif',
  bmp: 'image/bmp',
  tif: 'image/tiff',
  pdf: 'application/pdf',
  svg: 'image/svg+xml',
  // Query answers (QueryResult …AsURL formats).
  json: 'application/json',
  kml: 'application/vnd.google-earth.kml+xml',
  amf: 'application/x-amf',
};

/** Types shown in the browser (SVG under the CSP below); any other output (an attachment: HTML, scripts...) is served as a download. */
const INLINE = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/bmp',
  'image/tiff',
  'image/svg+xml',
  'application/pdf',
  'application/json',
  'application/vnd.google-earth.kml+xml',
  'application/x-amf',
]);

const NAME = /^[A-Za-z0-9_-]{22}\.[a-z0-9]{1,8}$/;

export interface OutputRecord {
  readonly name: string;
  readonly contentType: string;
  readonly size: number;
  readonly expires: number;
  /** serviceKey of the service that drew it. */
  readonly service: string;
  /** Served only with a valid token. */
  readonly secured: boolean;
}

export interface MapOutputsOptions {
  readonly ttlMs?: number;
  readonly maxBytes?: number;
  readonly maxFiles?: number;
}

export interface MapOutputs {
  readonly folder: string;
  /**
   * Writes `bytes` and returns the record (its `name` is the file's). `contentType` (attachments)
   * overrides the extension's type; `ext` is then any 1-8 lowercase letters or digits.
   */
  put(bytes: Uint8Array, ext: string, owner: { service: string; secured: boolean }, contentType?: string): Promise<OutputRecord>;
  /** The record and bytes of `name`, undefined when unknown or expired. */
  get(name: string): Promise<{ record: OutputRecord; bytes: Uint8Array } | undefined>;
  /** Removes expired outputs. */
  sweep(): Promise<void>;
}

function envTtl(): number | undefined {
  const v = process.env['RASTERFLOW_MAP_OUTPUT_MINUTES'];
  const n = v === undefined || v === '' ? Number.NaN : Number(v);
  return n > 0 ? n * 60_000 : undefined;
}

/** The outputs of a data folder (`deps.config.dataDir/output`), with `deps.clock` as time. */
export function createMapOutputs(deps: Pick<SiteDeps, 'config' | 'clock' | 'log'>, options: MapOutputsOptions = {}): MapOutputs {
  const folder = join(deps.config.dataDir, 'output');
  const ttl = options.ttlMs ?? envTtl() ?? DEFAULT_OUTPUT_TTL_MS;
  const maxBytes = options.maxBytes ?? DEFAULT_OUTPUT_MAX_BYTES;
  const maxFiles = options.maxFiles ?? DEFAULT_OUTPUT_MAX_FILES;
  /** Insertion order = creation order = expiry order (one ttl). */
  const index = new Map<string, OutputRecord>();
  let total = 0;
  let ready: Promise<void> | undefined;
  const prepare = (): Promise<void> =>
    (ready ??= (async () => {
      await mkdir(folder, { recursive: true });
      for (const f of await readdir(folder)) if (!index.has(f)) await rm(join(folder, f), { force: true, recursive: true });
    })());
  const drop = async (name: string): Promise<void> => {
    const r = index.get(name);
    if (!r) return;
    index.delete(name);
    total -= r.size;
    await rm(join(folder, name), { force: true });
  };
  const sweep = async (): Promise<void> => {
    const now = deps.clock.now();
    for (const [name, r] of index) {
      if (r.expires > now) break;
      await drop(name);
    }
  };
  return {
    folder,
    async put(bytes, ext, owner, contentType) {
      const type = contentType ?? EXT_TYPES[ext];
      if (type === undefined || !/^[a-z0-9]{1,8}$/.test(ext))
        throw new EngineError('INTERNAL', `no content type for output extension '${ext}'`);
      await prepare();
      await sweep();
      while (index.size > 0 && (total + bytes.byteLength > maxBytes || index.size >= maxFiles)) await drop(index.keys().next().value!);
      const name = `${randomBytes(16).toString('base64url')}.${ext}`;
      await writeFile(join(folder, name), bytes);
      const record: OutputRecord = {
        name,
        contentType: type,
        size: bytes.byteLength,
        expires: deps.clock.now() + ttl,
        service: owner.service,
        secured: owner.secured,
      };
      index.set(name, record);
      total += bytes.byteLength;
      return record;
    },
    async get(name) {
      await sweep();
      const record = index.get(name);
      if (!record) return undefined;
      try {
        return { record, bytes: new Uint8Array(await readFile(join(folder, name))) };
      } catch (e) {
        deps.log.warn('map output file missing', { name, error: String(e) });
        await drop(name);
        return undefined;
      }
    },
    sweep,
  };
}

const shared = new Map<string, MapOutputs>();

/** The outputs every operation of a site shares (one per data folder). The first caller's options win. */
export function mapOutputsOf(deps: Pick<SiteDeps, 'config' | 'clock' | 'log'>, options: MapOutputsOptions = {}): MapOutputs {
  let o = shared.get(deps.config.dataDir);
  if (!o) {
    o = createMapOutputs(deps, options);
    shared.set(deps.config.dataDir, o);
  }
  return o;
}

/** The public URL of an output; a secured service's carries the caller's token. */
export function outputUrl(origin: string, name: string, token?: string): string {
  return `${origin}${OUTPUT_PATH}/${name}${token ? `?token=${encodeURIComponent(token)}` : ''}`;
}

const gone = (): EngineError =>
  new EngineError('NOT_FOUND', 'no such output', { details: ['The requested output does not exist or has expired.'] });

/** `GET /server/rest/directories/output/:name`: the image, `Cache-Control: private`; NOT_FOUND when expired or unknown. */
export function mapOutputRoutes(
  deps: Pick<SiteDeps, 'store' | 'keys' | 'config' | 'clock' | 'log'>,
  options: MapOutputsOptions = {},
): Route[] {
  const serve = async (req: Request): Promise<Response> => {
    requireHttps(req, { allSSL: deps.config.allSSL, trustProxy: fromTrustedProxy(req, deps.config) });
    const path = new URL(req.url).pathname;
    const name = decodeURIComponent(path.slice(path.lastIndexOf('/') + 1));
    if (!NAME.test(name)) throw gone();
    const outputs = mapOutputsOf(deps, options);
    const found = await outputs.get(name);
    if (!found) throw gone();
    if (found.record.secured) {
      const params = await readParams(req);
      await authenticate(deps, req, { audiences: servicesAudiences(req, deps), shape: 'sharing', params });
    }
    return new Response(found.bytes, {
      headers: {
        'content-type': found.record.contentType,
        'cache-control': 'private',
        'content-length': String(found.bytes.byteLength),
        'x-content-type-options': 'nosniff',
        // SVG outputs are documents: nothing in them may run or load.
        'content-security-policy': "default-src 'none'; img-src data:; style-src 'unsafe-inline'",
        // Files other than images and query answers (attachments of any type) are downloaded, never rendered on this origin.
        ...(INLINE.has(found.record.contentType) ? {} : { 'content-disposition': 'attachment' }),
      },
    });
  };
  // Decision: errors are JSON unless the request asks for another f; an unknown or expired output is
  // also HTTP 404 (an output is a file: <img> elements and caches must see that it is gone).
  const handler = async (req: Request): Promise<Response> => {
    try {
      return await serve(req);
    } catch (e) {
      const res = errorResponse('sharing', e, new URL(req.url).searchParams.get('f') ?? 'json');
      if (e instanceof EngineError && e.code === 'NOT_FOUND') return new Response(res.body, { status: 404, headers: res.headers });
      return res;
    }
  };
  return [{ method: 'GET', path: `${OUTPUT_PATH}/:name`, handler }];
}

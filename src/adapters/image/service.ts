/**
 * Image services (issue 18): an ImageServer record of the site store opened as a raster the
 * operations can render. `imageServicesOf(deps)` is the one registry per site that every image
 * operation shares (service info and exportImage here; identify, histograms, legend and tiles in
 * the sibling modules): it opens each service's raster once, with its RasterInfo and real band
 * statistics, parses its default rendering rule and published templates, and keeps all of it until
 * the service's record changes (compared as JSON on every lookup) or the service is deleted.
 *
 * It also holds the per-site render semaphore (`renderSlot`, limits.ts `createFairSemaphore`): at
 * most `maxRenders` renders run at once whatever the number of clients, at most `maxQueuedRenders`
 * wait, at most `maxRendersPerClient` per client run or wait, and waiting clients are served
 * round-robin, so memory does not grow with concurrency and a busy client does not starve others.
 */
import { createHash } from 'node:crypto';
import { EngineError } from '../../core/errors.js';
import type { BandStatistics, RasterInfo } from '../../core/pixel-block.js';
import { PIXEL_TYPE_INFO } from '../../core/pixel-type.js';
import { registry } from '../../functions/index.js';
import { parseRule } from '../../rule/parse.js';
import { createTemplates, type TemplateStore } from '../../rule/templates.js';
import { computeSourceStatistics } from '../../io/info.js';
import { openRaster, type RasterSource } from '../../io/source.js';
import { clientKey, createFairSemaphore, type SemaphoreStats, type Slot } from '../limits.js';
import { limitsOf, serviceKey, type ServiceRecord, type SiteConfig, type SiteDeps, type SiteLimits, SITE_LIMITS } from '../site.js';

// ---------------------------------------------------------------------------------------------
// Limits

/** The vendor's defaults for an image service: maxImageWidth x maxImageHeight 4100 x 15000. */
export const DEFAULT_MAX_IMAGE_WIDTH = 4100;
export const DEFAULT_MAX_IMAGE_HEIGHT = 15000;
/** The vendor's default maxRecordCount of an image service (catalog queries). */
export const DEFAULT_MAX_RECORD_COUNT = 1000;
/**
 * Renders running at once per site: the site's `maxRenders` (SITE_LIMITS: 4, as 2 cores here; a
 * render is CPU-bound in the kernels and the encoders, so more only adds memory).
 * `RASTERFLOW_MAX_RENDERS` overrides the setting (the load bench).
 */
export const DEFAULT_MAX_CONCURRENT_RENDERS = SITE_LIMITS.maxRenders;
/** Requests waiting for a render slot beyond which the service answers "busy": the site's `maxQueuedRenders`. */
export const DEFAULT_MAX_QUEUED_RENDERS = SITE_LIMITS.maxQueuedRenders;
/**
 * Sources whose statistics are computed exactly (every pixel, once) when the file carries none and
 * has no overviews: up to 2^26 pixels (8192 x 8192). Larger ones are sampled (gdalinfo -approx_stats).
 */
const EXACT_STATISTICS_PIXELS = 2 ** 26;

// ---------------------------------------------------------------------------------------------
// Published templates

/** A raster function template published by a service (`properties.rasterFunctionTemplates[i]`). */
export interface PublishedTemplate {
  readonly name: string;
  readonly description: string;
  readonly help: string;
  /** The rule as written (short or long form). */
  readonly rule: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads `rasterFunctionTemplates`: each entry `{name, description?, help?, rule}`, or a rule object
 * that carries its own `name` (`{name, rasterFunction, rasterFunctionArguments, ...}`). Decision:
 * both spellings are accepted, since the vendor's template files put the name beside the function.
 */
function parseTemplates(value: unknown, at: string): PublishedTemplate[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw invalidProperty(at, `'rasterFunctionTemplates' must be an array of templates.`);
  const seen = new Set<string>();
  return value.map((entry, i) => {
    if (!isObject(entry) || typeof entry['name'] !== 'string' || entry['name'].trim() === '') {
      throw invalidProperty(`${at}[${i}]`, `'rasterFunctionTemplates[${i}]' must be an object with a 'name'.`);
    }
    const name = entry['name'].trim();
    if (seen.has(name.toLowerCase())) throw invalidProperty(`${at}[${i}]`, `The template name '${name}' is published twice.`);
    seen.add(name.toLowerCase());
    const { name: _n, description, help, rule: explicit, ...rest } = entry;
    const rule = explicit ?? rest;
    const parsed = parseRule(rule, `${at}[${i}]`);
    if (parsed.issues.length > 0) {
      throw invalidProperty(`${at}[${i}]`, `The template '${name}' is not a valid rendering rule: ${parsed.issues[0]!.message}`);
    }
    return {
      name,
      description: typeof description === 'string' ? description : '',
      help: typeof help === 'string' ? help : typeof description === 'string' ? description : '',
      rule,
    };
  });
}

function invalidProperty(path: string, detail: string): EngineError {
  return new EngineError('INVALID_ARGUMENT', detail, { path, details: [detail] });
}

// ---------------------------------------------------------------------------------------------
// Opened services

/** What an image service's `properties` say, checked. */
export interface ImageServiceSettings {
  /** GeoTIFF/COG path or URL. */
  readonly path: string;
  /** The default rendering rule (applied when a request names none), as written. */
  readonly renderingRule?: unknown;
  readonly templates: readonly PublishedTemplate[];
  /** Requests without a token are served (default false: 499 Token Required). */
  readonly anonymous: boolean;
  readonly maxImageWidth: number;
  readonly maxImageHeight: number;
  readonly maxRecordCount: number;
  /** Text of `serviceDescription` (the record's description, else `properties.serviceDescription`). */
  readonly serviceDescription: string;
  readonly copyrightText: string;
}

function positiveInt(v: unknown, fallback: number, path: string, name: string): number {
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw invalidProperty(path, `'${name}' must be a whole number from 1.`);
  return v;
}

/** Checks the `properties` of an ImageServer record (errors name `service.properties.<name>`). */
export function imageServiceSettings(record: Pick<ServiceRecord, 'properties' | 'description'>): ImageServiceSettings {
  const p = record.properties;
  const at = (k: string): string => `service.properties.${k}`;
  const path = p['path'];
  if (typeof path !== 'string' || path.trim() === '') {
    throw invalidProperty(at('path'), `An image service needs 'properties.path': the GeoTIFF/COG path or URL of its raster.`);
  }
  const rule = p['renderingRule'];
  if (rule !== undefined) {
    const parsed = parseRule(rule, at('renderingRule'));
    if (parsed.issues.length > 0) throw invalidProperty(at('renderingRule'), `'renderingRule' is not valid: ${parsed.issues[0]!.message}`);
  }
  const anonymous = p['anonymous'];
  if (anonymous !== undefined && typeof anonymous !== 'boolean')
    throw invalidProperty(at('anonymous'), `'anonymous' must be true or false.`);
  const text = (k: string): string => (typeof p[k] === 'string' ? (p[k] as string) : '');
  return {
    path,
    ...(rule === undefined ? {} : { renderingRule: rule }),
    templates: parseTemplates(p['rasterFunctionTemplates'], at('rasterFunctionTemplates')),
    anonymous: anonymous === true,
    maxImageWidth: positiveInt(p['maxImageWidth'], DEFAULT_MAX_IMAGE_WIDTH, at('maxImageWidth'), 'maxImageWidth'),
    maxImageHeight: positiveInt(p['maxImageHeight'], DEFAULT_MAX_IMAGE_HEIGHT, at('maxImageHeight'), 'maxImageHeight'),
    maxRecordCount: positiveInt(p['maxRecordCount'], DEFAULT_MAX_RECORD_COUNT, at('maxRecordCount'), 'maxRecordCount'),
    serviceDescription: record.description ?? text('serviceDescription'),
    copyrightText: text('copyrightText'),
  };
}

/** An image service opened for rendering. Valid until its record changes; never close its source yourself. */
export interface OpenedImageService {
  readonly record: ServiceRecord;
  /** `folder/name` or `name` (the catalogue's name). */
  readonly name: string;
  /** serviceKey: `folder/name.ImageServer`. */
  readonly key: string;
  /**
   * A short hash of the record's JSON: changes whenever the service does. Caches keyed by a
   * service (tiles, held exportImage results) put it in their keys.
   */
  readonly version: string;
  readonly settings: ImageServiceSettings;
  /** The raster, open; shared by every request of this service version. */
  readonly source: RasterSource;
  /** The source's info with `statistics` filled in (one per band). */
  readonly info: RasterInfo;
  /** Per band: from the file's metadata, else computed once (see `statisticsSource`). */
  readonly statistics: readonly (BandStatistics | undefined)[];
  readonly statisticsSource: 'file' | 'exact' | 'approximate' | 'none';
  /** The published templates, registered for rule resolution (`{"rasterFunction": "<template name>"}`). */
  readonly templates: TemplateStore;
}

/** Statistics of a freshly opened source: the file's, else exact (small files), else approximate (overviews, samples). */
async function statisticsOfSource(
  source: RasterSource,
): Promise<{ statistics: (BandStatistics | undefined)[]; from: OpenedImageService['statisticsSource'] }> {
  const info = source.info;
  if (info.statistics && info.statistics.length === info.bandCount) return { statistics: [...info.statistics], from: 'file' };
  if (PIXEL_TYPE_INFO[info.pixelType].complex) return { statistics: info.statistics ? [...info.statistics] : [], from: 'none' };
  const hasOverviews = (source.overviews?.length ?? 0) > 0;
  if (!hasOverviews && info.width * info.height <= EXACT_STATISTICS_PIXELS) {
    const exact = await computeSourceStatistics(source);
    return { statistics: exact.map((s) => s ?? undefined), from: 'exact' };
  }
  if (source.approximateStatistics) return { statistics: await source.approximateStatistics(), from: 'approximate' };
  const exact = await computeSourceStatistics(source);
  return { statistics: exact.map((s) => s ?? undefined), from: 'exact' };
}

/**
 * Open a raster as an image service opens it (shared source, statistics, templates). `json` is the
 * record's JSON (its hash is the version). The map service opens its raster layers with this.
 */
export async function openImageService(record: ServiceRecord, json: string = JSON.stringify(record)): Promise<OpenedImageService> {
  const settings = imageServiceSettings(record);
  const templates = createTemplates();
  for (const t of settings.templates) templates.register(t.name, t.rule, { description: t.description });
  const source = await openRaster(settings.path, { id: `service:${serviceKey(record)}` });
  try {
    const { statistics, from } = await statisticsOfSource(source);
    const complete = statistics.length === source.info.bandCount && statistics.every((s) => s !== undefined);
    const info: RasterInfo = complete ? { ...source.info, statistics: statistics as BandStatistics[] } : source.info;
    return {
      record,
      name: `${record.folder ? `${record.folder}/` : ''}${record.serviceName}`,
      key: serviceKey(record),
      version: createHash('sha256').update(json).digest('base64url').slice(0, 16),
      settings,
      source,
      info,
      statistics,
      statisticsSource: from,
      templates,
    };
  } catch (e) {
    await source.close().catch(() => undefined);
    throw e;
  }
}

// ---------------------------------------------------------------------------------------------
// The per-site registry

export interface ImageServicesOptions {
  /** Renders at once (default RASTERFLOW_MAX_RENDERS, else the site's maxRenders). */
  readonly maxConcurrentRenders?: number;
  /** Waiting renders beyond which requests get SERVER_BUSY (default the site's maxQueuedRenders). */
  readonly maxQueuedRenders?: number;
  /** Renders running or waiting per client beyond which it gets SERVER_BUSY (default the site's maxRendersPerClient). */
  readonly maxRendersPerClient?: number;
}

/** A render slot: call `release()` once when the render is over. */
export type RenderSlot = Slot;

export interface ImageServices {
  /**
   * The ImageServer service `folder/name` opened, or undefined when the store has none. Reopened
   * when its record changed since it was opened. A broken raster is an IO_ERROR (retried next call).
   */
  open(folder: string, name: string): Promise<OpenedImageService | undefined>;
  /**
   * Wait for a render slot, counted against `client` (a `clientKey`; a render that names none is a
   * client of its own). Slots free up round-robin across clients. Rejects with SERVER_BUSY
   * (maxQueuedRenders, maxRendersPerClient) at once, and with the signal's reason (TIMEOUT or
   * ABORTED) when `signal` aborts while waiting.
   */
  renderSlot(signal?: AbortSignal, client?: string): Promise<RenderSlot>;
  /** Renders running now and the most that ever ran at once (tests, metrics). */
  renderStats(): SemaphoreStats;
  /** The site's limits this registry applies (rule caps, time budget, renders). */
  readonly limits: SiteLimits;
  /** The client a request's renders count against: its verified caller, else its address (clientKey). */
  clientOf(req: Request, caller?: { readonly username: string }): string;
  /** Close every opened raster (server shutdown). */
  close(): Promise<void>;
}

interface Entry {
  readonly json: string;
  readonly opened: Promise<OpenedImageService>;
}

function envLimit(): number | undefined {
  const v = process.env['RASTERFLOW_MAX_RENDERS'];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  return Number.isInteger(n) && n >= 1 ? n : undefined;
}

/** What a registry is given: the store and log, and the site's config for its limits and client addresses. */
export type ImageServicesDeps = Pick<SiteDeps, 'store' | 'log'> & { readonly config?: SiteConfig };

/** A registry over `deps.store`. Most callers want `imageServicesOf(deps)`, the shared one. */
export function createImageServices(deps: ImageServicesDeps, options: ImageServicesOptions = {}): ImageServices {
  const cache = new Map<string, Entry>();
  const site = limitsOf(deps.config);
  const maxRenders = options.maxConcurrentRenders ?? envLimit() ?? site.maxRenders;
  const limits: SiteLimits = {
    ...site,
    maxRenders,
    maxQueuedRenders: options.maxQueuedRenders ?? site.maxQueuedRenders,
    maxRendersPerClient: options.maxRendersPerClient ?? site.maxRendersPerClient,
  };
  let unnamed = 0;
  const slots = createFairSemaphore({
    maxRunning: maxRenders,
    maxQueued: limits.maxQueuedRenders,
    maxPerClient: limits.maxRendersPerClient,
  });

  const retire = (entry: Entry): void => {
    // Requests still rendering with the old source hold it through their closure; close it a
    // little later so they can finish (a closed local file would fail their reads).
    void entry.opened.then((s) => setTimeout(() => void s.source.close().catch(() => undefined), 60_000).unref()).catch(() => undefined);
  };

  return {
    async open(folder, name) {
      const key = serviceKey({ folder, serviceName: name, type: 'ImageServer' });
      const record = await deps.store.getService(key);
      const cached = cache.get(key);
      if (!record || record.type !== 'ImageServer') {
        if (cached) {
          cache.delete(key);
          retire(cached);
        }
        return undefined;
      }
      const json = JSON.stringify(record);
      if (cached && cached.json === json) return cached.opened;
      if (cached) retire(cached);
      const opened = openImageService(record, json);
      const entry: Entry = { json, opened };
      cache.set(key, entry);
      opened.catch((e: unknown) => {
        // Not cached: the next request tries again (the file may be back).
        if (cache.get(key) === entry) cache.delete(key);
        deps.log.warn('image service failed to open', { service: key, error: e instanceof Error ? e.message : String(e) });
      });
      return opened;
    },

    // Decision: a render that names no client (map drawing until its callers name theirs, the export
    // workers' own registries) is a client of its own: the server-wide limits apply, maxRendersPerClient not.
    renderSlot: (signal, client) => slots.acquire(client ?? `anonymous-render:${++unnamed}`, signal),

    renderStats: () => slots.stats(),

    limits,

    clientOf: (req, caller) => clientKey(req, { config: deps.config ?? { trustedProxies: [] } }, caller),

    async close() {
      const entries = [...cache.values()];
      cache.clear();
      await Promise.all(entries.map((e) => e.opened.then((s) => s.source.close()).catch(() => undefined)));
    },
  };
}

const shared = new WeakMap<object, ImageServices>();

/**
 * The registry every image operation of a site shares (one cache, one render semaphore), keyed by
 * the site's store. The first caller's options win.
 */
export function imageServicesOf(deps: ImageServicesDeps, options: ImageServicesOptions = {}): ImageServices {
  let s = shared.get(deps.store);
  if (!s) {
    s = createImageServices(deps, options);
    shared.set(deps.store, s);
  }
  return s;
}

/** Every function of the registry, as `rasterFunctionInfos` lists them (`{name, description, help}`). */
export function registryFunctionInfos(): { name: string; description: string; help: string }[] {
  return registry.list().map((f) => ({ name: f.name, description: f.summary, help: f.summary }));
}

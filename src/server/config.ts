/**
 * The `rasterflow serve --config FILE` file: site settings, the TLS certificate, the services to seed,
 * the federated servers and the site store (`store`: a postgres:// URL, as `--store`). Every problem
 * names the file and the JSON path of the value; unknown keys are errors with a did-you-mean.
 * Relative paths resolve against the config file's folder.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { combinedError, EngineError, type Issue } from '../core/errors.js';
import { closestSpelling } from '../graph/args.js';
import { imageServiceSettings } from '../adapters/image/service.js';
import { parseMapServiceProperties, withResolvedMapPaths } from '../adapters/map/config.js';
import { normaliseServerUrl, parseServiceDefinition, type ServiceRecord, type SiteConfig } from '../adapters/site.js';
import { isPostgresUrl, redactUrl } from './pg-store.js';

/** The settings a config file may give (the rest of SiteConfig comes from the host). */
export type ConfigSettings = Partial<Omit<SiteConfig, 'dataDir'>>;

export interface ServerConfig {
  readonly settings: ConfigSettings;
  /** Absolute paths of the PEM certificate (chain) and private key; absent -> self-signed. */
  readonly tls?: { readonly cert: string; readonly key: string };
  /** Services to create or replace at start-up (`created` is set when they are stored). */
  readonly services: readonly Omit<ServiceRecord, 'created'>[];
  readonly federatedServers: readonly { readonly url: string; readonly name?: string }[];
  /** The site store: a `postgres://` URL (several servers sharing one site); absent: SQLite in the data folder. */
  readonly store?: string;
  /** Things worth telling the operator that are not errors. */
  readonly warnings: readonly string[];
}

/** An empty configuration: defaults everywhere. */
export const EMPTY_CONFIG: ServerConfig = { settings: {}, services: [], federatedServers: [], warnings: [] };

/** arcgis-rest-js signs in asking for this expiration (two weeks, in minutes). */
export const CLIENT_DEFAULT_EXPIRATION = 20160;

const TOP_KEYS = ['settings', 'tls', 'services', 'federatedServers', 'store'] as const;
const TLS_KEYS = ['cert', 'key'] as const;
const FEDERATED_KEYS = ['url', 'name'] as const;

type Kind = 'boolean' | 'string' | 'int' | 'strings' | 'absPaths' | 'origin';
const SETTINGS: Record<string, { kind: Kind; min?: number; max?: number }> = {
  allSSL: { kind: 'boolean' },
  trustedProxies: { kind: 'strings' },
  headerAlias: { kind: 'boolean' },
  defaultTokenMinutes: { kind: 'int', min: 1, max: 21600 },
  maxTokenMinutes: { kind: 'int', min: 1, max: 21600 },
  oauthTokenMinutes: { kind: 'int', min: 1, max: 21600 },
  throttleAttempts: { kind: 'int', min: 1, max: 1_000_000 },
  throttleWindowMs: { kind: 'int', min: 1, max: 86_400_000 },
  orgName: { kind: 'string' },
  portalId: { kind: 'string' },
  writableRoots: { kind: 'absPaths' },
  publicOrigin: { kind: 'origin' },
  corsOrigins: { kind: 'strings' },
  tileMaxAge: { kind: 'int', min: 0, max: 31_536_000 },
  maxBodyBytes: { kind: 'int', min: 1024, max: 2 ** 31 },
  maxRuleDepth: { kind: 'int', min: 4, max: 1000 },
  maxRuleNodes: { kind: 'int', min: 1, max: 1_000_000 },
  requestTimeoutMs: { kind: 'int', min: 0, max: 86_400_000 },
  maxRenders: { kind: 'int', min: 1, max: 1024 },
  maxQueuedRenders: { kind: 'int', min: 0, max: 1_000_000 },
  maxRendersPerClient: { kind: 'int', min: 1, max: 1_000_000 },
  maxJobs: { kind: 'int', min: 1, max: 1_000_000 },
  maxJobsPerUser: { kind: 'int', min: 1, max: 1_000_000 },
  exportQuotaBytes: { kind: 'int', min: 0, max: Number.MAX_SAFE_INTEGER },
  inputRoots: { kind: 'absPaths' },
  inputOrigins: { kind: 'strings' },
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads and parses a config file; a missing or unreadable file is an error naming it. */
export function loadConfig(file: string): ServerConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new EngineError('INVALID_ARGUMENT', `${file}: cannot read the config file: ${(e as NodeJS.ErrnoException).code ?? String(e)}`, {
      path: 'config',
    });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new EngineError('INVALID_ARGUMENT', `${file}: not valid JSON: ${(e as Error).message}`, { path: 'config' });
  }
  return parseConfig(json, resolve(file));
}

/**
 * Checks a parsed config. `source` names it in errors (a file path; relative paths in it resolve
 * against its folder, or against the working folder when `source` is not a path).
 */
/** An image service's relative `properties.path` (not a URL) resolves against the config file's folder. */
function withResolvedPath<S extends Pick<ServiceRecord, 'properties'>>(service: S, base: string): S {
  const path = service.properties['path'];
  if (typeof path !== 'string' || path === '' || isAbsolute(path) || /^[a-z][a-z0-9+.-]*:\/\//i.test(path)) return service;
  return { ...service, properties: { ...service.properties, path: resolve(base, path) } };
}

export function parseConfig(json: unknown, source: string, now = Date.now()): ServerConfig {
  const base = isAbsolute(source) ? dirname(source) : process.cwd();
  const issues: Issue[] = [];
  const warnings: string[] = [];
  const problem = (path: string, message: string): void => {
    issues.push({ code: 'INVALID_ARGUMENT', path, message: `${source}: ${message}` });
  };
  const unknownKeys = (o: Record<string, unknown>, known: readonly string[], at: string): void => {
    for (const k of Object.keys(o)) {
      if (known.includes(k)) continue;
      const near = closestSpelling(k, known);
      problem(at ? `${at}.${k}` : k, `unknown key '${k}'${near ? ` (did you mean ${near}?)` : ` (known: ${known.join(', ')})`}`);
    }
  };

  if (!isObject(json)) {
    problem('', 'the config must be a JSON object');
    throw combinedError(issues);
  }
  unknownKeys(json, TOP_KEYS, '');

  const settings: Record<string, unknown> = {};
  const rawSettings = json['settings'] ?? {};
  if (!isObject(rawSettings)) problem('settings', 'must be a JSON object');
  else {
    unknownKeys(rawSettings, Object.keys(SETTINGS), 'settings');
    for (const [key, spec] of Object.entries(SETTINGS)) {
      const v = rawSettings[key];
      if (v === undefined) continue;
      const path = `settings.${key}`;
      switch (spec.kind) {
        case 'boolean':
          if (typeof v !== 'boolean') problem(path, 'must be true or false');
          else settings[key] = v;
          break;
        case 'string':
          if (typeof v !== 'string' || v.trim() === '') problem(path, 'must be a non-empty string');
          else settings[key] = v;
          break;
        case 'int':
          if (typeof v !== 'number' || !Number.isInteger(v) || v < spec.min! || v > spec.max!) {
            problem(path, `must be a whole number from ${spec.min} to ${spec.max}`);
          } else settings[key] = v;
          break;
        case 'strings':
          if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) problem(path, 'must be an array of strings');
          else settings[key] = v;
          break;
        case 'absPaths':
          if (!Array.isArray(v) || !v.every((x) => typeof x === 'string' && x !== '')) problem(path, 'must be an array of folder paths');
          else settings[key] = v.map((p: string) => resolve(base, p));
          break;
        case 'origin': {
          let ok = false;
          if (typeof v === 'string') {
            try {
              const u = new URL(v);
              ok = (u.protocol === 'https:' || u.protocol === 'http:') && (u.pathname === '/' || u.pathname === '') && !u.search && !u.hash;
              if (ok) settings[key] = u.origin;
            } catch {
              ok = false;
            }
          }
          if (!ok) problem(path, 'must be an origin such as https://gis.example.com:6443 (no path)');
          break;
        }
      }
    }
    const max = settings['maxTokenMinutes'];
    if (typeof max === 'number' && max < CLIENT_DEFAULT_EXPIRATION) {
      // Decision: a lower maximum is allowed (some operators want short sessions), but clients that
      // sign in with the library default ask for 20160 minutes and will be refused, so say so.
      warnings.push(
        `${source}: settings.maxTokenMinutes is ${max}; clients that sign in asking for the usual two weeks (${CLIENT_DEFAULT_EXPIRATION} minutes) will be refused`,
      );
    }
    const def = settings['defaultTokenMinutes'];
    if (typeof def === 'number' && typeof max === 'number' && def > max) {
      problem('settings.defaultTokenMinutes', `must not exceed settings.maxTokenMinutes (${max})`);
    }
  }

  let tls: ServerConfig['tls'];
  const rawTls = json['tls'];
  if (rawTls !== undefined) {
    if (!isObject(rawTls)) problem('tls', 'must be a JSON object with cert and key');
    else {
      unknownKeys(rawTls, TLS_KEYS, 'tls');
      const cert = rawTls['cert'];
      const key = rawTls['key'];
      if (typeof cert !== 'string' || cert === '') problem('tls.cert', 'must be the path of a PEM certificate file');
      if (typeof key !== 'string' || key === '') problem('tls.key', 'must be the path of a PEM private key file');
      if (typeof cert === 'string' && cert !== '' && typeof key === 'string' && key !== '') {
        tls = { cert: resolve(base, cert), key: resolve(base, key) };
      }
    }
  }

  const services: Omit<ServiceRecord, 'created'>[] = [];
  const rawServices = json['services'] ?? [];
  if (!Array.isArray(rawServices)) problem('services', 'must be an array of service definitions');
  else {
    rawServices.forEach((s: unknown, i: number) => {
      const path = `services[${i}]`;
      try {
        const { created: _created, ...parsed } = parseServiceDefinition(s, now, path);
        const service =
          parsed.type === 'ImageServer'
            ? withResolvedPath(parsed, base)
            : parsed.type === 'MapServer'
              ? withResolvedMapPaths(parsed, base)
              : parsed;
        if (service.type === 'ImageServer') imageServiceSettings(service);
        if (service.type === 'MapServer') parseMapServiceProperties(service);
        services.push(service);
      } catch (e) {
        if (!(e instanceof EngineError)) throw e;
        const detail = e.details.length > 0 ? e.details.join(' ') : e.message;
        // The image service's checks name `service.properties.<key>`: put them under this entry.
        problem(e.path?.startsWith('service.') ? `${path}${e.path.slice('service'.length)}` : path, detail);
      }
    });
  }

  const federatedServers: { url: string; name?: string }[] = [];
  const rawFederated = json['federatedServers'] ?? [];
  if (!Array.isArray(rawFederated)) problem('federatedServers', 'must be an array of {url, name}');
  else {
    rawFederated.forEach((f: unknown, i: number) => {
      const path = `federatedServers[${i}]`;
      if (!isObject(f)) return problem(path, 'must be a JSON object with url and name');
      unknownKeys(f, FEDERATED_KEYS, path);
      const url = f['url'];
      const name = f['name'];
      let normalised: string | undefined;
      if (typeof url === 'string') normalised = normaliseServerUrl(url);
      if (normalised === undefined) problem(`${path}.url`, 'must be an http or https URL such as https://gis.example.com:6443/server');
      if (name !== undefined && (typeof name !== 'string' || name === '')) problem(`${path}.name`, 'must be a non-empty string');
      if (normalised !== undefined)
        federatedServers.push({ url: normalised, ...(typeof name === 'string' && name !== '' ? { name } : {}) });
    });
  }

  let store: string | undefined;
  const rawStore = json['store'];
  if (rawStore !== undefined) {
    if (typeof rawStore !== 'string' || !isPostgresUrl(rawStore)) {
      const shown = typeof rawStore === 'string' ? ` (got ${redactUrl(rawStore)})` : '';
      problem('store', `must be a PostgreSQL URL such as postgres://rasterflow@db.example.com:5432/site${shown}`);
    } else store = rawStore.trim();
  }

  if (issues.length > 0) throw combinedError(issues);
  return {
    settings: settings as ConfigSettings,
    ...(tls ? { tls } : {}),
    services,
    federatedServers,
    ...(store ? { store } : {}),
    warnings,
  };
}

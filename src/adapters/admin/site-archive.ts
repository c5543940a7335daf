/**
 * The `.agssite` site archive (protocols.md §3, seed §4): what a site export holds, how it is written
 * to disk (atomically, never clobbering), how it is read back and checked, and the path rules for the
 * folders an administrator may name. Shared by exportSite and importSite.
 *
 * Format (version 1): a ZIP file with `manifest.json` at the root and one JSON array per kind of
 * configuration item. Included (seed §4 "includes", as rasterflow has them): services with their
 * properties, service webhooks, server object extensions and interceptors (rasterflow has none: empty
 * lists), registered data store items (none yet: empty list), users and roles, the machines of the
 * site, log settings, and the site's federations, identity providers, federated servers and OAuth
 * apps. Excluded (seed §4 "excludes"): cache tiles, service data, temporary output, log messages and
 * geoprocessing job statuses and messages, the primary site administrator (record, name, password and
 * hash), statistics data, web adaptor configuration; and rasterflow's signing keys and every other
 * setting holding a secret.
 */
import { randomUUID } from 'node:crypto';
import { constants as FS, readFileSync } from 'node:fs';
import { access, link, mkdir, open, readdir, realpath, rename, rm, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { strToU8, unzipSync, zipSync } from 'fflate';
import { EngineError, writeCause } from '../../core/errors.js';
import {
  parseServiceDefinition,
  PRIVILEGES,
  serviceKey,
  USER_ROLES,
  type FederatedServerRecord,
  type FederationRecord,
  type IdentityProviderRecord,
  type OAuthAppRecord,
  type RoleRecord,
  type ServiceRecord,
  type SiteConfig,
  type SiteDeps,
  type UserRecord,
  type WebhookRecord,
} from '../site.js';

// ---------------------------------------------------------------------------------------------
// Format

export const ARCHIVE_FORMAT_VERSION = 1;
export const ARCHIVE_PRODUCT = 'rasterflow';
export const ARCHIVE_EXTENSION = '.agssite';

// Decision: rasterflow's log settings live in this site setting (level, retention...); an export carries
// it (null when never set) and a restore puts it back. It holds no secret.
/** The site setting holding log settings (level, retention...), carried by exports when set. */
export const LOG_SETTINGS_KEY = 'logSettings';

/** The ZIP entries of format version 1 besides `manifest.json`, each a JSON array. */
export const ARCHIVE_ENTRIES = {
  services: 'services.json',
  webhooks: 'webhooks.json',
  serverObjectExtensions: 'serverObjectExtensions.json',
  serverObjectInterceptors: 'serverObjectInterceptors.json',
  dataStoreItems: 'dataStoreItems.json',
  users: 'users.json',
  roles: 'roles.json',
  machines: 'machines.json',
  federations: 'federations.json',
  identityProviders: 'identityProviders.json',
  federatedServers: 'federatedServers.json',
  oauthApps: 'oauthApps.json',
} as const;
export type ArchiveItemKind = keyof typeof ARCHIVE_ENTRIES;
export const MANIFEST_ENTRY = 'manifest.json';
export const LOG_SETTINGS_ENTRY = 'logSettings.json';

// Decision: the primary site administrator's name may not appear in an export (seed §4), so an OAuth app it
// owns names this placeholder instead; a restore gives the app to the primary administrator in place then.
/** An OAuth app owned by the primary site administrator is exported with this owner; a restore gives it to the current one. */
export const PRIMARY_OWNER = '<primary site administrator>';

export interface MachineInfo {
  readonly machineName: string;
  readonly platform: string;
  /** The ports the host listens on, when it told the adapter (e.g. `{ https: 6443 }`). */
  readonly ports?: Readonly<Record<string, number>>;
}

export interface ArchiveManifest {
  readonly formatVersion: number;
  readonly product: string;
  readonly productVersion: string;
  /** Export start, ISO 8601 UTC. */
  readonly created: string;
  /** The organization (portal id) of the exported site; federations and identity providers belong to it. */
  readonly organization: string;
  readonly counts: Readonly<Record<ArchiveItemKind, number>>;
  readonly notes: readonly string[];
  readonly excluded: readonly string[];
}

/** What an archive holds, decoded. */
export interface SiteArchive {
  readonly manifest: ArchiveManifest;
  readonly services: readonly ServiceRecord[];
  readonly webhooks: readonly WebhookRecord[];
  readonly serverObjectExtensions: readonly unknown[];
  readonly serverObjectInterceptors: readonly unknown[];
  readonly dataStoreItems: readonly unknown[];
  readonly users: readonly UserRecord[];
  readonly roles: readonly RoleRecord[];
  readonly machines: readonly MachineInfo[];
  readonly federations: readonly FederationRecord[];
  readonly identityProviders: readonly IdentityProviderRecord[];
  readonly federatedServers: readonly FederatedServerRecord[];
  readonly oauthApps: readonly OAuthAppRecord[];
  /** `null` when the site has none set. */
  readonly logSettings: Readonly<Record<string, unknown>> | null;
}

// Decision: besides the seed's exclusions, token signing keys and every setting holding a secret stay out:
// a backup file must not be able to mint tokens. Webhook signature keys are included (restored webhooks must
// keep signing, and receivers hold the same key); OAuth app secrets are only hashes.
const EXCLUDED = [
  'cache tiles and tiling schemes',
  'data used by services',
  'temporary output',
  'log messages, geoprocessing job statuses and messages',
  'the primary site administrator name and password',
  'statistics data',
  'web adaptor configuration',
  'token signing keys and settings holding secrets',
];

const NOTES = [
  'rasterflow has no server object extensions, server object interceptors or registered data store items; their lists are empty.',
  'Service webhooks include their signature keys, so restored webhooks keep signing deliveries.',
  'OAuth app secrets are stored as hashes.',
];

let productVersion: string | undefined;

/** rasterflow's version from package.json when it can be found next to the code, else the release constant. */
export function rasterflowVersion(): string {
  if (productVersion !== undefined) return productVersion;
  productVersion = '0.1.0';
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      name?: unknown;
      version?: unknown;
    };
    if (pkg.name === 'rasterflow' && typeof pkg.version === 'string') productVersion = pkg.version;
  } catch {
    // Bundled builds have no package.json at that place: keep the constant.
  }
  return productVersion;
}

/** The machine this process runs on. */
export const thisMachine = (ports?: Readonly<Record<string, number>>): MachineInfo => ({
  machineName: hostname(),
  platform: process.platform,
  ...(ports ? { ports } : {}),
});

// ---------------------------------------------------------------------------------------------
// Collecting and encoding

/**
 * Reads the site configuration to export. The primary site administrator leaves no trace: its user
 * record is dropped and an OAuth app it owns names PRIMARY_OWNER instead.
 */
export async function collectSite(
  deps: Pick<SiteDeps, 'store' | 'config'>,
  at: number,
  machine: MachineInfo = thisMachine(),
): Promise<SiteArchive> {
  const { store } = deps;
  const allUsers = await store.listUsers();
  const primaryNames = new Set(allUsers.filter((u) => u.primary === true).map((u) => u.username));
  const users = allUsers.filter((u) => !primaryNames.has(u.username));
  const oauthApps = (await store.listOAuthApps()).map((a) => (primaryNames.has(a.owner) ? { ...a, owner: PRIMARY_OWNER } : a));
  const logSettings = (await store.getSetting<Record<string, unknown>>(LOG_SETTINGS_KEY)) ?? null;
  const content = {
    services: await store.listServices(),
    webhooks: await store.listWebhooks(),
    serverObjectExtensions: [] as unknown[],
    serverObjectInterceptors: [] as unknown[],
    dataStoreItems: [] as unknown[],
    users,
    roles: await store.listRoles(),
    machines: [machine],
    federations: await store.listFederations(),
    identityProviders: await store.listIdentityProviders(),
    federatedServers: await store.listFederatedServers(),
    oauthApps,
  };
  const counts = Object.fromEntries(Object.keys(ARCHIVE_ENTRIES).map((k) => [k, content[k as ArchiveItemKind].length])) as Record<
    ArchiveItemKind,
    number
  >;
  const manifest: ArchiveManifest = {
    formatVersion: ARCHIVE_FORMAT_VERSION,
    product: ARCHIVE_PRODUCT,
    productVersion: rasterflowVersion(),
    created: new Date(at).toISOString(),
    organization: deps.config.portalId,
    counts,
    notes: NOTES,
    excluded: EXCLUDED,
  };
  return { manifest, ...content, logSettings };
}

/** The ZIP bytes of an archive. */
export function encodeArchive(archive: SiteArchive, at: number): Uint8Array {
  const mtime = new Date(at);
  const files: Record<string, [Uint8Array, { mtime: Date }]> = {};
  const add = (name: string, value: unknown): void => void (files[name] = [strToU8(JSON.stringify(value, null, 2)), { mtime }]);
  add(MANIFEST_ENTRY, archive.manifest);
  for (const [kind, entry] of Object.entries(ARCHIVE_ENTRIES)) add(entry, archive[kind as ArchiveItemKind]);
  add(LOG_SETTINGS_ENTRY, archive.logSettings);
  return zipSync(files, { level: 6 });
}

// ---------------------------------------------------------------------------------------------
// Decoding and checking

/** Largest total uncompressed size of the entries read from an archive. */
// Decision: a guard against ZIP bombs; entries this server does not know are skipped without being inflated.
export const MAX_ARCHIVE_CONTENT_BYTES = 256 * 1024 * 1024;

const bad = (problems: readonly string[]): EngineError =>
  new EngineError('INVALID_ARGUMENT', `invalid site archive: ${problems.join(' ')}`, { details: problems, path: 'file' });

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isString = (v: unknown): v is string => typeof v === 'string';
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const optional = (v: unknown, check: (x: unknown) => boolean): boolean => v === undefined || check(v);
const stringList = (v: unknown): v is string[] => Array.isArray(v) && v.every(isString);

type Check = (o: Record<string, unknown>) => string | undefined;

/** The first problem of a record, as `'field' ...`. */
const fields =
  (spec: Record<string, (v: unknown) => boolean>, describe: Record<string, string>): Check =>
  (o) => {
    for (const [k, ok] of Object.entries(spec)) if (!ok(o[k])) return `'${k}' ${describe[k] ?? 'is not valid'}.`;
    return undefined;
  };

const CHECKS: Record<Exclude<ArchiveItemKind, 'services'>, Check> = {
  webhooks: fields(
    {
      id: (v) => isString(v) && v !== '',
      service: isString,
      name: isString,
      changeTypes: stringList,
      hookUrl: isString,
      signatureKey: isString,
      active: (v) => typeof v === 'boolean',
      created: isNumber,
    },
    {
      id: 'must be a non-empty string',
      changeTypes: 'must be a list of strings',
      active: 'must be true or false',
      created: 'must be a number',
    },
  ),
  serverObjectExtensions: () => 'is not supported by this server (it has no server object extensions).',
  serverObjectInterceptors: () => 'is not supported by this server (it has no server object interceptors).',
  dataStoreItems: () => 'is not supported by this server (it has no registered data store items).',
  users: fields(
    {
      username: (v) => isString(v) && v !== '',
      passwordHash: (v) => isString(v) && v.startsWith('scrypt$') && v.split('$').length === 6,
      role: (v) => (USER_ROLES as readonly unknown[]).includes(v),
      roles: stringList,
      fullName: (v) => optional(v, isString),
      email: (v) => optional(v, isString),
      description: (v) => optional(v, isString),
      disabled: (v) => optional(v, (x) => typeof x === 'boolean'),
      created: isNumber,
    },
    {
      username: 'must be a non-empty string',
      passwordHash: 'must be a scrypt password hash',
      role: `must be one of ${USER_ROLES.join(', ')}`,
      roles: 'must be a list of role names',
      disabled: 'must be true or false',
      created: 'must be a number',
    },
  ),
  roles: fields(
    {
      rolename: (v) => isString(v) && v !== '',
      description: (v) => optional(v, isString),
      privileges: (v) => Array.isArray(v) && v.every((p) => (PRIVILEGES as readonly unknown[]).includes(p)),
    },
    { rolename: 'must be a non-empty string', privileges: `must be a list of ${PRIVILEGES.join(', ')}` },
  ),
  machines: fields(
    { machineName: isString, platform: isString, ports: (v) => optional(v, (x) => isObject(x) && Object.values(x).every(isNumber)) },
    { ports: 'must map names to port numbers' },
  ),
  federations: fields(
    {
      id: (v) => isString(v) && v !== '',
      portalId: isString,
      name: isString,
      discoveryServiceUrl: isString,
      metadataServiceUrl: isString,
      certificate: (v) => optional(v, isString),
      entityId: isString,
      settings: isObject,
      created: isNumber,
    },
    { id: 'must be a non-empty string', settings: 'must be a JSON object', created: 'must be a number' },
  ),
  identityProviders: fields(
    {
      id: (v) => isString(v) && v !== '',
      portalId: isString,
      name: isString,
      metadataUrl: (v) => optional(v, isString),
      created: isNumber,
    },
    { id: 'must be a non-empty string', created: 'must be a number' },
  ),
  federatedServers: fields(
    {
      id: (v) => isString(v) && v !== '',
      url: isString,
      adminUrl: (v) => optional(v, isString),
      name: (v) => optional(v, isString),
    },
    { id: 'must be a non-empty string' },
  ),
  oauthApps: fields(
    {
      clientId: (v) => isString(v) && v !== '',
      secretHash: (v) => isString(v) && v.startsWith('scrypt$'),
      name: isString,
      redirectUris: stringList,
      owner: isString,
      created: isNumber,
    },
    {
      clientId: 'must be a non-empty string',
      secretHash: 'must be a scrypt hash',
      redirectUris: 'must be a list of strings',
      created: 'must be a number',
    },
  ),
};

const KEY_OF: Record<
  Exclude<ArchiveItemKind, 'serverObjectExtensions' | 'serverObjectInterceptors' | 'dataStoreItems'>,
  (x: never) => string
> = {
  services: (s: ServiceRecord) => serviceKey(s),
  webhooks: (h: WebhookRecord) => h.id,
  users: (u: UserRecord) => u.username,
  roles: (r: RoleRecord) => r.rolename,
  machines: (m: MachineInfo) => m.machineName,
  federations: (f: FederationRecord) => f.id,
  identityProviders: (i: IdentityProviderRecord) => i.id,
  federatedServers: (s: FederatedServerRecord) => s.id,
  oauthApps: (a: OAuthAppRecord) => a.clientId,
};

/** A record copied with only the fields its type has (extra keys in the archive are dropped). */
function pick<T>(o: Record<string, unknown>, keys: readonly string[]): T {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out as T;
}

const KEEP: Record<
  Exclude<ArchiveItemKind, 'services' | 'serverObjectExtensions' | 'serverObjectInterceptors' | 'dataStoreItems'>,
  string[]
> = {
  webhooks: ['id', 'service', 'name', 'changeTypes', 'hookUrl', 'signatureKey', 'active', 'created'],
  users: ['username', 'passwordHash', 'role', 'roles', 'fullName', 'email', 'description', 'disabled', 'created'],
  roles: ['rolename', 'description', 'privileges'],
  machines: ['machineName', 'platform', 'ports'],
  federations: ['id', 'portalId', 'name', 'discoveryServiceUrl', 'metadataServiceUrl', 'certificate', 'entityId', 'settings', 'created'],
  identityProviders: ['id', 'portalId', 'name', 'metadataUrl', 'created'],
  federatedServers: ['id', 'url', 'adminUrl', 'name'],
  oauthApps: ['clientId', 'secretHash', 'name', 'redirectUris', 'owner', 'created'],
};

function parseEntry(entries: Record<string, Uint8Array>, name: string): unknown {
  const bytes = entries[name];
  if (bytes === undefined) throw bad([`The archive has no ${name}.`]);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw bad([`${name} is not valid UTF-8 text.`]);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw bad([`${name} is not valid JSON (${e instanceof Error ? e.message : String(e)}).`]);
  }
}

/**
 * Reads and checks an archive: a ZIP with a rasterflow manifest of a format this server reads, every
 * entry present, valid and counted as the manifest says. Errors (INVALID_ARGUMENT) name the entry
 * and the item (`users.json[2]: 'role' must be one of ...`).
 */
export function decodeArchive(bytes: Uint8Array): SiteArchive {
  const wanted = new Set<string>([MANIFEST_ENTRY, LOG_SETTINGS_ENTRY, ...Object.values(ARCHIVE_ENTRIES)]);
  let total = 0;
  let entries: Record<string, Uint8Array>;
  try {
    entries = unzipSync(bytes, {
      filter: (f) => {
        if (!wanted.has(f.name)) return false;
        total += f.originalSize;
        if (total > MAX_ARCHIVE_CONTENT_BYTES) throw new RangeError('too large');
        return true;
      },
    });
  } catch (e) {
    if (e instanceof RangeError) throw bad([`The archive's entries exceed ${MAX_ARCHIVE_CONTENT_BYTES} bytes uncompressed.`]);
    throw bad(['The file is not a site export archive: it is not a readable ZIP file.']);
  }
  if (entries[MANIFEST_ENTRY] === undefined) throw bad([`The archive has no ${MANIFEST_ENTRY}; it is not a rasterflow site export.`]);
  const m = parseEntry(entries, MANIFEST_ENTRY);
  if (!isObject(m) || m['product'] !== ARCHIVE_PRODUCT) {
    throw bad([`${MANIFEST_ENTRY} does not describe a rasterflow site export.`]);
  }
  const version = m['formatVersion'];
  if (!Number.isInteger(version) || (version as number) < 1) throw bad([`${MANIFEST_ENTRY}: 'formatVersion' must be a positive integer.`]);
  if ((version as number) > ARCHIVE_FORMAT_VERSION) {
    throw bad([
      `${MANIFEST_ENTRY}: the archive has format version ${version as number}, newer than this server reads (${ARCHIVE_FORMAT_VERSION}).`,
    ]);
  }
  const counts = m['counts'];
  if (!isObject(counts)) throw bad([`${MANIFEST_ENTRY}: 'counts' must be a JSON object.`]);
  if (!isString(m['organization'])) throw bad([`${MANIFEST_ENTRY}: 'organization' must be a string.`]);

  const lists: Partial<Record<ArchiveItemKind, unknown[]>> = {};
  for (const [k, entry] of Object.entries(ARCHIVE_ENTRIES)) {
    const kind = k as ArchiveItemKind;
    const value = parseEntry(entries, entry);
    if (!Array.isArray(value)) throw bad([`${entry} must hold a JSON array.`]);
    if (counts[kind] !== value.length) {
      throw bad([`${entry} holds ${value.length} items but ${MANIFEST_ENTRY} counts ${String(counts[kind])}; the archive is damaged.`]);
    }
    const seen = new Set<string>();
    const out: unknown[] = [];
    value.forEach((item, i) => {
      const where = `${entry}[${i}]`;
      if (!isObject(item)) throw bad([`${where} must be a JSON object.`]);
      let rec: unknown;
      if (kind === 'services') {
        try {
          const parsed = parseServiceDefinition(
            {
              serviceName: item['serviceName'],
              type: item['type'],
              folderName: item['folder'],
              description: item['description'],
              properties: item['properties'],
            },
            isNumber(item['created']) ? item['created'] : 0,
          );
          if (!isNumber(item['created'])) throw bad([`${where}: 'created' must be a number.`]);
          rec = parsed;
        } catch (e) {
          if (e instanceof EngineError && e.details.length > 0 && !e.details[0]!.startsWith(where))
            throw bad(e.details.map((d) => `${where}: ${d}`));
          throw e;
        }
      } else {
        const problem = CHECKS[kind](item);
        if (problem !== undefined) {
          throw bad([problem.startsWith('is not') ? `${entry} ${problem}` : `${where}: ${problem}`]);
        }
        rec = kind in KEEP ? pick(item, KEEP[kind as keyof typeof KEEP]) : item;
      }
      if (kind in KEY_OF) {
        const key = KEY_OF[kind as keyof typeof KEY_OF](rec as never);
        if (seen.has(key)) throw bad([`${where}: '${key}' appears more than once.`]);
        seen.add(key);
      }
      out.push(rec);
    });
    lists[kind] = out;
  }
  const services = lists.services as ServiceRecord[];
  const keys = new Set(services.map(serviceKey));
  (lists.webhooks as WebhookRecord[]).forEach((h, i) => {
    if (!keys.has(h.service))
      throw bad([`${ARCHIVE_ENTRIES.webhooks}[${i}]: service '${h.service}' is not in ${ARCHIVE_ENTRIES.services}.`]);
  });
  const logSettings = entries[LOG_SETTINGS_ENTRY] === undefined ? null : parseEntry(entries, LOG_SETTINGS_ENTRY);
  if (logSettings !== null && !isObject(logSettings)) throw bad([`${LOG_SETTINGS_ENTRY} must hold a JSON object or null.`]);
  const manifest: ArchiveManifest = {
    formatVersion: version as number,
    product: ARCHIVE_PRODUCT,
    productVersion: isString(m['productVersion']) ? m['productVersion'] : '',
    created: isString(m['created']) ? m['created'] : '',
    organization: m['organization'],
    counts: counts as Record<ArchiveItemKind, number>,
    notes: stringList(m['notes']) ? m['notes'] : [],
    excluded: stringList(m['excluded']) ? m['excluded'] : [],
  };
  return { manifest, ...(lists as Required<typeof lists>), logSettings } as SiteArchive;
}

// ---------------------------------------------------------------------------------------------
// Names, folders and writing

/** `<yyyyMMdd>-<HHmmss>-UTC.agssite` for an instant (UTC). */
export function archiveFileName(at: number, suffix = 0): string {
  const iso = new Date(at).toISOString(); // 2026-01-15T12:00:00.000Z
  const stamp = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}-${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}-UTC`;
  return `${stamp}${suffix > 0 ? `-${suffix}` : ''}${ARCHIVE_EXTENSION}`;
}

const ARCHIVE_NAME = /^(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})-UTC(?:-([1-9]\d{0,5}))?\.agssite$/;

/** The export start encoded in an archive file name, or undefined when `name` is not one. */
export function archiveNameTime(name: string): number | undefined {
  const m = ARCHIVE_NAME.exec(name);
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const t = Date.UTC(y, mo - 1, d, h, mi, s);
  return archiveFileName(t, Number(m[7] ?? 0)) === name ? t : undefined;
}

/** Temporary names carry the time they were started so that a sweep can remove leftovers of a crash. */
const TEMP_NAME = /^\.partial-(\d+)-[0-9a-f-]+\.tmp$/;

export interface AtomicWriteHooks {
  /** Called after the temporary file is written and synced, before it takes its final name (tests pause here). */
  readonly beforeRename?: (tempPath: string) => Promise<void>;
}

/**
 * Writes `bytes` under a new archive name in `dir` (`base`, else `base-1`, `base-2`...): a temporary
 * file in the same folder, fsync, then a no-clobber link to the final name (rename where the file
 * system has no hard links), then a sync of the folder. A failure removes the temporary file; nothing
 * is ever left half written under a final name. Answers the name used.
 */
// Decision: archives are created mode 0600 (they hold password hashes and webhook keys); the folder is synced
// after the rename so that the new name survives a power cut.
export async function writeArchiveFile(dir: string, at: number, bytes: Uint8Array, hooks: AtomicWriteHooks = {}): Promise<string> {
  const temp = path.join(dir, `.partial-${at}-${randomUUID()}.tmp`);
  try {
    const fh = await open(temp, 'wx', 0o600);
    try {
      await fh.writeFile(bytes);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await hooks.beforeRename?.(temp);
    for (let n = 0; ; n++) {
      if (n > 100_000) throw new Error('no free archive name');
      const name = archiveFileName(at, n);
      const final = path.join(dir, name);
      try {
        await link(temp, final);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') continue;
        if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EXDEV') throw e;
        // No hard links here: check, then rename (the site backup lock keeps other exports out).
        if (await exists(final)) continue;
        await rename(temp, final);
      }
      await syncDir(dir);
      return name;
    }
  } finally {
    await rm(temp, { force: true }).catch(() => undefined);
  }
}

const exists = (p: string): Promise<boolean> =>
  stat(p).then(
    () => true,
    () => false,
  );

async function syncDir(dir: string): Promise<void> {
  try {
    const fh = await open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    // Some platforms (Windows) cannot open or sync a folder; the file itself is synced.
  }
}

/** How long a downloadable export stays in the server-owned folder. */
export const DOWNLOAD_LIFETIME_MS = 24 * 60 * 60 * 1000;

/** The server-owned folder of downloadable exports. */
export const downloadDir = (config: Pick<SiteConfig, 'dataDir'>): string => path.join(config.dataDir, 'site-exports');

/**
 * Removes downloadable exports (and leftover temporary files) created DOWNLOAD_LIFETIME_MS or more
 * before `now`; the creation time is the one in the name, written from the injected clock.
 * Answers the names removed.
 */
export async function sweepDownloads(dir: string, now: number): Promise<string[]> {
  return removeFiles(dir, (name) => {
    const t = archiveNameTime(name) ?? (TEMP_NAME.exec(name) ? Number(TEMP_NAME.exec(name)![1]) : undefined);
    return t !== undefined && now - t >= DOWNLOAD_LIFETIME_MS;
  });
}

/** Removes the temporary files of an export writing into `dir` (any age). Answers the names removed. */
export const removeTemporaries = (dir: string): Promise<string[]> => removeFiles(dir, (name) => TEMP_NAME.test(name));

/** Removes the files of `dir` whose names `remove` picks (a missing folder: none). Answers the names removed. */
async function removeFiles(dir: string, remove: (name: string) => boolean): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!remove(name)) continue;
    try {
      await unlink(path.join(dir, name));
      removed.push(name);
    } catch {
      // Gone already, or in use: the next sweep tries again.
    }
  }
  return removed;
}

export async function ensureDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
}

// ---------------------------------------------------------------------------------------------
// Locations an administrator names

/** The separator a location is written with: `\` for Windows-style paths (`C:\x`, `\\server\share`), else `/`. */
export const separatorOf = (location: string): '\\' | '/' => (/^(?:[A-Za-z]:\\|\\\\)/.test(location) ? '\\' : '/');

/** `location` + its own separator + `name`. */
export function joinLocation(location: string, name: string): string {
  const sep = separatorOf(location);
  const trimmed = location.length > 1 ? location.replace(sep === '\\' ? /\\+$/ : /\/+$/, '') : location;
  return trimmed.endsWith(sep) ? `${trimmed}${name}` : `${trimmed}${sep}${name}`;
}

const inside = (root: string, p: string): boolean => {
  const rel = path.relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

const unsafe = (location: string, why: string): EngineError => {
  const msg = `The location '${location}' ${why}`;
  return new EngineError('INVALID_ARGUMENT', msg, { path: 'location', details: [msg] });
};

/**
 * Checks a folder or file path an administrator gave: absolute, without `..` segments, inside the
 * data folder or a configured writable root, also once symbolic links are followed (when it exists).
 * Answers the normalised path. Errors (INVALID_ARGUMENT) name the path and the rule broken.
 */
// Decision: a symbolic link inside an allowed root that leads outside it is refused (the allow-list would be
// pointless otherwise); a Windows-style path is only absolute on a Windows host.
export async function checkLocation(location: string, config: Pick<SiteConfig, 'dataDir' | 'writableRoots'>): Promise<string> {
  if (location.includes('\0')) throw unsafe(location.replace(/\0/g, ''), 'contains a NUL character.');
  if (!path.isAbsolute(location)) throw unsafe(location, 'must be an absolute path.');
  if (location.split(/[\\/]/).includes('..')) throw unsafe(location, "must not contain '..' segments.");
  const resolved = path.resolve(location);
  const roots = [config.dataDir, ...config.writableRoots].map((r) => path.resolve(r));
  if (!roots.some((r) => inside(r, resolved))) {
    throw unsafe(location, 'is outside the folders this server may write to (its data folder and the configured writable roots).');
  }
  let real: string | undefined;
  try {
    real = await realpath(resolved);
  } catch {
    real = undefined; // does not exist (yet): nothing to follow
  }
  if (real !== undefined) {
    const realRoots = await Promise.all(roots.map((r) => realpath(r).catch(() => r)));
    if (!realRoots.some((r) => inside(r, real))) {
      throw unsafe(location, 'leads through a symbolic link to a place outside the folders this server may write to.');
    }
  }
  return resolved;
}

/** The LOCATION_NOT_ACCESSIBLE error (protocols.md §3.2), naming the path as the caller wrote it. */
export function notAccessible(location: string, cause?: unknown): EngineError {
  const msg = `The location '${location}' is not accessible. It must be accessible and writable by the server's service account.`;
  return new EngineError('LOCATION_NOT_ACCESSIBLE', msg, { path: 'location', details: [msg], cause });
}

/**
 * Whether the server can write in `dir`: it exists, is a folder, passes `access(W_OK)`, and a probe
 * file can really be created and removed there (access alone misses read-only mounts and ACLs).
 */
export async function isWritableDir(dir: string): Promise<boolean> {
  try {
    if (!(await stat(dir)).isDirectory()) return false;
    await access(dir, FS.W_OK);
    const probe = path.join(dir, `.rasterflow-probe-${randomUUID()}`);
    const fh = await open(probe, 'wx', 0o600);
    await fh.close();
    await unlink(probe);
    return true;
  } catch {
    return false;
  }
}

/** A write failure in words an operator acts on: the cause and its errno code. */
export function writeFailure(location: string, e: unknown): EngineError {
  const msg = `The site export could not be written to '${location}': ${writeCause(e)}.`;
  return new EngineError('LOCATION_NOT_ACCESSIBLE', msg, { path: 'location', details: [msg], cause: e });
}

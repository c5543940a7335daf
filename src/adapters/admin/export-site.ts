/**
 * `POST {admin_url}/exportSite` (protocols.md §3, seed §4) and the download of exports written to the
 * server-owned folder. Default administrator role only (§6); admin error shape (§0.3). The export
 * holds the site backup lock for its whole run, so admin configuration writes (assertNoSiteBackup)
 * and a second export answer 409 meanwhile. The lock is a lease renewed while the export runs: a
 * server killed during an export blocks admin writes for at most EXPORT_LOCK_TTL_MS (none at all
 * once it restarts: clearOwnStaleSiteBackupLock), and the archive is only ever served under its
 * final name, which it takes complete (writeArchiveFile).
 */
import { randomUUID } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { EngineError } from '../../core/errors.js';
import { ADMIN_AUDIENCE, authenticate, PORTAL_AUDIENCE, requireAdministrator } from '../auth.js';
import {
  errorResponse,
  escapeHtml,
  parseFormat,
  readParams,
  requireHttps,
  requirePost,
  respond,
  withRestErrors,
  type Params,
  type ReadParamsOptions,
  type Route,
} from '../rest.js';
import {
  archiveNameTime,
  checkLocation,
  collectSite,
  downloadDir,
  encodeArchive,
  ensureDir,
  isWritableDir,
  joinLocation,
  notAccessible,
  removeTemporaries,
  sweepDownloads,
  thisMachine,
  writeArchiveFile,
  writeFailure,
  type AtomicWriteHooks,
} from './site-archive.js';
import { fromTrustedProxy, originOf, SITE_BACKUP_LOCK, type SiteDeps } from '../site.js';

export const EXPORT_SITE_PATH = '/server/admin/exportSite';
export const DOWNLOAD_PATH = `${EXPORT_SITE_PATH}/download`;

// Decision: the site backup lock is a lease. Its holder renews it every EXPORT_LOCK_RENEW_MS while the
// export (or import) runs, so the time to live only bounds how long a holder that died (kill -9, power
// cut) blocks admin writes: 30 s, not the length of the longest export. With several servers on one
// store this expiry is the general answer; a single server also clears, at start-up, the lease its own
// previous run left (clearOwnStaleSiteBackupLock).
/** How long the site backup lease lives without a renewal (its holder died). */
export const EXPORT_LOCK_TTL_MS = 30_000;
/** How often the holder renews the lease (a third of its time to live: two renewals may be late). */
export const EXPORT_LOCK_RENEW_MS = EXPORT_LOCK_TTL_MS / 3;

export interface ExportSiteOptions {
  /** Awaited after the lock is taken and the site read, before the file is written (tests make the export slow here). */
  readonly beforeWrite?: () => Promise<void>;
  /** Awaited when the archive is synced under its temporary name, before it takes its final one. */
  readonly beforeRename?: AtomicWriteHooks['beforeRename'];
  /** Writes the archive (default writeArchiveFile); tests inject disk failures here. */
  readonly writeArchive?: typeof writeArchiveFile;
  /** Lease time to live (default EXPORT_LOCK_TTL_MS); renewed every third of it. */
  readonly lockTtlMs?: number;
}

export interface ExportSiteDeps extends Pick<SiteDeps, 'store' | 'clock' | 'config' | 'keys'> {
  /** The ports the host listens on, recorded in the machine list of the export. */
  readonly ports?: Readonly<Record<string, number>>;
  readonly options?: ExportSiteOptions;
}

const AUDIENCES = [ADMIN_AUDIENCE, PORTAL_AUDIENCE];

/** Admin operation page (§2.0): the operation name, a form posting f=json with its parameters, the result. */
export function adminPage(operation: string, action: string, fields: readonly string[], value: unknown, multipart = false): Response {
  const t = escapeHtml(operation);
  const inputs = fields
    .map((f) => `<label>${escapeHtml(f)} <input name="${escapeHtml(f)}" type="${f === 'file' ? 'file' : 'text'}"></label><br>`)
    .join('\n');
  const html =
    `<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>${t}</title></head>\n<body>\n<h1>${t}</h1>\n` +
    `<form method="post" action="${escapeHtml(action)}"${multipart ? ' enctype="multipart/form-data"' : ''}>\n${inputs}\n` +
    `<input type="hidden" name="f" value="json">\n<button type="submit">${t}</button>\n</form>\n` +
    `<pre>${escapeHtml(JSON.stringify(value, null, 2) ?? 'null')}</pre>\n</body>\n</html>\n`;
  return new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' } });
}

/** Answer in the admin convention: html is the operation page, json/pjson through respond(). */
export function adminAnswer(
  params: Params,
  operation: string,
  action: string,
  fields: readonly string[],
  value: unknown,
  multipart = false,
): Response {
  const f = params.get('f');
  if (parseFormat(f) === 'html') return adminPage(operation, action, fields, value, multipart);
  return respond(f, value, { noStore: true });
}

/**
 * The admin gate every operation here runs first: parameters, a known `f` (checked before any work,
 * so that an export is never written and then answered with a format error; admin shape), HTTPS when
 * allSSL, POST, and a default administrator's token (admin or portal audience).
 */
export async function adminGate(
  deps: Pick<SiteDeps, 'store' | 'keys' | 'config'>,
  req: Request,
  options: ReadParamsOptions = {},
): Promise<Params> {
  const params = await readParams(req, options);
  parseFormat(params.get('f'));
  requireHttps(req, { allSSL: deps.config.allSSL, trustProxy: fromTrustedProxy(req, deps.config) });
  requirePost(req);
  await adminCaller(deps, req, params);
  return params;
}

/** `validate` as protocols.md §3.2 words it: true/false in any case, default false. */
export function parseValidate(params: Params): boolean {
  const v = params.get('validate');
  if (v === undefined || v.trim() === '') return false;
  const t = v.trim().toLowerCase();
  if (t === 'true') return true;
  if (t === 'false') return false;
  const msg = `'validate' must be true or false.`;
  throw new EngineError('INVALID_ARGUMENT', msg, { path: 'validate', details: [msg] });
}

/** Common gate of admin operations: HTTPS when allSSL, the admin/portal token, the default administrator role. */
export async function adminCaller(deps: Pick<SiteDeps, 'store' | 'keys' | 'config'>, req: Request, params: Params) {
  const caller = await authenticate(deps, req, { audiences: AUDIENCES, shape: 'admin', params });
  requireAdministrator(caller);
  return caller;
}

const conflict = (): EngineError => {
  const msg = 'A site backup is in progress. Configuration changes are not allowed until it completes.';
  return new EngineError('CONFLICT', msg, { details: [msg] });
};

/** The boot of this machine (Linux), so that a holder id is never taken for one of an earlier boot's processes. */
function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return '';
  }
}

/** Who holds a lease: the machine, its boot, the process, one id per acquisition. */
interface HolderId {
  readonly host: string;
  readonly boot: string;
  readonly pid: number;
}

const HOLDER_RE = /^exportSite:host=([^;]*);boot=([^;]*);pid=(\d+);run=[0-9a-f-]+$/;

/** The holder id of a new lease taken by this process: `exportSite:host=..;boot=..;pid=..;run=<uuid>`. */
export function siteBackupHolder(): string {
  return `${SITE_BACKUP_LOCK}:host=${encodeURIComponent(hostname())};boot=${bootId()};pid=${process.pid};run=${randomUUID()}`;
}

function parseHolder(holder: string): HolderId | undefined {
  const m = HOLDER_RE.exec(holder);
  return m ? { host: decodeURIComponent(m[1]!), boot: m[2]!, pid: Number(m[3]) } : undefined;
}

/** Whether process `pid` of this machine is alive (EPERM: alive, someone else's). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Start-up of a server: a live site backup lease whose holder is a process of this machine and boot
 * that no longer runs (or whose id this new process now has: a restarted container's pid 1) was left
 * by a kill; it is released at once instead of blocking admin writes for the rest of its time to live.
 * A lease of another machine (several servers on one store), of an earlier boot, or in a form this
 * version does not write is left to expire. Answers the holder released, if any.
 */
// Decision: only a holder proven dead is cleared; anything uncertain waits for the lease to expire (30 s).
export async function clearOwnStaleSiteBackupLock(deps: Pick<SiteDeps, 'store'>): Promise<string | undefined> {
  const holder = await deps.store.lockHolder(SITE_BACKUP_LOCK);
  if (holder === undefined) return undefined;
  const h = parseHolder(holder);
  const boot = bootId();
  if (h === undefined || h.host !== hostname() || boot === '' || h.boot !== boot) return undefined;
  if (h.pid !== process.pid && processAlive(h.pid)) return undefined;
  await deps.store.releaseLock(SITE_BACKUP_LOCK, holder);
  return holder;
}

/** The lease `fn` runs under: `check()` throws CONFLICT once a renewal found it taken by someone else. */
export interface SiteBackupLease {
  readonly holder: string;
  check(): void;
}

/**
 * Runs `fn` holding the site backup lock as a lease of `ttlMs`, renewed every third of it until `fn`
 * settles; CONFLICT (409, the §3.2 sentence) when someone holds it. Exported for importSite, which
 * restores under the same lock.
 */
export async function withSiteBackupLock<T>(
  deps: Pick<SiteDeps, 'store'>,
  ttlMs: number,
  fn: (lease: SiteBackupLease) => Promise<T>,
): Promise<T> {
  const holder = siteBackupHolder();
  if (!(await deps.store.acquireLock(SITE_BACKUP_LOCK, holder, ttlMs))) throw conflict();
  let lost = false;
  let renewing: Promise<void> = Promise.resolve();
  const timer = setInterval(
    () => {
      renewing = renewing.then(async () => {
        // A renewal that fails to reach the store is retried at the next tick; one that finds another
        // holder means this lease expired (the process stalled longer than its time to live).
        const held = await deps.store.acquireLock(SITE_BACKUP_LOCK, holder, ttlMs).catch(() => true);
        if (!held) lost = true;
      });
    },
    Math.max(1, Math.floor(ttlMs / 3)),
  );
  const lease: SiteBackupLease = {
    holder,
    check: () => {
      if (lost) throw conflict();
    },
  };
  try {
    return await fn(lease);
  } finally {
    clearInterval(timer);
    await renewing;
    if (!lost) await deps.store.releaseLock(SITE_BACKUP_LOCK, holder);
  }
}

/**
 * Writes the archive while the lease holds: checked before, and after (an archive finished under a
 * lease that expired meanwhile is removed: a restore may have changed the site under it).
 */
async function writeUnderLease(lease: SiteBackupLease, dir: string, location: string, writeIt: () => Promise<string>): Promise<string> {
  lease.check();
  let name: string;
  try {
    name = await writeIt();
  } catch (e) {
    throw writeFailure(location, e);
  }
  try {
    lease.check();
  } catch (e) {
    await unlink(path.join(dir, name)).catch(() => undefined);
    throw e;
  }
  return name;
}

export function exportSiteHandler(deps: ExportSiteDeps) {
  const opts = deps.options ?? {};
  const write = opts.writeArchive ?? writeArchiveFile;
  return withRestErrors('admin', async (req) => {
    const params = await adminGate(deps, req);
    const validate = parseValidate(params);
    const raw = params.get('location');
    const location = raw === undefined || raw.trim() === '' ? undefined : raw.trim();
    const answer = (value: unknown) => adminAnswer(params, 'Export Site', EXPORT_SITE_PATH, ['location', 'validate'], value);

    if (location === undefined) {
      // Decision: validate without a location checks the server-owned folder the export would go to.
      const dir = downloadDir(deps.config);
      if (validate) {
        await ensureDir(dir).catch(() => undefined);
        if (!(await isWritableDir(dir))) throw notAccessible(dir);
        return answer({ status: 'success' });
      }
      const name = await withSiteBackupLock(deps, opts.lockTtlMs ?? EXPORT_LOCK_TTL_MS, async (lease) => {
        const at = deps.clock.now();
        await ensureDir(dir);
        await sweepDownloads(dir, at);
        // Under the lock no other export writes: a temporary file here is a leftover of a killed one
        // (the 24 h sweep would keep it that long).
        await removeTemporaries(dir);
        const bytes = encodeArchive(await collectSite(deps, at, thisMachine(deps.ports)), at);
        await opts.beforeWrite?.();
        return writeUnderLease(lease, dir, dir, () => write(dir, at, bytes, opts.beforeRename ? { beforeRename: opts.beforeRename } : {}));
      });
      return answer({ status: 'success', location: `${originOf(req, deps.config)}${DOWNLOAD_PATH}/${name}` });
    }

    const dir = await checkLocation(location, deps.config);
    if (validate) {
      if (!(await isWritableDir(dir))) throw notAccessible(location);
      return answer({ status: 'success' });
    }
    const name = await withSiteBackupLock(deps, opts.lockTtlMs ?? EXPORT_LOCK_TTL_MS, async (lease) => {
      const at = deps.clock.now();
      await sweepDownloads(downloadDir(deps.config), at);
      let isDir = false;
      try {
        isDir = (await stat(dir)).isDirectory();
      } catch (e) {
        throw notAccessible(location, e);
      }
      if (!isDir) throw notAccessible(location);
      // Under the lock no other export writes: a temporary file here is a killed export's.
      await removeTemporaries(dir);
      const bytes = encodeArchive(await collectSite(deps, at, thisMachine(deps.ports)), at);
      await opts.beforeWrite?.();
      return writeUnderLease(lease, dir, location, () =>
        write(dir, at, bytes, opts.beforeRename ? { beforeRename: opts.beforeRename } : {}),
      );
    });
    return answer({ status: 'success', location: joinLocation(location, name) });
  });
}

/**
 * `GET {admin_url}/exportSite/download/<name>`: the archive of an export made without `location`,
 * for a default administrator (token from any carrier). Unknown, expired or malformed names are 404.
 * Decision: errors answer JSON unless `f` asks otherwise (download URLs are fetched by tools); POST
 * is accepted too so that the token can travel in a form body.
 */
export function downloadHandler(deps: Omit<ExportSiteDeps, 'options'>) {
  return async (req: Request): Promise<Response> => {
    let params: Params | undefined;
    try {
      requireHttps(req, { allSSL: deps.config.allSSL, trustProxy: fromTrustedProxy(req, deps.config) });
      const method = req.method.toUpperCase();
      if (method !== 'GET' && method !== 'POST' && method !== 'HEAD') requirePost(req);
      params = await readParams(req);
      await adminCaller(deps, req, params);
      const dir = downloadDir(deps.config);
      await sweepDownloads(dir, deps.clock.now());
      const pathname = new URL(req.url).pathname;
      const prefix = `${DOWNLOAD_PATH}/`;
      let name = pathname.startsWith(prefix) ? pathname.slice(prefix.length) : '';
      try {
        name = decodeURIComponent(name);
      } catch {
        name = '';
      }
      const missing = () => {
        const msg = `The site export '${name}' does not exist or has expired.`;
        return new EngineError('NOT_FOUND', msg, { details: [msg] });
      };
      // Only names this server writes; anything else (separators, '..', other files) is simply not there.
      if (archiveNameTime(name) === undefined || name !== path.basename(name)) throw missing();
      const file = path.join(dir, name);
      let size: number;
      try {
        const s = await stat(file);
        if (!s.isFile()) throw missing();
        size = s.size;
      } catch {
        throw missing();
      }
      const headers = new Headers({
        'content-type': 'application/zip',
        'content-disposition': `attachment; filename="${name}"`,
        'content-length': String(size),
        'cache-control': 'no-store',
      });
      if (method === 'HEAD') return new Response(null, { headers });
      const body = Readable.toWeb(createReadStream(file)) as ReadableStream<Uint8Array>;
      return new Response(body, { headers });
    } catch (e) {
      return errorResponse('admin', e, params?.get('f') ?? 'json');
    }
  };
}

/** The routes of this module: the export and the download of exports made without `location`. */
export function exportSiteRoutes(deps: ExportSiteDeps): Route[] {
  return [
    { method: 'ALL', path: EXPORT_SITE_PATH, handler: exportSiteHandler(deps) },
    { method: 'ALL', path: `${DOWNLOAD_PATH}/:name`, handler: downloadHandler(deps) },
  ];
}

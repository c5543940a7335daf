/**
 * `POST {admin_url}/exportSite` (protocols.md §3, seed §4) and the download of exports written to the
 * server-owned folder. Default administrator role only (§6); admin error shape (§0.3). The export
 * holds the site backup lock for its whole run, so admin configuration writes (assertNoSiteBackup)
 * and a second export answer 409 meanwhile.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
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
  sweepDownloads,
  thisMachine,
  writeArchiveFile,
  writeFailure,
  type AtomicWriteHooks,
} from './site-archive.js';
import { fromTrustedProxy, originOf, SITE_BACKUP_LOCK, type SiteDeps } from '../site.js';

export const EXPORT_SITE_PATH = '/server/admin/exportSite';
export const DOWNLOAD_PATH = `${EXPORT_SITE_PATH}/download`;

// Decision: 10 minutes; the lock is released in `finally`, so the TTL only matters when the process dies.
/** How long the export lock lives if its holder dies without releasing it. */
export const EXPORT_LOCK_TTL_MS = 10 * 60 * 1000;

export interface ExportSiteOptions {
  /** Awaited after the lock is taken and the site read, before the file is written (tests make the export slow here). */
  readonly beforeWrite?: () => Promise<void>;
  /** Awaited when the archive is synced under its temporary name, before it takes its final one. */
  readonly beforeRename?: AtomicWriteHooks['beforeRename'];
  /** Writes the archive (default writeArchiveFile); tests inject disk failures here. */
  readonly writeArchive?: typeof writeArchiveFile;
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

/**
 * Runs `fn` holding the site backup lock; CONFLICT (409, the §3.2 sentence) when someone holds it.
 * Exported for importSite, which restores under the same lock.
 */
export async function withSiteBackupLock<T>(deps: Pick<SiteDeps, 'store'>, ttlMs: number, fn: () => Promise<T>): Promise<T> {
  const holder = `${SITE_BACKUP_LOCK}:${randomUUID()}`;
  if (!(await deps.store.acquireLock(SITE_BACKUP_LOCK, holder, ttlMs))) throw conflict();
  try {
    return await fn();
  } finally {
    await deps.store.releaseLock(SITE_BACKUP_LOCK, holder);
  }
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
      const name = await withSiteBackupLock(deps, opts.lockTtlMs ?? EXPORT_LOCK_TTL_MS, async () => {
        const at = deps.clock.now();
        await ensureDir(dir);
        await sweepDownloads(dir, at);
        const bytes = encodeArchive(await collectSite(deps, at, thisMachine(deps.ports)), at);
        await opts.beforeWrite?.();
        try {
          return await write(dir, at, bytes, opts.beforeRename ? { beforeRename: opts.beforeRename } : {});
        } catch (e) {
          throw writeFailure(dir, e);
        }
      });
      return answer({ status: 'success', location: `${originOf(req, deps.config)}${DOWNLOAD_PATH}/${name}` });
    }

    const dir = await checkLocation(location, deps.config);
    if (validate) {
      if (!(await isWritableDir(dir))) throw notAccessible(location);
      return answer({ status: 'success' });
    }
    const name = await withSiteBackupLock(deps, opts.lockTtlMs ?? EXPORT_LOCK_TTL_MS, async () => {
      const at = deps.clock.now();
      await sweepDownloads(downloadDir(deps.config), at);
      let isDir = false;
      try {
        isDir = (await stat(dir)).isDirectory();
      } catch (e) {
        throw notAccessible(location, e);
      }
      if (!isDir) throw notAccessible(location);
      const bytes = encodeArchive(await collectSite(deps, at, thisMachine(deps.ports)), at);
      await opts.beforeWrite?.();
      try {
        return await write(dir, at, bytes, opts.beforeRename ? { beforeRename: opts.beforeRename } : {});
      } catch (e) {
        throw writeFailure(location, e);
      }
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

/**
 * `POST {admin_url}/importSite`: restores a site from an `.agssite` archive written by exportSite
 * (seed §4: "After a restore, the primary site administrator name and password in place at restore
 * time stay in effect"). Default administrator role only; admin error shape; runs under the site
 * backup lock, so configuration writes and exports wait for it, and a concurrent export or import is
 * refused with 409.
 *
 * Decision: a restore makes the site's configuration the archive's. Services, webhooks, users, roles,
 * federations, identity providers, federated servers and OAuth apps that the archive does not hold
 * are removed; the current primary site administrator is never touched. Everything is checked before
 * the first write; if a write fails the previous configuration is put back. Machines in the archive
 * are informational (a restore does not add machines). Jobs and signing keys are not part of an
 * archive and stay as they are.
 */
import { readFile, stat } from 'node:fs/promises';
import { EngineError } from '../../core/errors.js';
import { adminAnswer, adminGate, EXPORT_LOCK_TTL_MS, withSiteBackupLock } from './export-site.js';
import { withRestErrors, type Route } from '../rest.js';
import { checkLocation, decodeArchive, LOG_SETTINGS_KEY, PRIMARY_OWNER, type SiteArchive } from './site-archive.js';
import { serviceKey, type SiteDeps, type SiteStore, type UserRecord } from '../site.js';
import { revokeSubject } from '../tokens.js';

export const IMPORT_SITE_PATH = '/server/admin/importSite';

/** Largest upload accepted by importSite (archives are configuration only, so this is generous). */
// Decision: uploads up to 256 MiB (the shared default of 10 MiB is too small for a large site).
export const MAX_IMPORT_BYTES = 256 * 1024 * 1024;

export interface ImportSiteOptions {
  /** Awaited under the lock, after the archive is checked and before the first write (tests pause here). */
  readonly beforeRestore?: () => Promise<void>;
  /** Wraps the store used for the restore writes (tests inject a failing write to see the rollback). */
  readonly restoreStore?: (store: SiteStore) => SiteStore;
  readonly lockTtlMs?: number;
}

export interface ImportSiteDeps extends Pick<SiteDeps, 'store' | 'clock' | 'config' | 'keys' | 'saveKeys'> {
  readonly options?: ImportSiteOptions;
}

export interface RestoreCounts {
  services: number;
  webhooks: number;
  users: number;
  roles: number;
  federations: number;
  identityProviders: number;
  federatedServers: number;
  oauthApps: number;
  logSettings: number;
}

export interface RestoreResult {
  readonly restored: RestoreCounts;
  readonly removed: RestoreCounts;
  /** Items of the archive not restored, each with the reason. */
  readonly skipped: string[];
}

const invalid = (msg: string): EngineError => new EngineError('INVALID_ARGUMENT', msg, { details: [msg] });

interface Snapshot {
  services: Awaited<ReturnType<SiteStore['listServices']>>;
  webhooks: Awaited<ReturnType<SiteStore['listWebhooks']>>;
  users: UserRecord[];
  roles: Awaited<ReturnType<SiteStore['listRoles']>>;
  federations: Awaited<ReturnType<SiteStore['listFederations']>>;
  identityProviders: Awaited<ReturnType<SiteStore['listIdentityProviders']>>;
  federatedServers: Awaited<ReturnType<SiteStore['listFederatedServers']>>;
  oauthApps: Awaited<ReturnType<SiteStore['listOAuthApps']>>;
  logSettings: Record<string, unknown> | undefined;
}

async function snapshot(store: SiteStore): Promise<Snapshot> {
  return {
    services: await store.listServices(),
    webhooks: await store.listWebhooks(),
    users: await store.listUsers(),
    roles: await store.listRoles(),
    federations: await store.listFederations(),
    identityProviders: await store.listIdentityProviders(),
    federatedServers: await store.listFederatedServers(),
    oauthApps: await store.listOAuthApps(),
    logSettings: await store.getSetting<Record<string, unknown>>(LOG_SETTINGS_KEY),
  };
}

/** Makes the store hold `target` (primary administrators excepted), removing what `current` has beyond it. */
async function apply(store: SiteStore, current: Snapshot, target: Snapshot, removed?: RestoreCounts): Promise<void> {
  const count = (k: keyof RestoreCounts) => removed && removed[k]++;
  const targetServices = new Set(target.services.map(serviceKey));
  for (const s of current.services) if (!targetServices.has(serviceKey(s)) && (await store.deleteService(serviceKey(s)))) count('services');
  const targetHooks = new Set(target.webhooks.map((h) => h.id));
  for (const h of await store.listWebhooks()) if (!targetHooks.has(h.id) && (await store.deleteWebhook(h.id))) count('webhooks');
  const targetUsers = new Set(target.users.map((u) => u.username));
  for (const u of current.users) if (!u.primary && !targetUsers.has(u.username) && (await store.deleteUser(u.username))) count('users');
  const targetRoles = new Set(target.roles.map((r) => r.rolename));
  for (const r of current.roles) if (!targetRoles.has(r.rolename) && (await store.deleteRole(r.rolename))) count('roles');
  const ids = <T>(xs: readonly T[], id: (x: T) => string) => new Set(xs.map(id));
  const tf = ids(target.federations, (f) => f.id);
  for (const f of current.federations) if (!tf.has(f.id) && (await store.deleteFederation(f.id))) count('federations');
  const ti = ids(target.identityProviders, (i) => i.id);
  for (const i of current.identityProviders) if (!ti.has(i.id) && (await store.deleteIdentityProvider(i.id))) count('identityProviders');
  const ts = ids(target.federatedServers, (s) => s.id);
  for (const s of current.federatedServers) if (!ts.has(s.id) && (await store.deleteFederatedServer(s.id))) count('federatedServers');
  const ta = ids(target.oauthApps, (a) => a.clientId);
  for (const a of current.oauthApps) if (!ta.has(a.clientId) && (await store.deleteOAuthApp(a.clientId))) count('oauthApps');

  for (const r of target.roles) await store.putRole(r);
  for (const s of target.services) await store.putService(s);
  for (const h of target.webhooks) await store.putWebhook(h);
  for (const u of target.users) if (!u.primary) await store.putUser(u);
  for (const f of target.federations) await store.putFederation(f);
  for (const i of target.identityProviders) await store.putIdentityProvider(i);
  for (const s of target.federatedServers) await store.putFederatedServer(s);
  for (const a of target.oauthApps) await store.putOAuthApp(a);
  if (target.logSettings !== undefined) await store.putSetting(LOG_SETTINGS_KEY, target.logSettings);
}

/**
 * Restores `archive` into the site (the caller holds the site backup lock). The current primary site
 * administrator stays; an archived user of the same name is skipped and reported. Federations and
 * identity providers of the exported organization move to this site's organization. Users removed or
 * whose password hash changes lose their tokens and OAuth grants.
 */
export async function restoreSite(deps: ImportSiteDeps, archive: SiteArchive): Promise<RestoreResult> {
  const store = deps.options?.restoreStore?.(deps.store) ?? deps.store;
  const before = await snapshot(deps.store);
  const primaries = before.users.filter((u) => u.primary === true);
  const primaryNames = new Set(primaries.map((u) => u.username));
  const primaryOwner = primaries[0]?.username;
  const skipped: string[] = [];
  const users: UserRecord[] = [];
  for (const u of archive.users) {
    if (primaryNames.has(u.username)) {
      skipped.push(`User '${u.username}' was not restored: it is the primary site administrator of this site, which stays as it is.`);
      continue;
    }
    const { primary: _primary, ...rest } = u as UserRecord & { primary?: boolean };
    users.push(rest);
  }
  // Decision: a site has one organization; records of the exported one move to this site's id.
  const org = (portalId: string) => (portalId === archive.manifest.organization ? deps.config.portalId : portalId);
  const oauthApps = archive.oauthApps.map((a) => {
    if (a.owner !== PRIMARY_OWNER) return a;
    if (primaryOwner === undefined)
      throw invalid(`OAuth app '${a.clientId}' belongs to the primary site administrator, and this site has none.`);
    return { ...a, owner: primaryOwner };
  });
  const target: Snapshot = {
    services: [...archive.services],
    webhooks: [...archive.webhooks],
    users: [...users, ...primaries],
    roles: [...archive.roles],
    federations: archive.federations.map((f) => ({ ...f, portalId: org(f.portalId) })),
    identityProviders: archive.identityProviders.map((i) => ({ ...i, portalId: org(i.portalId) })),
    federatedServers: [...archive.federatedServers],
    oauthApps,
    // An archive without log settings (null) leaves the site's own in place (the store cannot unset a setting).
    logSettings: archive.logSettings ?? undefined,
  };
  const zero = (): RestoreCounts => ({
    services: 0,
    webhooks: 0,
    users: 0,
    roles: 0,
    federations: 0,
    identityProviders: 0,
    federatedServers: 0,
    oauthApps: 0,
    logSettings: 0,
  });
  const removed = zero();
  await deps.options?.beforeRestore?.();
  try {
    await apply(store, before, target, removed);
  } catch (e) {
    // Put the previous configuration back, then report the failure.
    try {
      await apply(deps.store, await snapshot(deps.store), before);
    } catch {
      // The rollback failed too; the error below is still the first cause.
    }
    // A store failure is a server-side fault: INTERNAL (HTTP 500, the table's message; the cause is kept for the log).
    throw new EngineError('INTERNAL', `the site could not be restored, the previous configuration was put back: ${String(e)}`, {
      cause: e,
    });
  }
  // Decision: a user removed by the restore, or whose password hash it changes, is signed out everywhere
  // (tokens issued before now refused, OAuth grants deleted), as after a password change.
  const newUsers = new Map(users.map((u) => [u.username, u]));
  const revoked = before.users.filter((u) => !u.primary && newUsers.get(u.username)?.passwordHash !== u.passwordHash);
  for (const u of revoked) {
    revokeSubject(deps.keys, u.username, deps.clock.now());
    await deps.store.deleteGrantsOf(u.username);
  }
  if (revoked.length > 0) await deps.saveKeys();
  return {
    restored: {
      services: target.services.length,
      webhooks: target.webhooks.length,
      users: users.length,
      roles: target.roles.length,
      federations: target.federations.length,
      identityProviders: target.identityProviders.length,
      federatedServers: target.federatedServers.length,
      oauthApps: target.oauthApps.length,
      logSettings: target.logSettings === undefined ? 0 : 1,
    },
    removed,
    skipped,
  };
}

export function importSiteHandler(deps: ImportSiteDeps) {
  return withRestErrors('admin', async (req) => {
    const params = await adminGate(deps, req, { maxBodyBytes: MAX_IMPORT_BYTES });
    const raw = params.get('location');
    const location = raw === undefined || raw.trim() === '' ? undefined : raw.trim();
    const upload = params.file('file');
    // Decision: exactly one source; both or neither is a 400 naming the two parameters.
    if (location !== undefined && upload !== undefined) throw invalid(`Give either 'location' or 'file', not both.`);
    if (location === undefined && upload === undefined) {
      throw invalid(`'location' (the path of an .agssite file) or an uploaded 'file' is required.`);
    }
    let bytes: Uint8Array;
    if (location !== undefined) {
      const file = await checkLocation(location, deps.config);
      try {
        if (!(await stat(file)).isFile()) throw new Error('not a file');
        bytes = await readFile(file);
      } catch (e) {
        const msg = `The file '${location}' cannot be read: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'it does not exist' : 'it is not a readable file'}.`;
        throw new EngineError('INVALID_ARGUMENT', msg, { path: 'location', details: [msg], cause: e });
      }
    } else {
      bytes = new Uint8Array(await upload!.arrayBuffer());
    }
    const archive = decodeArchive(bytes);
    const result = await withSiteBackupLock(deps, deps.options?.lockTtlMs ?? EXPORT_LOCK_TTL_MS, () => restoreSite(deps, archive));
    return adminAnswer(params, 'Import Site', IMPORT_SITE_PATH, ['location', 'file'], { status: 'success', ...result }, true);
  });
}

export function importSiteRoutes(deps: ImportSiteDeps): Route[] {
  return [{ method: 'ALL', path: IMPORT_SITE_PATH, handler: importSiteHandler(deps) }];
}

/**
 * What every site-server adapter is given (issue 17): the records of site state, the asynchronous
 * store interface that holds them, the site configuration, and the deps bundle. The embedded SQLite
 * store lives in `server/`; a networked store implements the same interface. Nothing here does I/O.
 */
import { EngineError } from '../core/errors.js';
import type { Clock, KeyRing } from './tokens.js';

// ---------------------------------------------------------------------------------------------
// Records

/** Built-in role of a user. `administrator` is the default administrator role: it may do everything. */
export const USER_ROLES = ['administrator', 'publisher', 'user'] as const;
export type UserRole = (typeof USER_ROLES)[number];

/** Privileges a custom role grants (the admin API's comma-joined `privileges`). */
export const PRIVILEGES = ['featureLayer', 'geoprocessing', 'publishServerLayers'] as const;
export type Privilege = (typeof PRIVILEGES)[number];

export interface UserRecord {
  /** Case-sensitive (generateToken §1.2). */
  readonly username: string;
  /** `scrypt$N$r$p$salt$hash` (base64url parts); never leaves the store except in a site export with it stripped. */
  readonly passwordHash: string;
  readonly role: UserRole;
  /** Names of custom roles. */
  readonly roles: readonly string[];
  readonly fullName?: string;
  readonly email?: string;
  readonly description?: string;
  readonly disabled?: boolean;
  /** The primary site administrator (first start); excluded from site exports. */
  readonly primary?: boolean;
  readonly created: number;
}

export interface RoleRecord {
  readonly rolename: string;
  readonly description?: string;
  readonly privileges: readonly Privilege[];
}

export const SERVICE_TYPES = ['GPServer', 'FeatureServer', 'ImageServer', 'MapServer'] as const;
export type ServiceType = (typeof SERVICE_TYPES)[number];

export interface ServiceRecord {
  /** '' for the root folder. */
  readonly folder: string;
  readonly serviceName: string;
  readonly type: ServiceType;
  readonly description?: string;
  /** Type-specific properties as given to createService (path, renderingRule, layers, ...). */
  readonly properties: Readonly<Record<string, unknown>>;
  readonly created: number;
}

/** `folder/name.Type` or `name.Type`: the key of a service and of its webhooks. */
export const serviceKey = (s: Pick<ServiceRecord, 'folder' | 'serviceName' | 'type'>): string =>
  `${s.folder ? `${s.folder}/` : ''}${s.serviceName}.${s.type}`;

export interface WebhookRecord {
  readonly id: string;
  /** serviceKey of the owning service. */
  readonly service: string;
  readonly name: string;
  /** Events it receives (`*` for all), e.g. `jobSucceeded`, `jobFailed`. */
  readonly changeTypes: readonly string[];
  readonly hookUrl: string;
  /** HMAC-SHA256 key of the `X-Geo-Signature` header; '' means unsigned. */
  readonly signatureKey: string;
  readonly active: boolean;
  readonly created: number;
}

/** A SAML federation of identity providers registered for an organization (seed §5). */
export interface FederationRecord {
  readonly id: string;
  readonly portalId: string;
  readonly name: string;
  readonly discoveryServiceUrl: string;
  readonly metadataServiceUrl: string;
  readonly certificate?: string;
  readonly entityId: string;
  readonly settings: Readonly<Record<string, unknown>>;
  readonly created: number;
}

/** A single SAML identity provider of an organization (an organization has this or a federation, never both). */
export interface IdentityProviderRecord {
  readonly id: string;
  readonly portalId: string;
  readonly name: string;
  readonly metadataUrl?: string;
  readonly created: number;
}

/** A server federated with the portal: server-tokens are issued only for these roots (§1.5). */
export interface FederatedServerRecord {
  readonly id: string;
  /** Normalised root, e.g. `https://host:6443/server`. */
  readonly url: string;
  readonly adminUrl?: string;
  readonly name?: string;
}

/** An OAuth 2.0 app registered through the admin API. */
export interface OAuthAppRecord {
  readonly clientId: string;
  /** scrypt hash of the client secret (shown once at registration). */
  readonly secretHash: string;
  readonly name: string;
  readonly redirectUris: readonly string[];
  readonly owner: string;
  readonly created: number;
}

/** A short-lived OAuth grant: an authorization code or a refresh token (stored by its SHA-256). */
export interface OAuthGrantRecord {
  /** SHA-256 (base64url) of the code or refresh token. */
  readonly id: string;
  readonly kind: 'code' | 'refresh';
  readonly clientId: string;
  readonly username: string;
  readonly expires: number;
  readonly redirectUri?: string;
  readonly codeChallenge?: string;
  readonly codeChallengeMethod?: 'S256' | 'plain';
}

/** A geoprocessing job (training-data export), persisted so that status survives a restart. */
export interface JobRecord {
  readonly id: string;
  /** `System/RasterAnalysisTools/ExportTrainingDataforDeepLearning`. */
  readonly task: string;
  readonly status: string;
  readonly owner: string;
  /** The submitted parameters as received (JSON values). */
  readonly inputs: Readonly<Record<string, unknown>>;
  readonly messages: readonly { readonly type: string; readonly description: string }[];
  readonly progress?: { readonly type: 'default' | 'step'; readonly message: string; readonly percent?: number };
  readonly results?: Readonly<Record<string, unknown>>;
  readonly created: number;
  readonly updated: number;
}

// ---------------------------------------------------------------------------------------------
// The store

/**
 * Site state behind asynchronous methods, so that a networked database can implement it. Every
 * method is atomic; a write that resolved is durable (a kill -9 afterwards loses nothing). `put*`
 * inserts or replaces; `delete*` answers whether something was deleted.
 */
export interface SiteStore {
  getUser(username: string): Promise<UserRecord | undefined>;
  listUsers(): Promise<UserRecord[]>;
  putUser(user: UserRecord): Promise<void>;
  deleteUser(username: string): Promise<boolean>;

  getRole(rolename: string): Promise<RoleRecord | undefined>;
  listRoles(): Promise<RoleRecord[]>;
  putRole(role: RoleRecord): Promise<void>;
  deleteRole(rolename: string): Promise<boolean>;

  getService(key: string): Promise<ServiceRecord | undefined>;
  listServices(): Promise<ServiceRecord[]>;
  putService(service: ServiceRecord): Promise<void>;
  /** Deletes the service and its webhooks. */
  deleteService(key: string): Promise<boolean>;

  listWebhooks(service?: string): Promise<WebhookRecord[]>;
  putWebhook(hook: WebhookRecord): Promise<void>;
  deleteWebhook(id: string): Promise<boolean>;
  /** Sets `active` on every webhook of `service` in one transaction; answers how many there are. */
  setWebhooksActive(service: string, active: boolean): Promise<number>;

  listFederations(portalId?: string): Promise<FederationRecord[]>;
  putFederation(f: FederationRecord): Promise<void>;
  deleteFederation(id: string): Promise<boolean>;
  listIdentityProviders(portalId?: string): Promise<IdentityProviderRecord[]>;
  putIdentityProvider(idp: IdentityProviderRecord): Promise<void>;
  deleteIdentityProvider(id: string): Promise<boolean>;
  listFederatedServers(): Promise<FederatedServerRecord[]>;
  putFederatedServer(s: FederatedServerRecord): Promise<void>;
  deleteFederatedServer(id: string): Promise<boolean>;

  getOAuthApp(clientId: string): Promise<OAuthAppRecord | undefined>;
  listOAuthApps(): Promise<OAuthAppRecord[]>;
  putOAuthApp(app: OAuthAppRecord): Promise<void>;
  deleteOAuthApp(clientId: string): Promise<boolean>;
  putGrant(grant: OAuthGrantRecord): Promise<void>;
  /** Reads and deletes a grant in one step (codes are single-use; refresh tokens rotate). */
  takeGrant(id: string): Promise<OAuthGrantRecord | undefined>;
  /** Deletes every grant of a user (revokeToken, password change). */
  deleteGrantsOf(username: string): Promise<number>;

  getJob(id: string): Promise<JobRecord | undefined>;
  listJobs(): Promise<JobRecord[]>;
  putJob(job: JobRecord): Promise<void>;

  /** Site settings (signing keys, organization, token limits...): JSON values by key. */
  getSetting<T>(key: string): Promise<T | undefined>;
  putSetting(key: string, value: unknown): Promise<void>;

  /**
   * Takes the named lock for `holder` unless someone else holds it and it has not expired; answers
   * whether the caller holds it now. Locks expire after `ttlMs` so that a crashed holder frees them.
   */
  acquireLock(name: string, holder: string, ttlMs: number): Promise<boolean>;
  releaseLock(name: string, holder: string): Promise<void>;
  /** Current holder of a live lock, if any. */
  lockHolder(name: string): Promise<string | undefined>;

  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Configuration and deps

export interface SiteConfig {
  /** The organization's `allSSL`: every endpoint is HTTPS-only (generateToken always is). */
  readonly allSSL: boolean;
  /** Peer addresses whose `X-Forwarded-For` / `X-Forwarded-Proto` are believed (§0.5, §0.6). */
  readonly trustedProxies: readonly string[];
  /** Accept the vendor's `X-Esri-Authorization` header name (§0.4 item 3). */
  readonly headerAlias: boolean;
  /** generateToken `expiration` when absent (minutes). */
  readonly defaultTokenMinutes: number;
  /** Largest `expiration` accepted (minutes, at most 21600 = 15 days). */
  readonly maxTokenMinutes: number;
  /** OAuth access-token and long cookie lifetime (minutes; two weeks). */
  readonly oauthTokenMinutes: number;
  /** Failed sign-ins allowed per user and per address within `throttleWindowMs` before 429. */
  readonly throttleAttempts: number;
  readonly throttleWindowMs: number;
  /** The organization (the `<portal_id>` of federation register) and its name. */
  readonly portalId: string;
  readonly orgName: string;
  /** Where the database, site exports and job outputs live. */
  readonly dataDir: string;
  /** Absolute folders under which exportSite `location` and job `outFolder` may write (dataDir is always allowed). */
  readonly writableRoots: readonly string[];
  /** Public origin (`https://host:port`) when behind a proxy; else taken from each request. */
  readonly publicOrigin?: string;
  /** Image services: origins allowed by CORS when a service sets no `cors` of its own (default none; `*` any). */
  readonly corsOrigins?: readonly string[];
  /** Image service tiles: `Cache-Control` max-age in seconds when a service sets no `tileMaxAge` (default 3600). */
  readonly tileMaxAge?: number;
  /** The limits below, each defaulting to SITE_LIMITS (read them with `limitsOf`). */
  readonly maxBodyBytes?: number;
  readonly maxRuleDepth?: number;
  readonly maxRuleNodes?: number;
  readonly requestTimeoutMs?: number;
  readonly maxRenders?: number;
  readonly maxQueuedRenders?: number;
  readonly maxRendersPerClient?: number;
  readonly maxJobs?: number;
  readonly maxJobsPerUser?: number;
  readonly exportQuotaBytes?: number;
  /** Absolute folders the training-data task's input rasters and features may be read from. */
  readonly inputRoots?: readonly string[];
  /** Origins (`https://host[:port]`) whose URLs the training-data task may read inputs from. */
  readonly inputOrigins?: readonly string[];
}

/** The site's limits, every one a setting of the config file (SECURITY.md lists them). */
export interface SiteLimits {
  /** Largest request body (REST form or multipart, SOAP envelope), bytes. */
  readonly maxBodyBytes: number;
  /** Deepest nesting of a rendering rule (function arguments and variables). */
  readonly maxRuleDepth: number;
  /** Most raster functions one rendering rule may expand to (each use of a template counted). */
  readonly maxRuleNodes: number;
  /** Time budget of one request's render, ms (0: none); past it the render is cancelled. */
  readonly requestTimeoutMs: number;
  /** Renders running at once on the server. */
  readonly maxRenders: number;
  /** Renders waiting for a slot beyond which requests get "server busy". */
  readonly maxQueuedRenders: number;
  /** Renders running or waiting per client (its user when signed in, else its address). */
  readonly maxRendersPerClient: number;
  /** Training-data jobs waiting or executing on the server. */
  readonly maxJobs: number;
  /** Training-data jobs waiting or executing per user. */
  readonly maxJobsPerUser: number;
  /** Disk the outputs of training-data jobs may use in all, bytes. */
  readonly exportQuotaBytes: number;
}

/**
 * Default limits. Decision: renders 4 at once (2 cores; a render is CPU-bound, more only adds
 * memory), 60 s per request (the vendor's default maximum time a client may use a service).
 */
export const SITE_LIMITS: SiteLimits = {
  maxBodyBytes: 10 * 1024 * 1024,
  maxRuleDepth: 64,
  maxRuleNodes: 10_000,
  requestTimeoutMs: 60_000,
  maxRenders: 4,
  maxQueuedRenders: 1000,
  maxRendersPerClient: 32,
  maxJobs: 100,
  maxJobsPerUser: 10,
  exportQuotaBytes: 100 * 1024 ** 3,
};

/** The limits of a site: its settings over SITE_LIMITS. */
export function limitsOf(config: Partial<SiteConfig> | undefined): SiteLimits {
  const out: Record<string, number> = { ...SITE_LIMITS };
  for (const key of Object.keys(SITE_LIMITS) as (keyof SiteLimits)[]) {
    const v = config?.[key];
    if (typeof v === 'number') out[key] = v;
  }
  return out as unknown as SiteLimits;
}

export const DEFAULT_SITE_CONFIG: Omit<SiteConfig, 'portalId' | 'dataDir'> = {
  allSSL: false,
  trustedProxies: [],
  headerAlias: true,
  defaultTokenMinutes: 60,
  maxTokenMinutes: 21600,
  oauthTokenMinutes: 20160,
  throttleAttempts: 5,
  throttleWindowMs: 60_000,
  orgName: 'rasterflow',
  writableRoots: [],
};

/** Something that wants to know about site events (webhook delivery; logging). */
export interface SiteEvent {
  /** serviceKey of the service the event belongs to. */
  readonly service: string;
  /** e.g. `jobSucceeded`, `jobFailed`. */
  readonly changeType: string;
  readonly payload: Readonly<Record<string, unknown>>;
}

export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: Logger = { info: () => undefined, warn: () => undefined };

/** The deps of every site adapter. Each adapter declares the subset it uses with `Pick<SiteDeps, ...>`. */
export interface SiteDeps {
  readonly store: SiteStore;
  readonly clock: Clock;
  readonly config: SiteConfig;
  /** Signing keys, loaded from and saved to the store by the host. */
  readonly keys: KeyRing;
  /** Persist the key ring after a change (rotation, revocation). */
  saveKeys(): Promise<void>;
  /** Raise a site event (webhooks deliver it). */
  emit(event: SiteEvent): void;
  readonly log: Logger;
}

// ---------------------------------------------------------------------------------------------
// The connection a request came over

const peers = new WeakMap<Request, string>();

/** The host records each request's socket peer address here (a Request does not carry it). */
export function setPeerAddress(req: Request, address: string): Request {
  peers.set(req, normaliseAddress(address));
  return req;
}

/** `::ffff:127.0.0.1` -> `127.0.0.1`; other addresses unchanged. */
export function normaliseAddress(a: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(a);
  return m ? m[1]! : a;
}

/** The socket peer, or '' when the host recorded none (then no proxy is trusted and ip binding fails). */
export const peerAddress = (req: Request): string => peers.get(req) ?? '';

/** Whether the peer is a trusted proxy (§0.5). */
export const fromTrustedProxy = (req: Request, config: Pick<SiteConfig, 'trustedProxies'>): boolean =>
  config.trustedProxies.includes(peerAddress(req));

/**
 * The client address (§0.5): the socket peer, or, when the peer is a trusted proxy, the last
 * `X-Forwarded-For` entry (the address that proxy saw).
 */
export function clientAddress(req: Request, config: Pick<SiteConfig, 'trustedProxies'>): string {
  const peer = peerAddress(req);
  if (!fromTrustedProxy(req, config)) return peer;
  const xff = req.headers.get('x-forwarded-for');
  const last = xff?.split(',').pop()?.trim();
  return last ? normaliseAddress(last) : peer;
}

/** The public origin of the site for URLs in answers: the configured one, else the request's. */
export const originOf = (req: Request, config: Pick<SiteConfig, 'publicOrigin'>): string => config.publicOrigin ?? new URL(req.url).origin;

// ---------------------------------------------------------------------------------------------
// Service definitions and the site-backup lock

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,119}$/;

/**
 * A service definition as createService and `--config` take it:
 * `{serviceName, type, folderName?, description?, properties?}`. Errors name the field under `path`.
 */
export function parseServiceDefinition(json: unknown, now: number, path = 'service'): ServiceRecord {
  const at = (k: string): string => `${path}.${k}`;
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new EngineError('INVALID_ARGUMENT', `${path} must be a JSON object`, { path, details: [`'${path}' must be a JSON object.`] });
  }
  const o = json as Record<string, unknown>;
  const problems: string[] = [];
  const name = o['serviceName'];
  if (typeof name !== 'string' || !NAME.test(name)) problems.push(`'serviceName' must be 1 to 120 letters, digits, '_' or '-'.`);
  const type = o['type'];
  if (typeof type !== 'string' || !(SERVICE_TYPES as readonly string[]).includes(type)) {
    problems.push(`'type' must be one of ${SERVICE_TYPES.join(', ')}.`);
  }
  const folder = o['folderName'] ?? o['folder'] ?? '';
  if (typeof folder !== 'string' || (folder !== '' && !NAME.test(folder)))
    problems.push(`'folderName' must be letters, digits, '_' or '-'.`);
  const props = o['properties'] ?? {};
  if (typeof props !== 'object' || props === null || Array.isArray(props)) problems.push(`'properties' must be a JSON object.`);
  const description = o['description'];
  if (description !== undefined && typeof description !== 'string') problems.push(`'description' must be a string.`);
  if (problems.length > 0) {
    throw new EngineError('INVALID_ARGUMENT', `invalid service definition: ${problems.join(' ')}`, {
      path: at('serviceName'),
      details: problems,
    });
  }
  return {
    folder: folder as string,
    serviceName: name as string,
    type: type as ServiceType,
    properties: props as Record<string, unknown>,
    ...(description === undefined ? {} : { description: description as string }),
    created: now,
  };
}

/** The store lock exportSite holds while it runs. */
export const SITE_BACKUP_LOCK = 'exportSite';

/** Throws CONFLICT (409) while a site export runs: admin configuration changes wait for it (seed §4). */
export async function assertNoSiteBackup(deps: Pick<SiteDeps, 'store'>): Promise<void> {
  if ((await deps.store.lockHolder(SITE_BACKUP_LOCK)) !== undefined) {
    const msg = 'A site backup is in progress. Configuration changes are not allowed until it completes.';
    throw new EngineError('CONFLICT', msg, { details: [msg] });
  }
}

// ---------------------------------------------------------------------------------------------
// Server roots (protocols.md §1.5)

/**
 * A server root as federation compares it: lower-case scheme and host (URL does it), no default
 * port, no query or fragment, cut before `/rest/...`, `/admin/...` or `/tokens/...` (clients pass a
 * services URL or the root), no trailing slash. Undefined when `s` is not an absolute http(s) URL or carries credentials.
 */
export function normaliseServerUrl(s: string): string | undefined {
  const t = s.trim();
  if (!URL.canParse(t)) return undefined;
  const u = new URL(t);
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return undefined;
  if (u.username || u.password) return undefined;
  // Decision: the first `rest`, `admin` or `tokens` path segment ends the root (roots are `/server`, `/arcgis`...).
  const segments = u.pathname.split('/').filter((x) => x !== '');
  const cut = segments.findIndex((x) => ['rest', 'admin', 'tokens'].includes(x.toLowerCase()));
  const path = (cut < 0 ? segments : segments.slice(0, cut)).join('/');
  return `${u.protocol}//${u.host}${path ? `/${path}` : ''}`;
}

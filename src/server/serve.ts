/**
 * `rasterflow serve`: opens the site in a data folder (the SQLite store, or a PostgreSQL one shared by
 * several servers; signing keys, the primary administrator on first start, services and federated
 * servers from the config), and serves every adapter route over HTTPS (and plain HTTP when asked) on
 * @hono/node-server. close() drains: it stops accepting, lets the requests in flight finish, runs the
 * shutdown hooks and closes the store.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { createAdaptorServer } from '@hono/node-server';
import { EngineError } from '../core/errors.js';
import { clearOwnStaleSiteBackupLock } from '../adapters/admin/export-site.js';
import { startWebhookDelivery } from '../adapters/admin/webhook-delivery.js';
import { setBodyLimit, type Route } from '../adapters/rest.js';
import { limitsOf, parseServiceDefinition, serviceKey, type Logger, type ServiceRecord, type SiteStore } from '../adapters/site.js';
import type { Clock } from '../adapters/tokens.js';
import { createApp } from './app.js';
import { EMPTY_CONFIG, loadConfig, parseConfig, type ServerConfig } from './config.js';
import { createGpService } from '../adapters/gp/training-data-task.js';
import { GENERATE_TASK_KEY, generateRasterTask } from '../adapters/gp/generate-raster-task.js';
import { imageServicesOf } from '../adapters/image/service.js';
import { mapServicesOf } from '../adapters/map/service.js';
import { siteRoutes } from './routes.js';
import { ensurePrimaryAdministrator, openSite, type Site } from './site.js';
import { isPostgresUrl, openPgStore, redactUrl } from './pg-store.js';
import { leaseJobs, serverIdOf } from './job-leases.js';
import { hasChangeFeed, startSiteSync, withStoreLock, type SiteSync } from './site-events.js';
import { openSqliteStore } from './sqlite-store.js';
import { siteTls, type TlsMaterial } from './tls.js';

export const DEFAULT_DATA_DIR = './rasterflow-site';
export const DEFAULT_HTTPS_PORT = 6443;
export const DEFAULT_HOST = '127.0.0.1';
/** How long close() waits for requests in flight before cutting their connections. */
export const DEFAULT_DRAIN_MS = 30_000;
/** How long close() waits for webhook deliveries (retries included) before dropping them. */
export const WEBHOOK_DRAIN_MS = 10_000;

/** The geoprocessing service that hosts the training-data task: it always exists. */
export const SYSTEM_GP_SERVICE = { folder: 'System', serviceName: 'RasterAnalysisTools', type: 'GPServer' } as const;

export type ShutdownHook = () => void | Promise<void>;

/** `--queue`: the queue client and the GP runner's hook (loaded only then: BullMQ stays off the start-up path). */
async function openGpQueue(url: string): Promise<{
  hook: import('../adapters/gp/jobs.js').JobQueueHook;
  /** GenerateRaster's jobs as render jobs on the queue. */
  render: (limits: import('../adapters/gp/generate-raster-task.js').GenerateLimits) => import('../adapters/gp/jobs.js').TaskQueueHook;
  close(): Promise<void>;
}> {
  const { parseQueueUrl } = await import('../queue/connection.js');
  const { openQueueClient } = await import('../queue/worker.js');
  const { gpQueueHook, gpRenderHook } = await import('../queue/gp.js');
  const client = await openQueueClient(parseQueueUrl(url));
  return { hook: gpQueueHook(client), render: (limits) => gpRenderHook(client, { limits }), close: () => client.close() };
}

export interface ServeOptions {
  /** Data folder (created when missing): `site.db`, `tls/`. Default `./rasterflow-site`. */
  readonly dataDir?: string;
  /** HTTPS port (default 6443; 0 picks a free one). */
  readonly port?: number;
  /** Plain HTTP port; no HTTP listener unless given (0 picks a free one). */
  readonly httpPort?: number;
  /** Interface to listen on (default 127.0.0.1). */
  readonly host?: string;
  /** A config file (see config.ts). */
  readonly configFile?: string;
  /** A config object (as the file would hold it), instead of configFile. */
  readonly config?: unknown;
  /**
   * The site store: a `postgres://` URL shared by several servers (over the config's `store`);
   * default SQLite `site.db` in the data folder.
   */
  readonly store?: string;
  /** Where RASTERFLOW_ADMIN_USERNAME / RASTERFLOW_ADMIN_PASSWORD are read (default process.env). */
  readonly env?: NodeJS.ProcessEnv;
  /** Request and event log (default: silent). */
  readonly log?: Logger;
  /** Start-up lines for the operator: URLs, the generated password, warnings (default stderr). */
  readonly print?: (line: string) => void;
  /** Routes to mount instead of every family's (tests). */
  readonly routes?: readonly Route[] | ((site: Site) => readonly Route[]);
  readonly clock?: Clock;
  /** How long close() waits for requests in flight (default 30 s). */
  readonly drainMs?: number;
  /**
   * The job queue's Redis (`redis://host:port`): training-data and GenerateRaster jobs run on `rasterflow worker`
   * processes instead of in this one, and go on while the server restarts.
   */
  readonly queue?: string;
}

export interface RunningServer {
  /** `https://host:port` (no path). */
  readonly httpsUrl: string;
  /** `http://host:port` when the HTTP listener is on. */
  readonly httpUrl?: string;
  readonly site: Site;
  /** The freshness check of the in-memory site state against a shared store (its counters). */
  readonly sync: SiteSync;
  /** Absolute data folder. */
  readonly dataDir: string;
  readonly tls: TlsMaterial;
  /** Requests being answered right now. */
  inFlight(): number;
  /** Register work to finish on close (webhook delivery drain, job cancellation); run in order after the listeners stop. */
  onClose(hook: ShutdownHook): void;
  /** Stop accepting, wait for requests in flight, run the shutdown hooks, close the store. Idempotent. */
  close(): Promise<void>;
}

/** `host:port` for a URL: IPv6 in brackets, a wildcard address shown as localhost. */
export function urlHost(host: string, port: number): string {
  const shown = host === '0.0.0.0' || host === '::' || host === '' ? 'localhost' : host;
  return `${shown.includes(':') ? `[${shown}]` : shown}:${port}`;
}

/** A logger writing one line per event: `info request method=GET path=/x status=200 ms=1.2 client=127.0.0.1`. */
export function lineLogger(write: (line: string) => void): Logger {
  const line = (level: string, msg: string, fields?: Record<string, unknown>): void => {
    const rest = Object.entries(fields ?? {})
      .map(([k, v]) => `${k}=${typeof v === 'string' && /\s/.test(v) ? JSON.stringify(v) : String(v)}`)
      .join(' ');
    write(`${new Date().toISOString()} ${level} ${msg}${rest ? ` ${rest}` : ''}`);
  };
  return { info: (m, f) => line('info', m, f), warn: (m, f) => line('warn', m, f) };
}

function readConfig(options: ServeOptions): ServerConfig {
  if (options.configFile !== undefined) return loadConfig(options.configFile);
  if (options.config !== undefined) return parseConfig(options.config, 'config');
  return EMPTY_CONFIG;
}

function checkPort(value: number, name: string): void {
  if (!Number.isInteger(value) || value < 0 || value > 65535) {
    throw new EngineError('INVALID_ARGUMENT', `${name} must be a port number from 0 to 65535, got ${value}`, { path: name });
  }
}

/**
 * Connections the kernel holds for the server before it accepts them. Decision: 2048, not Node's 511:
 * a burst of more new clients than the backlog overflows it and the surplus connections wait for
 * SYN retransmissions (1, 3, 7, 15, 31 s), the 20-30 s tail of a 1,000-client load. The kernel
 * caps it at net.core.somaxconn.
 */
export const LISTEN_BACKLOG = 2048;

function listen(server: HttpServer, port: number, host: string, name: string): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const onError = (e: NodeJS.ErrnoException): void => {
      server.off('listening', onListening);
      const why =
        e.code === 'EADDRINUSE' ? 'is in use' : e.code === 'EACCES' ? 'needs more privileges' : `cannot be opened (${e.code ?? e.message})`;
      reject(new EngineError('INVALID_ARGUMENT', `port ${port} on ${host} ${why}`, { path: name, cause: e }));
    };
    const onListening = (): void => {
      server.off('error', onError);
      resolvePort((server.address() as AddressInfo).port);
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen({ port, host, backlog: LISTEN_BACKLOG });
  });
}

/** Starts the site. Rejects (closing what it opened) when the config, the certificate or a port is wrong. */
export async function startServer(options: ServeOptions = {}): Promise<RunningServer> {
  const print = options.print ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const env = options.env ?? process.env;
  const host = options.host ?? DEFAULT_HOST;
  const port = options.port ?? DEFAULT_HTTPS_PORT;
  checkPort(port, 'port');
  if (options.httpPort !== undefined) checkPort(options.httpPort, 'http-port');
  const config = readConfig(options);
  for (const w of config.warnings) print(`warning: ${w}`);

  const dataDir = resolve(options.dataDir ?? DEFAULT_DATA_DIR);
  // Decision: the data folder holds password hashes and the TLS key: only its owner may read it.
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const tls = await siteTls(dataDir, config.tls);
  if (tls.origin === 'generated') print(`created a self-signed certificate ${tls.certFile} (SHA-256 ${tls.fingerprint})`);

  // The jobs this server runs are leased in the store, so that other servers on it leave them alone (job-leases.ts).
  const leases = leaseJobs(
    await openStore(options.store ?? config.store, dataDir, options.clock, options.log),
    serverIdOf(dataDir),
    options.log ? { log: options.log } : {},
  );
  const { store } = leases;
  const hooks: ShutdownHook[] = [];
  const lastHooks: ShutdownHook[] = [];
  let stopDelivery = (): void => undefined;
  const servers: HttpServer[] = [];
  try {
    // Servers starting at once on one shared store: one at a time makes the organization id, the
    // signing keys, the primary administrator and the config's services (the others then find them).
    const site = await withStoreLock(
      store,
      STARTUP_LOCK,
      async () => {
        const opened = await openSite({
          store,
          dataDir,
          config: config.settings,
          ...(options.clock ? { clock: options.clock } : {}),
          ...(options.log ? { log: options.log } : {}),
        });

        const username = env['RASTERFLOW_ADMIN_USERNAME'] || 'admin';
        const created = await ensurePrimaryAdministrator(opened, username, env['RASTERFLOW_ADMIN_PASSWORD']);
        if (created?.generatedPassword !== undefined) {
          print(`created the primary site administrator '${created.username}' with the password: ${created.generatedPassword}`);
          print('  (shown this once; set RASTERFLOW_ADMIN_PASSWORD before the first start to choose it)');
        } else if (created) {
          print(`created the primary site administrator '${created.username}' with the password from RASTERFLOW_ADMIN_PASSWORD`);
        }

        await seedServices(opened, config);
        await registerFederatedServers(opened, config);
        return opened;
      },
      30_000,
      60_000,
      `${STARTUP_LOCK}:${leases.serverId}`,
    );
    // Several servers on one store: tokens are signed and verified with the keys as the store has them now.
    const sync = startSiteSync(site);
    lastHooks.push(() => sync.stop());

    // Webhooks: delivered while the site runs. On close they drain after the registered hooks (a job
    // cancelled by one still has its event delivered), for at most WEBHOOK_DRAIN_MS.
    const delivery = startWebhookDelivery(site, (listener) => site.on(listener));
    stopDelivery = () => delivery.stop();
    lastHooks.push(async () => {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([delivery.drain(), new Promise<void>((done) => (timer = setTimeout(done, WEBHOOK_DRAIN_MS)))]);
      clearTimeout(timer);
      delivery.stop();
    });

    // The training-data task: jobs a previous run left unfinished are failed first (see recoverJobs),
    // then the service runs jobs until close() cancels the ones still waiting or running. On a shared
    // store, jobs other live servers run are left to them, and those of a server that stopped are
    // failed by the periodic sweep of any server. With a job queue, unfinished jobs went on on the
    // queue: they are followed again instead (below), and none is failed or swept.
    const queue = options.queue === undefined ? undefined : await openGpQueue(options.queue);
    if (queue === undefined) {
      await leases.recover(site, true);
      if (hasChangeFeed(store)) leases.startSweeping(site);
    }
    lastHooks.push(() => leases.stop());
    // A site backup lease this server's own killed run left is released now, not after its time to live.
    const staleLease = await clearOwnStaleSiteBackupLock(site);
    if (staleLease !== undefined) print('released the site backup lock left by an earlier run of this server that was stopped by force');
    // A cancel asked of this server for a job another server runs is passed on to it (job-leases.ts).
    const ruleLimits = { maxRuleDepth: limitsOf(site.config).maxRuleDepth, maxRuleNodes: limitsOf(site.config).maxRuleNodes };
    const gp = createGpService(site, {
      cancelElsewhere: (job) => leases.requestCancel(job),
      ...(queue
        ? {
            queue: queue.hook,
            tasks: { [GENERATE_TASK_KEY]: generateRasterTask({ queue: queue.render(ruleLimits), limits: ruleLimits }) },
          }
        : {}),
    });
    leases.onCancelRequest((id) => gp.runner.cancel(id));
    hooks.push(() => gp.close());
    if (queue) {
      const adopted = await gp.runner.adoptUnfinished();
      if (adopted > 0) print(`following ${adopted} geoprocessing job(s) an earlier run left on the job queue`);
      hooks.push(() => queue.close());
    }
    // Image services keep their rasters open between requests: release them on close.
    hooks.push(() => imageServicesOf(site).close());
    // Map services keep their feature stores and rasters open: release them on close too.
    hooks.push(() => mapServicesOf(site).close());

    const given = typeof options.routes === 'function' ? options.routes(site) : (options.routes ?? siteRoutes(site, gp.routes()));
    // The site's maxBodyBytes applies to every body a route reads with readParams.
    const maxBodyBytes = limitsOf(site.config).maxBodyBytes;
    const routes = given.map((r) => ({ ...r, handler: (req: Request) => r.handler(setBodyLimit(req, maxBodyBytes)) }));
    const app = createApp(site, routes, options.log ? { log: options.log } : {});

    const inFlight = new Set<ServerResponse>();
    let closing = false;
    let drained: (() => void) | undefined;
    const track = (server: HttpServer): void => {
      // Decision: idle keep-alive connections are kept 65 s (Node's default is 5 s). SOAP and REST
      // clients (requests/zeep, axios/node-soap) reuse pooled connections; a server that closes one
      // just as the client sends on it loses that request ("remote end closed connection"), and a busy
      // event loop makes the 5 s timer fire late, right when the next request is already there.
      server.keepAliveTimeout = 65_000;
      server.headersTimeout = 66_000;
      server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
        inFlight.add(res);
        res.on('close', () => {
          inFlight.delete(res);
          if (closing) {
            // A finished keep-alive connection would hold close() open: let it go.
            setImmediate(() => server.closeIdleConnections());
            if (inFlight.size === 0) drained?.();
          }
        });
      });
    };

    const https = createAdaptorServer({
      fetch: app.fetch,
      hostname: host,
      createServer: createHttpsServer,
      serverOptions: { key: tls.key, cert: tls.cert },
    }) as HttpServer;
    servers.push(https);
    track(https);
    const httpsPort = await listen(https, port, host, 'port');
    const httpsUrl = `https://${urlHost(host, httpsPort)}`;

    let httpUrl: string | undefined;
    if (options.httpPort !== undefined) {
      const http = createAdaptorServer({ fetch: app.fetch, hostname: host, createServer: createHttpServer }) as HttpServer;
      servers.push(http);
      track(http);
      httpUrl = `http://${urlHost(host, await listen(http, options.httpPort, host, 'http-port'))}`;
    }

    if ('url' in store && typeof store.url === 'string') print(`site store: ${store.url}`);
    for (const origin of [httpsUrl, ...(httpUrl ? [httpUrl] : [])]) {
      print(`portal:   ${origin}/portal/sharing/rest`);
      print(`admin:    ${origin}/server/admin`);
      print(`services: ${origin}/server/rest/services`);
      print(`SOAP map services: ${origin}/server/services/<name>/MapServer (WSDL: ?wsdl)`);
    }

    let closed: Promise<void> | undefined;
    const close = (): Promise<void> =>
      (closed ??= (async () => {
        closing = true;
        const stopped = Promise.all(servers.map((s) => new Promise<void>((done) => s.close(() => done()))));
        for (const s of servers) s.closeIdleConnections();
        if (inFlight.size > 0) {
          await new Promise<void>((done) => {
            drained = done;
            setTimeout(done, options.drainMs ?? DEFAULT_DRAIN_MS).unref();
          });
        }
        for (const s of servers) s.closeAllConnections();
        await stopped;
        for (const hook of [...hooks, ...lastHooks]) {
          try {
            await hook();
          } catch (e) {
            site.log.warn('a shutdown hook failed', { error: e instanceof Error ? e.message : String(e) });
          }
        }
        await store.close();
      })());

    return {
      httpsUrl,
      ...(httpUrl ? { httpUrl } : {}),
      site,
      sync,
      dataDir,
      tls,
      inFlight: () => inFlight.size,
      onClose: (hook) => void hooks.push(hook),
      close,
    };
  } catch (e) {
    stopDelivery();
    leases.stop();
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
    await store.close();
    throw e;
  }
}

/** The store lock servers hold while they set a shared site up at start-up. */
export const STARTUP_LOCK = 'siteStartup';

/**
 * Opens the site store: PostgreSQL for a `postgres://` URL, else the embedded SQLite `site.db`.
 *
 * Decision: the features that were about `site.db` work with either store, because they never
 * touched the file: exportSite writes the store's records (collectSite reads them through the store
 * interface) and importSite writes them back the same way, so an archive moves a site between the two
 * stores; the site backup lock is a store lock, which on PostgreSQL holds across every server of the
 * site. Backing up the database itself is the database's business (pg_dump; SQLite's .backup).
 */
export async function openStore(url: string | undefined, dataDir: string, clock?: Clock, log?: Logger): Promise<SiteStore> {
  if (url === undefined || url.trim() === '') return openSqliteStore(join(dataDir, 'site.db'), clock ? { clock } : {});
  if (!isPostgresUrl(url)) {
    throw new EngineError(
      'INVALID_ARGUMENT',
      `--store ${redactUrl(url)}: not a postgres:// URL; expected postgres://user@host:5432/database`,
      {
        path: 'store',
      },
    );
  }
  return openPgStore(url, {
    ...(clock ? { clock } : {}),
    onError: (e) => log?.warn('a site store connection failed; it is replaced', { error: e.message }),
  });
}

/** Creates or replaces the config's services (keeping their creation time) and the System GP service. */
async function seedServices(site: Site, config: ServerConfig): Promise<void> {
  const now = site.clock.now();
  const wanted: ServiceRecord[] = config.services.map((s) => ({ ...s, created: now }));
  const system = parseServiceDefinition(
    { folderName: SYSTEM_GP_SERVICE.folder, serviceName: SYSTEM_GP_SERVICE.serviceName, type: SYSTEM_GP_SERVICE.type },
    now,
  );
  if (!wanted.some((s) => serviceKey(s) === serviceKey(system)) && !(await site.store.getService(serviceKey(system)))) wanted.push(system);
  for (const s of wanted) {
    const existing = await site.store.getService(serviceKey(s));
    await site.store.putService(existing ? { ...s, created: existing.created } : s);
  }
}

/** Registers the config's federated servers (URLs normalised), keeping the id of one already known. */
async function registerFederatedServers(site: Site, config: ServerConfig): Promise<void> {
  if (config.federatedServers.length === 0) return;
  const known = await site.store.listFederatedServers();
  for (const f of config.federatedServers) {
    const existing = known.find((k) => k.url.toLowerCase() === f.url.toLowerCase());
    await site.store.putFederatedServer({ ...existing, id: existing?.id ?? randomUUID(), url: f.url, ...(f.name ? { name: f.name } : {}) });
  }
}

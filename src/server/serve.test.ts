import { X509Certificate } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyPassword } from '../adapters/auth.js';
import { peerAddress, type Logger } from '../adapters/site.js';
import type { Route } from '../adapters/rest.js';
import { EngineError } from '../core/errors.js';
import { httpCall } from '../../test/serve-helpers.js';
import { startServer, urlHost, type RunningServer, type ServeOptions } from './serve.js';
import { openSqliteStore } from './sqlite-store.js';

const running: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()));
});

const tempDir = (): string => mkdtempSync(join(tmpdir(), 'rf-serve-'));

/** A route answering the scheme of its URL and the peer the host recorded. */
const whoami: Route = {
  method: 'ALL',
  path: '/test/whoami',
  handler: (req) => Promise.resolve(Response.json({ url: req.url, peer: peerAddress(req), method: req.method })),
};

async function start(options: ServeOptions & { lines?: string[] }): Promise<RunningServer> {
  const lines = options.lines ?? [];
  const s = await startServer({
    port: 0,
    env: { RASTERFLOW_ADMIN_PASSWORD: 'admin-pw-123' },
    routes: [whoami],
    print: (l) => void lines.push(l),
    ...options,
  });
  running.push(s);
  return s;
}

describe('startServer', () => {
  it('serves mounted routes over HTTPS and plain HTTP with the right scheme and peer address', async () => {
    const dataDir = tempDir();
    const lines: string[] = [];
    const s = await start({ dataDir, httpPort: 0, lines });
    expect(s.httpsUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(s.httpUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const ca = readFileSync(join(dataDir, 'tls', 'cert.pem'), 'utf8');
    const tls = await httpCall(`${s.httpsUrl}/test/whoami?f=json`, { ca });
    expect(tls.status).toBe(200);
    expect(JSON.parse(tls.body)).toEqual({ url: `${s.httpsUrl}/test/whoami?f=json`, peer: '127.0.0.1', method: 'GET' });
    const plain = await httpCall(`${s.httpUrl!}/test/whoami`, { body: 'a=1' });
    expect(JSON.parse(plain.body)).toEqual({ url: `${s.httpUrl!}/test/whoami`, peer: '127.0.0.1', method: 'POST' });
    // Unknown paths: the JSON 404 over the wire too.
    const missing = await httpCall(`${s.httpsUrl}/nope`, { ca });
    expect(missing.status).toBe(404);
    expect(missing.body).toBe('{"error":{"code":404,"message":"Not found.","details":[]}}');
    // The operator is told where everything is.
    for (const origin of [s.httpsUrl, s.httpUrl!]) {
      expect(lines).toContain(`portal:   ${origin}/portal/sharing/rest`);
      expect(lines).toContain(`admin:    ${origin}/server/admin`);
      expect(lines).toContain(`services: ${origin}/server/rest/services`);
    }
  });

  it('listens on ::1 when asked, with the peer address as IPv6', async () => {
    const dataDir = tempDir();
    const s = await start({ dataDir, host: '::1' });
    expect(s.httpsUrl).toMatch(/^https:\/\/\[::1\]:\d+$/);
    const ca = readFileSync(join(dataDir, 'tls', 'cert.pem'), 'utf8');
    const r = await httpCall(`${s.httpsUrl}/test/whoami`, { ca });
    expect(JSON.parse(r.body)).toMatchObject({ peer: '::1' });
  });

  it('has no HTTP listener unless httpPort is given', async () => {
    const s = await start({ dataDir: tempDir() });
    expect(s.httpUrl).toBeUndefined();
  });

  it('makes a self-signed certificate for localhost once and reuses it; the key is private', async () => {
    const dataDir = tempDir();
    const lines: string[] = [];
    const first = await start({ dataDir, lines });
    const cert = new X509Certificate(readFileSync(join(dataDir, 'tls', 'cert.pem')));
    expect(cert.subject).toContain('CN=localhost');
    expect(cert.subjectAltName).toContain('DNS:localhost');
    expect(cert.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(cert.subjectAltName).toMatch(/IP Address:0:0:0:0:0:0:0:1|IP Address:::1/);
    const days = (Date.parse(cert.validTo) - Date.parse(cert.validFrom)) / 86_400_000;
    expect(Math.round(days)).toBe(825);
    expect(statSync(join(dataDir, 'tls', 'key.pem')).mode & 0o777).toBe(0o600);
    expect(first.tls.origin).toBe('generated');
    expect(lines.some((l) => l.startsWith('created a self-signed certificate'))).toBe(true);
    // Verifies against the generated certificate by name too.
    const byName = await httpCall(`${first.httpsUrl.replace('127.0.0.1', 'localhost')}/test/whoami`, {
      ca: readFileSync(join(dataDir, 'tls', 'cert.pem'), 'utf8'),
    });
    expect(byName.status).toBe(200);
    // Without the CA the certificate is not trusted.
    await expect(httpCall(`${first.httpsUrl}/test/whoami`)).rejects.toThrow(/self[- ]signed|certificate/i);
    await first.close();

    const again: string[] = [];
    const second = await start({ dataDir, lines: again });
    expect(second.tls.origin).toBe('self-signed');
    expect(second.tls.fingerprint).toBe(first.tls.fingerprint);
    expect(again.some((l) => l.includes('self-signed'))).toBe(false);
  });

  it('uses the certificate and key of the config, relative to the config file', async () => {
    const dir = tempDir();
    const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
      keyType: 'ec',
      algorithm: 'sha256',
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
    });
    writeFileSync(join(dir, 'c.pem'), pems.cert);
    writeFileSync(join(dir, 'k.pem'), pems.private);
    writeFileSync(join(dir, 'site.json'), JSON.stringify({ tls: { cert: 'c.pem', key: 'k.pem' } }));
    const dataDir = join(dir, 'data');
    const s = await start({ dataDir, configFile: join(dir, 'site.json') });
    expect(s.tls.origin).toBe('config');
    expect((await httpCall(`${s.httpsUrl}/test/whoami`, { ca: pems.cert })).status).toBe(200);
    expect(() => statSync(join(dataDir, 'tls'))).toThrow();

    // A key that is not the certificate's is refused at start.
    const other = await generate([{ name: 'commonName', value: 'x' }], { keyType: 'ec' });
    writeFileSync(join(dir, 'k2.pem'), other.private);
    await expect(
      startServer({ dataDir, port: 0, print: () => undefined, config: { tls: { cert: join(dir, 'c.pem'), key: join(dir, 'k2.pem') } } }),
    ).rejects.toThrow(/is not the private key of/);
    await expect(
      startServer({ dataDir, port: 0, print: () => undefined, config: { tls: { cert: join(dir, 'none.pem'), key: join(dir, 'k.pem') } } }),
    ).rejects.toThrow(/cannot read the TLS certificate .*none\.pem: ENOENT/);
  });

  it('creates the primary administrator from the environment on first start only', async () => {
    const dataDir = tempDir();
    const lines: string[] = [];
    const s = await start({ dataDir, lines, env: { RASTERFLOW_ADMIN_USERNAME: 'siteadmin', RASTERFLOW_ADMIN_PASSWORD: 'from-env-pw' } });
    const user = await s.site.store.getUser('siteadmin');
    expect(user).toMatchObject({ role: 'administrator', primary: true });
    expect(await verifyPassword('from-env-pw', user!.passwordHash)).toBe(true);
    expect(lines.join('\n')).not.toContain('from-env-pw');
    expect(lines).toContain("created the primary site administrator 'siteadmin' with the password from RASTERFLOW_ADMIN_PASSWORD");
    await s.close();
    // A later start with other credentials changes nothing.
    const later: string[] = [];
    const t = await start({ dataDir, lines: later, env: { RASTERFLOW_ADMIN_USERNAME: 'other', RASTERFLOW_ADMIN_PASSWORD: 'x' } });
    expect(await t.site.store.getUser('other')).toBeUndefined();
    expect(later.some((l) => l.includes('administrator'))).toBe(false);
  });

  it('prints a generated administrator password exactly once, on the first start', async () => {
    const dataDir = tempDir();
    const lines: string[] = [];
    const s = await start({ dataDir, lines, env: {} });
    const said = lines.filter((l) => l.includes('password'));
    const m = /created the primary site administrator 'admin' with the password: (\S+)$/.exec(said[0] ?? '');
    expect(m).not.toBeNull();
    expect(lines.filter((l) => l.includes(m![1]!))).toHaveLength(1);
    expect(await verifyPassword(m![1]!, (await s.site.store.getUser('admin'))!.passwordHash)).toBe(true);
    await s.close();
    const again: string[] = [];
    await start({ dataDir, lines: again, env: {} });
    expect(again.some((l) => /password|administrator/.test(l))).toBe(false);
  });

  it('seeds the services of the config and always has System/RasterAnalysisTools.GPServer', async () => {
    const dataDir = tempDir();
    const s = await start({
      dataDir,
      config: {
        services: [{ serviceName: 'Elevation', type: 'ImageServer', folderName: 'Terrain', properties: { path: '/data/dem.tif' } }],
      },
    });
    const keys = (await s.site.store.listServices()).map((x) => `${x.folder}/${x.serviceName}.${x.type}`).sort();
    expect(keys).toEqual(['System/RasterAnalysisTools.GPServer', 'Terrain/Elevation.ImageServer']);
    const created = (await s.site.store.getService('Terrain/Elevation.ImageServer'))!.created;
    await s.close();
    // A second start replaces the definition (upsert) but keeps when it was created.
    const t = await start({
      dataDir,
      config: {
        services: [{ serviceName: 'Elevation', type: 'ImageServer', folderName: 'Terrain', properties: { path: '/data/dem2.tif' } }],
      },
    });
    const again = await t.site.store.getService('Terrain/Elevation.ImageServer');
    expect(again).toMatchObject({ properties: { path: '/data/dem2.tif' }, created });
    expect(await t.site.store.getService('System/RasterAnalysisTools.GPServer')).toBeDefined();
  });

  it('registers the federated servers of the config with normalised URLs, once', async () => {
    const dataDir = tempDir();
    const config = { federatedServers: [{ url: 'HTTPS://GIS.Example.com:443/server/', name: 'gis' }] };
    const s = await start({ dataDir, config });
    const first = await s.site.store.listFederatedServers();
    expect(first).toEqual([{ id: expect.any(String) as string, url: 'https://gis.example.com/server', name: 'gis' }]);
    await s.close();
    const t = await start({ dataDir, config });
    expect(await t.site.store.listFederatedServers()).toEqual(first);
  });

  it('applies the settings of the config to the site and warns about a short token maximum', async () => {
    const lines: string[] = [];
    const s = await start({ dataDir: tempDir(), lines, config: { settings: { maxTokenMinutes: 120, orgName: 'Acme', allSSL: true } } });
    expect(s.site.config).toMatchObject({ maxTokenMinutes: 120, orgName: 'Acme', allSSL: true });
    expect(lines.some((l) => l.startsWith('warning: config: settings.maxTokenMinutes is 120'))).toBe(true);
  });

  it('refuses a bad config, naming the path, before opening anything', async () => {
    const dataDir = join(tempDir(), 'never');
    const e = await startServer({ dataDir, port: 0, config: { settings: { allSSL: 1 } }, print: () => undefined }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(EngineError);
    expect((e as EngineError).issues[0]).toMatchObject({ path: 'settings.allSSL' });
    expect(() => statSync(dataDir)).toThrow();
  });

  it('refuses a port in use and closes its store', async () => {
    const s = await start({ dataDir: tempDir() });
    const port = Number(new URL(s.httpsUrl).port);
    const dataDir = tempDir();
    await expect(startServer({ dataDir, port, print: () => undefined })).rejects.toThrow(`port ${port} on 127.0.0.1 is in use`);
    // The store was closed: it opens again at once.
    const store = openSqliteStore(join(dataDir, 'site.db'));
    expect(await store.listUsers()).toHaveLength(1);
    await store.close();
    await expect(startServer({ dataDir, port: 70000 })).rejects.toThrow(/port must be a port number/);
  });

  it('close() lets requests in flight finish, refuses new connections, runs the shutdown hooks, closes the store', async () => {
    const dataDir = tempDir();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const slow: Route = {
      method: 'GET',
      path: '/test/slow',
      handler: async () => {
        entered();
        await gate;
        return new Response('done');
      },
    };
    const order: string[] = [];
    const s = await startServer({
      dataDir,
      port: 0,
      httpPort: 0,
      routes: [slow],
      print: () => undefined,
      env: { RASTERFLOW_ADMIN_PASSWORD: 'p' },
    });
    s.onClose(() => void order.push('hook 1'));
    s.onClose(async () => {
      await new Promise((r) => setTimeout(r, 10));
      order.push('hook 2');
    });
    s.onClose(() => {
      throw new Error('a failing hook does not stop the others');
    });
    s.onClose(() => void order.push('hook 4'));
    const pending = httpCall(`${s.httpUrl!}/test/slow`);
    await inside;
    expect(s.inFlight()).toBe(1);
    const closing = s.close();
    expect(s.close()).toBe(closing);
    await new Promise((r) => setTimeout(r, 50));
    // Still waiting for the request; no new connection is accepted.
    expect(order).toEqual([]);
    await expect(httpCall(`${s.httpUrl!}/test/whoami`)).rejects.toThrow(/ECONNREFUSED|ECONNRESET/);
    release();
    const res = await pending;
    expect(res).toMatchObject({ status: 200, body: 'done' });
    await closing;
    expect(order).toEqual(['hook 1', 'hook 2', 'hook 4']);
    await expect(s.site.store.listUsers()).rejects.toThrow();
  });

  it('delivers webhooks while running and lets pending deliveries finish on close, after the registered hooks', async () => {
    const received: { body: string; at: number }[] = [];
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        setTimeout(() => {
          received.push({ body, at: Date.now() });
          res.end('ok');
        }, 200);
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    try {
      const s = await startServer({ dataDir: tempDir(), port: 0, routes: [], print: () => undefined });
      const service = 'System/RasterAnalysisTools.GPServer';
      await s.site.store.putWebhook({
        id: 'h1',
        service,
        name: 'hook',
        changeTypes: ['*'],
        hookUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
        signatureKey: '',
        active: true,
        created: 0,
      });
      let hookRanAt = 0;
      s.onClose(() => {
        hookRanAt = Date.now();
        s.site.emit({ service, changeType: 'jobFailed', payload: { jobId: 'j2' } });
      });
      s.site.emit({ service, changeType: 'jobSucceeded', payload: { jobId: 'j1' } });
      await s.close();
      const bodies = received.map((r) => JSON.parse(r.body) as { changeType: string });
      expect(bodies.map((b) => b.changeType).sort()).toEqual(['jobFailed', 'jobSucceeded']);
      expect(hookRanAt).toBeGreaterThan(0);
    } finally {
      receiver.close();
    }
  });

  it('close() cuts requests that outlive the drain limit', async () => {
    const never: Route = { method: 'GET', path: '/test/never', handler: () => new Promise<Response>(() => undefined) };
    const s = await startServer({ dataDir: tempDir(), port: 0, httpPort: 0, routes: [never], print: () => undefined, drainMs: 100 });
    const pending = httpCall(`${s.httpUrl!}/test/never`).catch((e: Error) => e);
    while (s.inFlight() === 0) await new Promise((r) => setTimeout(r, 5));
    const started = Date.now();
    await s.close();
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await pending).toBeInstanceOf(Error);
  });

  it('logs each request through the given logger without secrets', async () => {
    const lines: string[] = [];
    const log: Logger = {
      info: (m, f) => void lines.push(`${m} ${JSON.stringify(f)}`),
      warn: (m, f) => void lines.push(`${m} ${JSON.stringify(f)}`),
    };
    const s = await start({ dataDir: tempDir(), httpPort: 0, log });
    await httpCall(`${s.httpUrl!}/test/whoami?token=SECRET1`, { headers: { authorization: 'Bearer SECRET2' }, body: 'password=SECRET3' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('"method":"POST"');
    expect(lines[0]).toContain('"client":"127.0.0.1"');
    expect(lines.join()).not.toMatch(/SECRET/);
  });
});

describe('urlHost', () => {
  it('brackets IPv6 and shows wildcard addresses as localhost', () => {
    expect(urlHost('127.0.0.1', 1)).toBe('127.0.0.1:1');
    expect(urlHost('::1', 2)).toBe('[::1]:2');
    expect(urlHost('0.0.0.0', 3)).toBe('localhost:3');
    expect(urlHost('::', 4)).toBe('localhost:4');
  });
});

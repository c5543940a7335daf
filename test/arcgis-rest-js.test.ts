/**
 * The real client: @esri/arcgis-rest-request 4.10.2 against `rasterflow serve` on loopback HTTPS
 * (self-signed certificate of the first start). The client runs in a child process
 * (test/clients/arcgis-rest-js.ts) that trusts the certificate through NODE_EXTRA_CA_CERTS.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PORTAL_AUDIENCE } from '../src/adapters/auth.js';
import { issueToken } from '../src/adapters/tokens.js';
import { startServer } from '../src/server/serve.js';

// The client's answers are loosely typed JSON; the assertions below pin their shape.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
type Outcome = { ok: true; value: Json } | { ok: false; error: { name: string; code?: unknown; message: string } };

const USER = 'siteadmin';
const PASSWORD = 'correct horse battery staple';
const ROOT = new URL('..', import.meta.url).pathname;

function runClient(env: NodeJS.ProcessEnv): Promise<Record<string, Outcome>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/clients/arcgis-rest-js.ts')], {
      cwd: ROOT,
      env: { ...process.env, ...env },
    });
    let out = '';
    let err = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(out) as Record<string, Outcome>);
      } catch {
        reject(new Error(`client exited ${code}: ${out.slice(0, 500)}\n${err.slice(0, 2000)}`));
      }
    });
  });
}

describe('arcgis-rest-js 4.10.2 against rasterflow serve', () => {
  let dataDir: string;
  let server: Awaited<ReturnType<typeof startServer>>;
  let results: Record<string, Outcome>;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'rf-restjs-'));
    server = await startServer({
      dataDir,
      port: 0,
      host: '127.0.0.1',
      env: { RASTERFLOW_ADMIN_USERNAME: USER, RASTERFLOW_ADMIN_PASSWORD: PASSWORD },
      print: () => undefined,
    });
    const origin = new URL(server.httpsUrl).origin;
    // A portal token bound to the client's Node referer that has already expired when the client uses it.
    const expired = await issueToken(server.site.keys, {
      subject: USER,
      audience: PORTAL_AUDIENCE,
      binding: { kind: 'referer', value: '@esri/arcgis-rest-js' },
      expiresAt: Date.now() + 50,
    });
    await new Promise((r) => setTimeout(r, 100));
    results = await runClient({
      NODE_EXTRA_CA_CERTS: join(dataDir, 'tls', 'cert.pem'),
      RF_ORIGIN: origin,
      RF_USER: USER,
      RF_PASSWORD: PASSWORD,
      RF_EXPIRED_TOKEN: expired,
    });
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const value = (name: string): Json => {
    const r = results[name];
    if (!r) throw new Error(`scenario ${name} did not run`);
    if (!r.ok) throw new Error(`${name} failed: ${r.error.name} ${String(r.error.code)} ${r.error.message}`);
    return r.value;
  };

  it('ArcGISIdentityManager.signIn succeeds and reads community/self', () => {
    const v = value('signIn');
    expect(v.username).toBe(USER);
    expect(v.token).toBe(true);
    expect(v.role).toBe('org_admin');
    // The client asks for 20160 minutes (two weeks) and keeps expires - 5 min... or the answer as is.
    expect(v.expires).toBeGreaterThan(Date.now() + 13 * 24 * 3_600_000);
  });

  it('a bad password gives ArcGISTokenRequestError', () => {
    const r = results['badPassword']!;
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.name).toBe('ArcGISTokenRequestError');
      expect(r.error.code).toBe('TOKEN_REFRESH_FAILED');
    }
  });

  it('an admin request(): exportSite answers a download URL', () => {
    const v = value('adminExportSite');
    expect(v.status).toBe('success');
    expect(v.location).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/server\/admin\/exportSite\/download\/\d{8}-\d{6}-UTC(-\d+)?\.agssite$/);
  });

  it('admin request()s: createWebhook, deactivateAll, activateAll and the list', () => {
    const v = value('adminWebhooks');
    expect(v.created.status).toBe('success');
    expect(v.off).toEqual({ status: 'success' });
    expect(v.on).toEqual({ status: 'success' });
    expect(JSON.stringify(v.list)).toContain('jobs');
  });

  it('an expired token triggers the client refresh-and-retry', () => {
    expect(value('expiredTokenRefresh')).toEqual({ username: USER, tokenChanged: true });
  });

  it('a federated server token through /server/rest/info -> owningSystemUrl -> tokenServicesUrl', () => {
    const v = value('federatedServerToken');
    expect(v.distinct).toBe(true);
    expect(JSON.stringify(v.info)).toContain('ExportTrainingDataforDeepLearning');
    expect(v.portalRefusesServerToken).toBe(true);
  });

  it('OAuth: authorize -> sign-in over HTTP -> exchangeAuthorizationCode -> refresh', () => {
    const v = value('oauthAuthorizationCode');
    expect(v).toEqual({ state: 'xyz', username: USER, refreshed: true, refreshToken: true, user: USER });
  });
});

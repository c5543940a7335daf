/**
 * Drives a running rasterflow server with the real arcgis-rest-js client (@esri/arcgis-rest-request
 * 4.10.2), the way a Node application uses it. Run as a child process by test/arcgis-rest-js.test.ts
 * with NODE_EXTRA_CA_CERTS set to the server's self-signed certificate (Node's fetch has no per-call
 * CA option). Prints one JSON object: scenario name -> { ok, value } or { ok: false, error }.
 *
 * Environment: RF_ORIGIN (https://127.0.0.1:<port>), RF_USER / RF_PASSWORD (an administrator),
 * RF_EXPIRED_TOKEN (a portal token the server has let expire, bound to the client's referer).
 */
import { ArcGISIdentityManager, request, type IRequestOptions } from '@esri/arcgis-rest-request';

const origin = process.env['RF_ORIGIN']!;
const username = process.env['RF_USER']!;
const password = process.env['RF_PASSWORD']!;
const expiredToken = process.env['RF_EXPIRED_TOKEN']!;
const portal = `${origin}/portal/sharing/rest`;
const admin = `${origin}/server/admin`;
const gpServer = `${origin}/server/rest/services/System/RasterAnalysisTools/GPServer`;

type Outcome = { ok: true; value: unknown } | { ok: false; error: { name: string; code?: unknown; message: string } };
const results: Record<string, Outcome> = {};

async function scenario(name: string, run: () => Promise<unknown>): Promise<void> {
  try {
    results[name] = { ok: true, value: await run() };
  } catch (e) {
    const err = e as { name?: string; code?: unknown; message?: string };
    results[name] = { ok: false, error: { name: err.name ?? 'Error', code: err.code, message: err.message ?? String(e) } };
  }
}

/** The fields of the first form of an HTML page, and its action resolved against `base`. */
function formOf(html: string, base: string): { action: string; fields: Record<string, string> } {
  const form = /<form\b[^>]*>/i.exec(html);
  if (!form) throw new Error('the sign-in page has no form');
  const action = /action="([^"]*)"/i.exec(form[0])?.[1] ?? '';
  const fields: Record<string, string> = {};
  for (const m of html.matchAll(/<input\b[^>]*>/gi)) {
    const tag = m[0];
    const name = /name="([^"]*)"/i.exec(tag)?.[1];
    if (name === undefined) continue;
    const type = /type="([^"]*)"/i.exec(tag)?.[1]?.toLowerCase() ?? 'text';
    if (type === 'checkbox' || type === 'submit') continue;
    fields[name] = unescape(/value="([^"]*)"/i.exec(tag)?.[1] ?? '');
  }
  return { action: new URL(unescape(action), base).toString(), fields };
}

const unescape = (s: string): string =>
  s
    .replace(/&#(\d+);/g, (_, d: string) => String.fromCharCode(Number(d)))
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"');

async function main(): Promise<void> {
  let manager: ArcGISIdentityManager | undefined;

  await scenario('signIn', async () => {
    manager = await ArcGISIdentityManager.signIn({ username, password, portal });
    const user = await manager.getUser();
    return { username: manager.username, token: manager.token.length > 0, expires: manager.tokenExpires.getTime(), role: user.role };
  });

  await scenario('badPassword', () => ArcGISIdentityManager.signIn({ username, password: `${password}-wrong`, portal }));

  await scenario('adminExportSite', async () => {
    const token = await manager!.getToken(portal);
    return request(`${admin}/exportSite`, { authentication: token, params: { f: 'json' } } as IRequestOptions);
  });

  await scenario('adminWebhooks', async () => {
    const token = await manager!.getToken(portal);
    const base = `${admin}/services/System/RasterAnalysisTools.GPServer/webhooks`;
    const auth = { authentication: token } as const;
    const created = await request(`${base}/createWebhook`, {
      ...auth,
      params: { name: 'jobs', changeTypes: 'jobSucceeded,jobFailed', hookUrl: 'https://127.0.0.1:9/hook', active: true },
    });
    const off = await request(`${base}/deactivateAll`, auth);
    const on = await request(`${base}/activateAll`, auth);
    const list = await request(base, { ...auth, httpMethod: 'GET' });
    return { created, off, on, list };
  });

  await scenario('expiredTokenRefresh', async () => {
    // The client believes the token is good for an hour; the server says it expired (498), so
    // request() refreshes with the username and password and retries once.
    const m = new ArcGISIdentityManager({
      username,
      password,
      portal,
      token: expiredToken,
      tokenExpires: new Date(Date.now() + 3_600_000),
    });
    const self = (await request(`${portal}/community/self`, { authentication: m, httpMethod: 'GET' })) as { username: string };
    return { username: self.username, tokenChanged: m.token !== expiredToken };
  });

  await scenario('federatedServerToken', async () => {
    const serverToken = await manager!.getToken(gpServer);
    const info = await request(gpServer, { authentication: manager!, httpMethod: 'GET' });
    let portalRefusesServerToken = false;
    try {
      await request(`${portal}/community/self`, { authentication: serverToken, httpMethod: 'GET' });
    } catch (e) {
      portalRefusesServerToken = (e as { name: string }).name === 'ArcGISAuthError';
    }
    return { distinct: serverToken !== manager!.token, info, portalRefusesServerToken };
  });

  await scenario('oauthAuthorizationCode', async () => {
    const token = await manager!.getToken(portal);
    const redirectUri = 'http://127.0.0.1:9/callback';
    const app = (await request(`${admin}/security/oauth/registerApp`, {
      authentication: token,
      params: { name: 'rest-js-test', redirect_uris: JSON.stringify([redirectUri]) },
    })) as { client_id: string };
    const clientId = app.client_id;
    // The client's own server-side entry point: it answers a 301 to the authorize page.
    let location = '';
    const fakeResponse = { writeHead: (_: number, h: { Location: string }) => void (location = h.Location), end: () => undefined };
    ArcGISIdentityManager.authorize({ clientId, portal, redirectUri, state: 'xyz' }, fakeResponse as never);
    // The browser step, over HTTP: the sign-in page, then the credentials posted back with the
    // cookies the page set (as a browser would).
    const page = await fetch(location);
    const cookies = page.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const form = formOf(await page.text(), location);
    const signedIn = await fetch(form.action, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin, cookie: cookies },
      body: new URLSearchParams({ ...form.fields, username, password }).toString(),
    });
    const back = new URL(signedIn.headers.get('location') ?? 'http://missing/');
    const code = back.searchParams.get('code');
    if (!code) throw new Error(`no code in the redirect (HTTP ${signedIn.status}, ${back.toString()})`);
    const m = await ArcGISIdentityManager.exchangeAuthorizationCode({ clientId, portal, redirectUri }, code);
    const first = m.token;
    await m.refreshCredentials();
    const user = await m.getUser();
    return {
      state: back.searchParams.get('state'),
      username: m.username,
      refreshed: m.token !== first && m.token.length > 0,
      refreshToken: (m.refreshToken ?? '').length > 0,
      user: user.username,
    };
  });

  process.stdout.write(JSON.stringify(results));
}

await main();

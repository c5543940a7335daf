import { generate } from 'selfsigned';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_AUDIENCE, jsonOf, siteRequest, testSite, type TestSite } from '../../../test/site.js';
import type { Route } from '../rest.js';
import { federationRoutes, isPemCertificate } from './federation.js';

const BASE = '/portal/sharing/rest/portals';
let site: TestSite;
let routes: Route[];
let adminToken: string;
let cert: string;
let expiredCert: string;

beforeAll(async () => {
  cert = (await generate([{ name: 'commonName', value: 'idp.example.com' }])).cert;
  expiredCert = (
    await generate([{ name: 'commonName', value: 'old.example.com' }], {
      notBeforeDate: new Date(Date.UTC(2001, 0, 1)),
      notAfterDate: new Date(Date.UTC(2002, 0, 1)),
    })
  ).cert;
});

beforeEach(async () => {
  site = await testSite();
  routes = federationRoutes(site);
  await site.addUser('root', 'administrator');
  await site.addUser('pub', 'publisher');
  await site.addUser('ann', 'user');
  adminToken = await site.token('root');
});

/** Dispatch by Hono-style pattern, as the host would mount the routes. */
function route(path: string): Route {
  const pathname = path.split('?')[0]!;
  const match = (pattern: string): boolean => new RegExp(`^${pattern.replace(/:[A-Za-z]+/g, '[^/]+')}$`).test(pathname);
  const r = routes.find((x) => match(x.path));
  if (!r) throw new Error(`no route for ${path}`);
  return r;
}

async function call(path: string, form?: Record<string, string>, options: { method?: string; scheme?: 'http' | 'https' } = {}) {
  const req = siteRequest(path, { ...(form ? { form } : {}), ...options });
  const res = await route(path).handler(req);
  return { status: res.status, body: await jsonOf<Record<string, unknown>>(res), res };
}

const VALID = (): Record<string, string> => ({
  name: 'Campus federation',
  discoveryServiceUrl: 'https://wayf.example.edu/discovery',
  metadataServiceUrl: 'https://md.example.edu/aggregate.xml',
  f: 'json',
});

const registerPath = (portal = 'org1') => `${BASE}/${portal}/idp/federation/register`;
const register = (form: Record<string, string>, token = adminToken, portal = 'org1') => call(registerPath(portal), { ...form, token });
const errorOf = (body: Record<string, unknown>) => body['error'] as { code: number; message: string; details: string[] };

describe('federation register: success', () => {
  it('answers success and a federation id, stores the record with defaults', async () => {
    const { status, body } = await register(VALID());
    expect(status).toBe(200);
    expect(body['success']).toBe(true);
    expect(body['federationId']).toMatch(/^[A-Za-z0-9]{16}$/);
    const [f] = await site.store.listFederations('org1');
    expect(f).toMatchObject({
      id: body['federationId'],
      portalId: 'org1',
      name: 'Campus federation',
      entityId: 'localhost',
      settings: {
        userCreditAssignment: -1,
        groups: [],
        encryptionSupported: false,
        supportSignedRequest: false,
        supportsLogoutRequest: false,
        updateProfileAtSignin: false,
        updateGroupsAtSignin: false,
        signUpMode: 'Invitation',
        userType: 'arcgisonly',
      },
    });
  });

  it('stores every parameter given', async () => {
    await site.store.putRole({ rolename: 'analysts', privileges: ['geoprocessing'] });
    const { body } = await register({
      ...VALID(),
      certificate: cert,
      entityId: 'urn:org:rasterflow',
      userCreditAssignment: '500',
      encryptionSupported: 'true',
      supportSignedRequest: 'TRUE',
      supportsLogoutRequest: 'true',
      updateProfileAtSignin: 'true',
      updateGroupsAtSignin: 'false',
      signUpMode: 'Automatic',
      roleId: 'analysts',
      userLicenseType: 'GISProfessionalStdUT',
      userType: 'both',
    });
    expect(body['success']).toBe(true);
    const [f] = await site.store.listFederations('org1');
    expect(f?.certificate).toBe(cert);
    expect(f?.entityId).toBe('urn:org:rasterflow');
    expect(f?.settings).toMatchObject({
      userCreditAssignment: 500,
      encryptionSupported: true,
      supportSignedRequest: true,
      supportsLogoutRequest: true,
      updateProfileAtSignin: true,
      updateGroupsAtSignin: false,
      signUpMode: 'Automatic',
      roleId: 'analysts',
      userLicenseType: 'GISProfessionalStdUT',
      userType: 'both',
    });
  });

  it('entityId defaults to the configured public host', async () => {
    site = await testSite({ publicOrigin: 'https://gis.example.org:7443' });
    routes = federationRoutes(site);
    await site.addUser('root', 'administrator');
    await register(VALID(), await site.token('root'));
    expect((await site.store.listFederations())[0]?.entityId).toBe('gis.example.org:7443');
  });

  it('accepts an expired certificate and built-in roles (and vendor aliases)', async () => {
    for (const roleId of ['publisher', 'org_user']) {
      site = await testSite();
      routes = federationRoutes(site);
      await site.addUser('root', 'administrator');
      const { body } = await register({ ...VALID(), certificate: expiredCert, signUpMode: 'Automatic', roleId }, await site.token('root'));
      expect(body['success']).toBe(true);
    }
  });

  it('maps the deprecated level to a license type when userLicenseType is absent', async () => {
    await register({ ...VALID(), signUpMode: 'Automatic', level: '1' });
    expect((await site.store.listFederations())[0]?.settings['userLicenseType']).toBe('viewerUT');
    site = await testSite();
    routes = federationRoutes(site);
    await site.addUser('root', 'administrator');
    const t = await site.token('root');
    await register({ ...VALID(), signUpMode: 'Automatic', level: '2' }, t);
    expect((await site.store.listFederations())[0]?.settings['userLicenseType']).toBe('creatorUT');
  });

  it('userLicenseType wins over level', async () => {
    await register({ ...VALID(), signUpMode: 'Automatic', level: '1', userLicenseType: 'creatorUT' });
    expect((await site.store.listFederations())[0]?.settings['userLicenseType']).toBe('creatorUT');
  });

  it('parameter names are case-insensitive (serverURL-style clients)', async () => {
    const { body } = await register({
      NAME: 'x',
      DiscoveryServiceURL: 'https://a.example/d',
      metadataserviceurl: 'https://a.example/m',
      f: 'json',
    });
    expect(body['success']).toBe(true);
  });
});

describe('federation register: validation lists every problem', () => {
  it('the documented failure: both URLs missing', async () => {
    const { status, body } = await register({ name: 'x', f: 'json' });
    expect(status).toBe(200);
    expect(body).toEqual({
      error: {
        code: 400,
        message: 'Unable to register federation.',
        details: [`'discoveryServiceUrl' must be specified.`, `'metadataServiceUrl' must be specified.`],
      },
    });
  });

  it('every rule at once, in a stable order', async () => {
    const { body } = await register({
      discoveryServiceUrl: 'http://wayf.example.edu/d',
      metadataServiceUrl: '/relative',
      name: '  ',
      certificate: 'not a cert',
      signUpMode: 'Sometimes',
      userType: 'everyone',
      userCreditAssignment: '-2',
      encryptionSupported: 'yes',
      supportSignedRequest: '1',
      supportsLogoutRequest: 'no',
      updateProfileAtSignin: 'maybe',
      updateGroupsAtSignin: 'x',
      level: '3',
      f: 'json',
    });
    expect(errorOf(body)).toEqual({
      code: 400,
      message: 'Unable to register federation.',
      details: [
        `'name' must be specified.`,
        `'discoveryServiceUrl' must be an absolute HTTPS URL.`,
        `'metadataServiceUrl' must be an absolute HTTPS URL.`,
        `'certificate' must be base64 text between -----BEGIN CERTIFICATE----- and -----END CERTIFICATE----- lines.`,
        `'signUpMode' must be Automatic or Invitation.`,
        `'userType' must be arcgisonly or both.`,
        `'userCreditAssignment' must be an integer greater than or equal to -1.`,
        `'encryptionSupported' must be true or false.`,
        `'supportSignedRequest' must be true or false.`,
        `'supportsLogoutRequest' must be true or false.`,
        `'updateProfileAtSignin' must be true or false.`,
        `'updateGroupsAtSignin' must be true or false.`,
        `'level' must be 1 or 2.`,
      ],
    });
    expect(await site.store.listFederations()).toEqual([]);
  });

  it.each(['1.5', 'abc', '-3', ''])('userCreditAssignment %j', async (v) => {
    const { body } = await register({ ...VALID(), userCreditAssignment: v });
    if (v === '') expect(body['success']).toBe(true);
    else expect(errorOf(body).details).toEqual([`'userCreditAssignment' must be an integer greater than or equal to -1.`]);
  });

  it('userCreditAssignment -1 and 0 are accepted', async () => {
    expect((await register({ ...VALID(), userCreditAssignment: '0' })).body['success']).toBe(true);
  });

  it.each([
    ['markers missing', (c: string) => c.replace('-----BEGIN CERTIFICATE-----', '')],
    ['not base64', (c: string) => c.replace(/\n[A-Za-z0-9+/]{10}/, '\n!!!!!!!!!!')],
    ['base64 but not DER', () => '-----BEGIN CERTIFICATE-----\nAAAAAAAA\n-----END CERTIFICATE-----'],
    ['truncated DER', (c: string) => c.replace(/\n[A-Za-z0-9+/=]+\n-----END/, '\n-----END')],
  ])('certificate: %s', async (_why, mangle) => {
    const { body } = await register({ ...VALID(), certificate: mangle(cert) });
    expect(errorOf(body).details).toEqual([
      `'certificate' must be base64 text between -----BEGIN CERTIFICATE----- and -----END CERTIFICATE----- lines.`,
    ]);
  });

  it('isPemCertificate accepts CRLF and extra whitespace between the markers', () => {
    expect(isPemCertificate(cert.replace(/\n/g, '\r\n'))).toBe(true);
    expect(isPemCertificate(`  ${cert}  `)).toBe(true);
    expect(isPemCertificate(expiredCert)).toBe(true);
  });

  it('role, license type and groups are checked against the organization when Automatic', async () => {
    const { body } = await register({
      ...VALID(),
      signUpMode: 'Automatic',
      roleId: 'nosuchrole',
      userLicenseType: 'platinumUT',
      groups: 'g1,g2',
    });
    expect(errorOf(body).details).toEqual([
      `'roleId' refers to an unknown role, license type or group: nosuchrole.`,
      `'userLicenseType' refers to an unknown role, license type or group: platinumUT.`,
      `'groups' refers to an unknown role, license type or group: g1, g2.`,
    ]);
  });

  it('groups as a JSON array', async () => {
    const { body } = await register({ ...VALID(), signUpMode: 'Automatic', groups: '["a1"]' });
    expect(errorOf(body).details).toEqual([`'groups' refers to an unknown role, license type or group: a1.`]);
  });

  it('role, license type and groups are not checked for Invitation', async () => {
    const { body } = await register({
      ...VALID(),
      signUpMode: 'Invitation',
      roleId: 'nosuchrole',
      userLicenseType: 'platinumUT',
      groups: 'g1',
    });
    expect(body['success']).toBe(true);
  });

  it('a federation or a single IdP already registered: refused, never both', async () => {
    expect((await register(VALID())).body['success']).toBe(true);
    expect(errorOf((await register(VALID())).body).details).toEqual([
      'An identity provider or federation is already registered for this organization.',
    ]);
    const idp = await call(`${BASE}/org1/idp/register`, { name: 'x', metadataUrl: 'https://idp.example/md', token: adminToken, f: 'json' });
    expect(errorOf(idp.body).details).toEqual(['An identity provider or federation is already registered for this organization.']);
    expect(await site.store.listIdentityProviders()).toEqual([]);
  });

  it('listed together with other problems', async () => {
    await site.store.putIdentityProvider({ id: 'i1', portalId: 'org1', name: 'one', created: 0 });
    const { body } = await register({ name: 'x', f: 'json' });
    expect(errorOf(body).details).toEqual([
      `'discoveryServiceUrl' must be specified.`,
      `'metadataServiceUrl' must be specified.`,
      'An identity provider or federation is already registered for this organization.',
    ]);
  });
});

describe('federation register: caller, method, transport', () => {
  it('unknown portal id', async () => {
    const { body } = await register(VALID(), adminToken, 'other');
    expect(body).toEqual({ error: { code: 400, message: 'Invalid portal id.', details: [] } });
  });

  it.each([['pub'], ['ann']])('%s (not an administrator) gets 403', async (user) => {
    const { body } = await register(VALID(), await site.token(user));
    expect(errorOf(body)).toEqual({
      code: 403,
      message: 'You do not have permissions to access this resource or perform this operation.',
      details: [],
    });
    expect(await site.store.listFederations()).toEqual([]);
  });

  it('no token -> 499; an admin-audience token -> 498', async () => {
    const { token: _t, ...form } = { ...VALID(), token: '' };
    expect(errorOf((await call(registerPath(), form)).body).code).toBe(499);
    expect(errorOf((await register(VALID(), await site.token('root', { audience: ADMIN_AUDIENCE }))).body).code).toBe(498);
  });

  it('GET -> 405', async () => {
    const { body } = await call(`${registerPath()}?f=json&token=${adminToken}`, undefined, { method: 'GET' });
    expect(body).toEqual({ error: { code: 405, message: 'Method not supported.', details: [] } });
  });

  it('plain HTTP with allSSL -> SSL Required', async () => {
    site = await testSite({ allSSL: true });
    routes = federationRoutes(site);
    await site.addUser('root', 'administrator');
    const res = await route(registerPath()).handler(
      siteRequest(registerPath(), { form: { ...VALID(), token: await site.token('root') }, scheme: 'http' }),
    );
    expect(errorOf(await jsonOf(res))).toEqual({ code: 403, message: 'SSL Required', details: ['SSL Required'] });
  });

  it('f=html answers a page; f=pjson pretty JSON', async () => {
    const { f: _f, ...form } = VALID();
    const html = await route(registerPath()).handler(siteRequest(registerPath(), { form: { ...form, token: adminToken } }));
    expect(html.headers.get('content-type')).toContain('text/html');
    expect(await html.text()).toContain('federationId');
  });
});

describe('read-back, unregister, single IdP, switching', () => {
  it('federation read-back has the documented fields; empty when none', async () => {
    expect((await call(`${BASE}/org1/idp/federation?f=json&token=${adminToken}`)).body).toEqual({});
    const { body } = await register({
      ...VALID(),
      certificate: cert,
      signUpMode: 'Automatic',
      roleId: 'user',
      userLicenseType: 'creatorUT',
    });
    const read = (await call(`${BASE}/org1/idp/federation?f=json&token=${adminToken}`)).body;
    expect(read).toMatchObject({
      id: body['federationId'],
      name: 'Campus federation',
      discoveryServiceUrl: 'https://wayf.example.edu/discovery',
      metadataServiceUrl: 'https://md.example.edu/aggregate.xml',
      certificate: cert,
      entityId: 'localhost',
      signUpMode: 'Automatic',
      encryptionSupported: false,
      roleId: 'user',
      userLicenseType: 'creatorUT',
      userCreditAssignment: -1,
      userType: 'arcgisonly',
    });
  });

  it('read-back needs an administrator of the organization', async () => {
    expect(errorOf((await call(`${BASE}/org1/idp/federation?f=json&token=${await site.token('ann')}`)).body).code).toBe(403);
    expect(errorOf((await call(`${BASE}/nope/idp?f=json&token=${adminToken}`)).body).message).toBe('Invalid portal id.');
  });

  it('an administrator switches from a federation to a single IdP and back', async () => {
    await register(VALID());
    const un = await call(`${BASE}/org1/idp/federation/unregister`, { token: adminToken, f: 'json' });
    expect(un.body).toEqual({ success: true });
    expect(await site.store.listFederations()).toEqual([]);
    const again = await call(`${BASE}/org1/idp/federation/unregister`, { token: adminToken, f: 'json' });
    expect(errorOf(again.body).details).toEqual(['No federation is registered for this organization.']);

    const idp = await call(`${BASE}/org1/idp/register`, {
      name: 'Okta',
      metadataUrl: 'https://okta.example/md',
      token: adminToken,
      f: 'json',
    });
    expect(idp.body['success']).toBe(true);
    const idpId = idp.body['idpId'] as string;
    expect((await call(`${BASE}/org1/idp?f=json&token=${adminToken}`)).body).toMatchObject({
      id: idpId,
      name: 'Okta',
      metadataUrl: 'https://okta.example/md',
    });
    expect(errorOf((await register(VALID())).body).details).toEqual([
      'An identity provider or federation is already registered for this organization.',
    ]);
    expect(errorOf((await call(`${BASE}/org1/idp/nope/remove`, { token: adminToken, f: 'json' })).body).details).toEqual([
      `Identity provider 'nope' does not exist.`,
    ]);
    expect((await call(`${BASE}/org1/idp/${idpId}/remove`, { token: adminToken, f: 'json' })).body).toEqual({ success: true });
    expect((await call(`${BASE}/org1/idp?f=json&token=${adminToken}`)).body).toEqual({});
    expect((await register(VALID())).body['success']).toBe(true);
  });

  it('single IdP validation: name, metadata source, https, XML', async () => {
    const a = await call(`${BASE}/org1/idp/register`, { token: adminToken, f: 'json' });
    expect(errorOf(a.body)).toEqual({
      code: 400,
      message: 'Unable to register identity provider.',
      details: [`'name' must be specified.`, `'metadataUrl' or 'metadataFile' must be specified.`],
    });
    const b = await call(`${BASE}/org1/idp/register`, {
      name: 'x',
      metadataUrl: 'http://idp/md',
      metadataFile: 'hello',
      token: adminToken,
      f: 'json',
    });
    expect(errorOf(b.body).details).toEqual([
      `'metadataUrl' must be an absolute HTTPS URL.`,
      `'metadataFile' must be SAML metadata XML (an EntityDescriptor).`,
    ]);
    const xml = '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="x"></md:EntityDescriptor>';
    const c = await call(`${BASE}/org1/idp/register`, { name: 'x', metadataFile: xml, token: adminToken, f: 'json' });
    expect(c.body['success']).toBe(true);
    expect((await call(`${BASE}/org1/idp?f=json&token=${adminToken}`)).body).toMatchObject({ name: 'x', metadataFile: true });
  });

  it('single IdP register, unregister and remove are POST-only and administrator-only', async () => {
    for (const p of ['idp/register', 'idp/federation/unregister', 'idp/x/remove']) {
      expect(errorOf((await call(`${BASE}/org1/${p}?f=json&token=${adminToken}`)).body).code).toBe(405);
      expect(errorOf((await call(`${BASE}/org1/${p}`, { token: await site.token('pub'), f: 'json' })).body).code).toBe(403);
    }
  });
});

/** Fixtures of the exportSite / importSite tests: a populated site, its primary administrator, requests. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unzipSync } from 'fflate';
import { hashPassword } from '../src/adapters/auth.js';
import { setPeerAddress, type SiteConfig } from '../src/adapters/site.js';
import { ensurePrimaryAdministrator } from '../src/server/site.js';
import { ADMIN_AUDIENCE, siteRequest, TEST_IP, TEST_REFERER, testSite, type TestSite } from './site.js';

export const PRIMARY = 'primary-root-7f3a';
export const PRIMARY_PASSWORD = 'Pr1mary-S3cret-Zq9!';

/** A test site with a primary administrator (PRIMARY) and an ordinary administrator `ops` (password `ops-pw`). */
export async function adminSite(config: Partial<Omit<SiteConfig, 'dataDir'>> = {}, primary = PRIMARY, password = PRIMARY_PASSWORD) {
  const site = await testSite(config);
  await ensurePrimaryAdministrator(site, primary, password);
  await site.addUser('ops', 'administrator');
  await site.addUser('pub', 'publisher');
  return site;
}

/** Services, webhooks, users, roles, federation records, OAuth apps and log settings: one of each kind and then some. */
export async function populate(site: TestSite): Promise<void> {
  const { store } = site;
  const now = site.clock.now();
  await store.putRole({ rolename: 'editors', description: 'Feature editors', privileges: ['featureLayer'] });
  await store.putRole({ rolename: 'gp', privileges: ['geoprocessing', 'publishServerLayers'] });
  await store.putUser({
    username: 'alice',
    passwordHash: await hashPassword('alice-secret'),
    role: 'publisher',
    roles: ['editors'],
    fullName: 'Alice A',
    email: 'alice@example.com',
    created: now,
  });
  await store.putUser({
    username: 'carol',
    passwordHash: await hashPassword('carol-secret'),
    role: 'user',
    roles: ['gp'],
    disabled: true,
    created: now,
  });
  await store.putService({
    folder: '',
    serviceName: 'Parcels',
    type: 'FeatureServer',
    properties: { layers: [{ id: 0, name: 'parcels' }] },
    created: now,
  });
  await store.putService({
    folder: 'Imagery',
    serviceName: 'Elevation',
    type: 'ImageServer',
    description: 'DEM',
    properties: { path: '/data/dem.tif', renderingRule: { rasterFunction: 'Hillshade' } },
    created: now,
  });
  await store.putService({ folder: 'System', serviceName: 'Tools', type: 'GPServer', properties: {}, created: now });
  await store.putWebhook({
    id: 'wh1',
    service: 'Parcels.FeatureServer',
    name: 'notify',
    changeTypes: ['*'],
    hookUrl: 'https://hooks.example/parcels',
    signatureKey: 'whsec-parcels-1',
    active: true,
    created: now,
  });
  await store.putWebhook({
    id: 'wh2',
    service: 'System/Tools.GPServer',
    name: 'jobs',
    changeTypes: ['jobSucceeded', 'jobFailed'],
    hookUrl: 'https://hooks.example/jobs',
    signatureKey: '',
    active: false,
    created: now,
  });
  await store.putFederation({
    id: 'fed1',
    portalId: site.config.portalId,
    name: 'Campus',
    discoveryServiceUrl: 'https://idp.example/discovery',
    metadataServiceUrl: 'https://idp.example/metadata',
    entityId: 'https://idp.example',
    settings: { encrypted: false },
    created: now,
  });
  await store.putIdentityProvider({
    id: 'idp1',
    portalId: 'other-org',
    name: 'Other',
    metadataUrl: 'https://other.example/md',
    created: now,
  });
  await store.putFederatedServer({
    id: 'srv1',
    url: 'https://gis.example:6443/server',
    adminUrl: 'https://gis.example:6443/server/admin',
    name: 'GIS',
  });
  await store.putOAuthApp({
    clientId: 'app-primary',
    secretHash: await hashPassword('app-secret-1'),
    name: 'Primary app',
    redirectUris: ['https://app.example/cb'],
    owner: PRIMARY,
    created: now,
  });
  await store.putOAuthApp({
    clientId: 'app-alice',
    secretHash: await hashPassword('app-secret-2'),
    name: 'Alice app',
    redirectUris: [],
    owner: 'alice',
    created: now,
  });
  await store.putSetting('logSettings', { logLevel: 'WARNING', maxLogFileAge: 90 });
  await store.putJob({
    id: 'job-secret-status',
    task: 'System/RasterAnalysisTools/X',
    status: 'geoJobSucceeded',
    owner: 'alice',
    inputs: {},
    messages: [{ type: 'info', description: 'job message 42' }],
    created: now,
    updated: now,
  });
}

/** A POST to the admin API with `form` (and the token in the body unless `token` is undefined). */
export function adminPost(path: string, form: Record<string, string>, token?: string): Request {
  return siteRequest(path, { form: { f: 'json', ...form, ...(token === undefined ? {} : { token }) } });
}

/** A multipart POST (file upload) with the test referer and peer. */
export function multipartPost(path: string, fields: Record<string, string | Blob>): Request {
  const body = new FormData();
  for (const [k, v] of Object.entries(fields)) {
    if (typeof v === 'string') body.append(k, v);
    else body.append(k, v, 'site.agssite');
  }
  const req = new Request(`https://localhost${path}`, { method: 'POST', headers: { referer: TEST_REFERER }, body });
  return setPeerAddress(req, TEST_IP);
}

export const adminToken = (site: TestSite, user = 'ops'): Promise<string> => site.token(user, { audience: ADMIN_AUDIENCE });

/** A fresh empty folder. */
export const tempDir = (prefix = 'rf-backup-'): string => mkdtempSync(join(tmpdir(), prefix));

/** Every entry of an archive, decoded as text. */
export function entriesOf(bytes: Uint8Array): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, data] of Object.entries(unzipSync(bytes))) out[name] = new TextDecoder().decode(data);
  return out;
}

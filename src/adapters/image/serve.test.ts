import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpCall } from '../../../test/serve-helpers.js';
import { startServer, type RunningServer } from '../../server/serve.js';
import { imageServicesOf } from './service.js';

const DEM = `${import.meta.dirname}/../../../golden/data/jacksboro_fault_dem_utm16n_75m.tif`;
const BIG = '/server/rest/services/Elevation/dem/ImageServer/exportImage?f=image&format=png&size=3000,3000&renderingRule=Hillshade';

let server: RunningServer;
let base: string;

beforeAll(async () => {
  server = await startServer({
    dataDir: mkdtempSync(join(tmpdir(), 'rf-img-serve-')),
    port: 0,
    httpPort: 0,
    env: { RASTERFLOW_ADMIN_PASSWORD: 'admin-password-1' },
    print: () => undefined,
    config: {
      services: [{ serviceName: 'dem', folderName: 'Elevation', type: 'ImageServer', properties: { path: DEM, anonymous: true } }],
    },
  });
  base = server.httpUrl!;
});

afterAll(() => server.close());

describe('the image service under rasterflow serve', () => {
  it('serves a --config ImageServer service beside the GP task, and lists both', async () => {
    const info = await httpCall(`${base}/server/rest/services/Elevation/dem/ImageServer?f=json`);
    expect(JSON.parse(info.body)).toMatchObject({ name: 'Elevation/dem', bandCount: 1 });
    const gp = await httpCall(`${base}/server/rest/services/System/RasterAnalysisTools/GPServer?f=json`);
    // The GP task answers (it wants a token), not the 404 of an unrouted path.
    expect(gp.status).toBe(200);
    expect(JSON.parse(gp.body)).toMatchObject({ error: { code: 499 } });
    const catalogue = JSON.parse((await httpCall(`${base}/server/rest/services?f=json`)).body) as { folders: string[] };
    expect(catalogue.folders).toEqual(['Elevation', 'System']);
  });

  it('a client that hangs up stops its render long before the render would have ended', { timeout: 60_000 }, async () => {
    const services = imageServicesOf(server.site);
    const started = Date.now();
    const full = await httpCall(`${base}${BIG}`);
    const fullMs = Date.now() - started;
    expect(full.status).toBe(200);
    expect(full.headers['content-type']).toBe('image/png');

    const req = request(`${base}${BIG.replace('3000,3000', '3000,2999')}`);
    req.on('error', () => undefined);
    req.end();
    const seen = Date.now();
    while (services.renderStats().running === 0 && Date.now() - seen < 5000) await new Promise((r) => setTimeout(r, 5));
    expect(services.renderStats().running).toBe(1);
    const cut = Date.now();
    req.destroy();
    while (services.renderStats().running > 0 && Date.now() - cut < 30_000) await new Promise((r) => setTimeout(r, 5));
    const stopMs = Date.now() - cut;
    expect(services.renderStats().running).toBe(0);
    expect(stopMs).toBeLessThan(fullMs / 2);
  });
});

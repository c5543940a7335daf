/**
 * The site server end to end over loopback HTTPS: an administrator's token from generateToken, a
 * webhook on the training-data task's service pointing at a loopback receiver, a job submitted over
 * REST that runs to success, and the signed `jobSucceeded` delivery the receiver gets.
 */
import { createHmac } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../src/server/serve.js';
import { httpCall } from './serve-helpers.js';

const ROOT = new URL('..', import.meta.url).pathname;
const PASSWORD = 'a long enough password';

interface Delivery {
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

describe('rasterflow serve: a GP job over REST raises a signed webhook', () => {
  let dataDir: string;
  let server: RunningServer;
  let receiver: Server;
  let hookUrl: string;
  const deliveries: Delivery[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'rf-site-e2e-'));
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        deliveries.push({ headers: req.headers, body });
        res.end('ok');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    hookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    server = await startServer({
      dataDir,
      port: 0,
      env: { RASTERFLOW_ADMIN_USERNAME: 'root', RASTERFLOW_ADMIN_PASSWORD: PASSWORD },
      // The job reads the repository's sample data: the task reads inputs only from allowed folders.
      config: { settings: { inputRoots: [join(ROOT, 'golden')] } },
      print: () => undefined,
    });
  });

  afterAll(async () => {
    await server?.close();
    await new Promise((r) => receiver?.close(r));
    rmSync(dataDir, { recursive: true, force: true });
  });

  const post = async (path: string, form: Record<string, string>): Promise<Record<string, unknown>> => {
    const res = await httpCall(`${server.httpsUrl}${path}`, {
      ca: server.tls.cert,
      headers: { referer: 'https://e2e.test' },
      body: new URLSearchParams({ f: 'json', ...form }).toString(),
    });
    expect(res.status).toBe(200);
    return JSON.parse(res.body) as Record<string, unknown>;
  };

  it('token -> createWebhook -> submitJob -> geoJobSucceeded -> signed jobSucceeded delivery', async () => {
    const { token } = (await post('/portal/sharing/rest/generateToken', {
      username: 'root',
      password: PASSWORD,
      client: 'referer',
      referer: 'https://e2e.test',
    })) as { token: string };
    expect(typeof token).toBe('string');

    const hook = await post('/server/admin/services/System/RasterAnalysisTools.GPServer/webhooks/createWebhook', {
      token,
      name: 'e2e',
      changeTypes: 'jobSucceeded,jobFailed',
      hookUrl,
      signatureKey: 'shh',
    });
    expect(hook['status']).toBe('success');

    const task = '/server/rest/services/System/RasterAnalysisTools/GPServer/ExportTrainingDataforDeepLearning';
    const submitted = (await post(`${task}/submitJob`, {
      token,
      inputRaster: JSON.stringify({ url: join(ROOT, 'golden/data/L7_ETMs.tif') }),
      inputClassData: JSON.stringify({ url: join(ROOT, 'golden/chipper/l7-labels.geojson') }),
      outputLocation: 'e2e-chips',
      tileSize: '{"x":64,"y":64}',
      metadataFormat: 'PASCAL_VOC_rectangles',
    })) as { jobId: string; jobStatus: string };
    expect(submitted.jobStatus).toBe('geoJobSubmitted');

    let status = '';
    for (let i = 0; i < 600 && !['geoJobSucceeded', 'geoJobFailed'].includes(status); i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = ((await post(`${task}/jobs/${submitted.jobId}`, { token })) as { jobStatus: string }).jobStatus;
    }
    expect(status).toBe('geoJobSucceeded');
    const result = (await post(`${task}/jobs/${submitted.jobId}/results/outLocation`, { token })) as { value: { uri: string } };
    expect(result.value.uri).toBe(join(server.dataDir, 'jobs', 'e2e-chips'));
    expect(readdirSync(result.value.uri)).toEqual(expect.arrayContaining(['images', 'labels', 'map.txt', 'stats.txt']));

    for (let i = 0; i < 100 && deliveries.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(deliveries).toHaveLength(1);
    const d = deliveries[0]!;
    expect(d.headers['x-geo-event']).toBe('jobSucceeded');
    expect(d.headers['x-geo-signature']).toBe(`sha256=${createHmac('sha256', 'shh').update(d.body).digest('hex')}`);
    const payload = JSON.parse(d.body) as { changeType: string; events: { jobId: string; jobStatus: string }[] };
    expect(payload.changeType).toBe('jobSucceeded');
    expect(payload.events[0]).toMatchObject({ jobId: submitted.jobId, jobStatus: 'geoJobSucceeded' });
  }, 90_000);
});

/**
 * ExportMapImage end to end: a SOAP request to the mounted endpoint of the fixture map, the image
 * returned by URL, fetched from the output route of the same server.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAP_FIXTURES, putOlindaMap } from '../../../../test/map-fixture.js';
import { siteRequest, testSite, type TestSite } from '../../../../test/site.js';
import { createApp } from '../../../server/app.js';
import { siteRoutes } from '../../../server/routes.js';
import { mapServicesOf } from '../../map/service.js';
import { setPeerAddress } from '../../site.js';
import { GEO_SOAP_NS, SOAP11_ENV_NS } from '../envelope.js';

const spots = (
  JSON.parse(readFileSync(join(MAP_FIXTURES, 'spot-heights.geojson'), 'utf8')) as { features: { geometry: { coordinates: number[] } }[] }
).features;

describe('ExportMapImage through the server', () => {
  let site: TestSite;
  let app: ReturnType<typeof createApp>;
  let token: string;

  beforeAll(async () => {
    site = await testSite();
    await putOlindaMap(site);
    await putOlindaMap(site, { serviceName: 'secured', properties: { anonymous: false } });
    await site.addUser('reader');
    token = await site.token('reader');
    app = createApp(site, siteRoutes(site));
  }, 60_000);
  afterAll(async () => {
    await mapServicesOf(site).close();
  });

  const fetchApp = (req: Request): Promise<Response> => app.fetch(req) as Promise<Response>;
  const post = (path: string, body: string): Promise<Response> =>
    fetchApp(
      setPeerAddress(
        new Request(`https://localhost${path}`, {
          method: 'POST',
          headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '""', referer: 'http://test' },
          body,
        }),
        '127.0.0.1',
      ),
    );
  // 4 km around the first spot height at 20 m/px
  const [sx, sy] = spots[0]!.geometry.coordinates as [number, number];
  const request = (format: string) =>
    `<?xml version="1.0" encoding="utf-8"?><soapenv:Envelope xmlns:soapenv="${SOAP11_ENV_NS}" xmlns:g="${GEO_SOAP_NS}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>` +
    `<g:ExportMapImage><MapDescription><Name>Layers</Name><MapArea xsi:type="g:MapExtent"><Extent xsi:type="g:EnvelopeN">` +
    `<XMin>${sx - 2000}</XMin><YMin>${sy - 2000}</YMin><XMax>${sx + 2000}</XMax><YMax>${sy + 2000}</YMax></Extent></MapArea><Rotation>0</Rotation></MapDescription>` +
    `<ImageDescription><ImageType><ImageFormat>${format}</ImageFormat><ImageReturnType>geoImageReturnURL</ImageReturnType></ImageType>` +
    `<ImageDisplay><ImageHeight>200</ImageHeight><ImageWidth>200</ImageWidth><ImageDPI>96</ImageDPI></ImageDisplay></ImageDescription></g:ExportMapImage>` +
    `</soapenv:Body></soapenv:Envelope>`;

  it('answers a MapImage whose ImageURL serves a PNG showing the layers', async () => {
    const res = await post('/server/services/olinda/MapServer', request('geoImagePNG'));
    expect(res.status).toBe(200);
    const xml = await res.text();
    const url = /<ImageURL>([^<]+)<\/ImageURL>/.exec(xml)?.[1];
    expect(url).toMatch(/^https:\/\/localhost\/server\/rest\/directories\/output\/[A-Za-z0-9_-]{22}\.png$/);
    expect(xml).toContain('<ImageType>image/png</ImageType>');
    expect(xml).toMatch(/<MapScale>75590\.55118110\d*<\/MapScale>/);
    const img = await fetchApp(siteRequest(url!.replace('https://localhost', '')));
    expect(img.status).toBe(200);
    expect(img.headers.get('content-type')).toBe('image/png');
    const png = PNG.sync.read(Buffer.from(await img.arrayBuffer()));
    expect([png.width, png.height]).toEqual([200, 200]);
    // the spot height (a red triangle) at the centre, over the hillshade (grey) elsewhere
    const at = (x: number, y: number) => [...png.data.slice(4 * (y * 200 + x), 4 * (y * 200 + x) + 3)];
    expect(at(100, 100)).toEqual([200, 30, 30]);
    const greys = new Set<number>();
    for (let y = 0; y < 200; y += 10) for (let x = 0; x < 200; x += 10) greys.add(at(x, y)[0]!);
    expect(greys.size).toBeGreaterThan(5);
  });

  it('a secured service: the URL carries the token and the image is refused without it', async () => {
    const res = await post(`/server/services/secured/MapServer?token=${encodeURIComponent(token)}`, request('geoImageJPG'));
    const xml = await res.text();
    expect(res.status).toBe(200);
    const url = /<ImageURL>([^<]+)<\/ImageURL>/.exec(xml)![1]!.replace(/&amp;/g, '&');
    expect(url).toContain('?token=');
    const ok = await fetchApp(siteRequest(url.replace('https://localhost', '')));
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('image/jpeg');
    const bare = await fetchApp(siteRequest(url.replace('https://localhost', '').replace(/\?.*$/, '')));
    expect(((await bare.json()) as { error: { code: number } }).error.code).toBe(499);
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { setPeerAddress } from '../site.js';
import { putOlindaMap } from '../../../test/map-fixture.js';
import { siteRequest, testSite, type TestSite } from '../../../test/site.js';
import { GEO_SOAP_NS, SOAP11_ENV_NS, SOAP12_ENV_NS } from './envelope.js';
import { soapRoutes } from './endpoint.js';
import { mapServicesOf } from '../map/service.js';
import { mapTileCachesOf } from '../map/tile-cache.js';
import { SOAP_OPERATIONS } from './operations.js';
import { OPERATION_SIGNATURES } from './signatures.js';

const envelope = (op: string, inner = '', ns = SOAP11_ENV_NS): string =>
  `<?xml version="1.0" encoding="utf-8"?><soapenv:Envelope xmlns:soapenv="${ns}" xmlns:g="${GEO_SOAP_NS}"><soapenv:Body><g:${op}>${inner}</g:${op}></soapenv:Body></soapenv:Envelope>`;

describe('the SOAP map service endpoint', () => {
  let site: TestSite;
  let handler: (req: Request) => Promise<Response>;

  beforeAll(async () => {
    site = await testSite();
    await putOlindaMap(site);
    await putOlindaMap(site, { serviceName: 'secured', properties: { anonymous: false } });
    const routes = soapRoutes(site);
    handler = routes[0]!.handler;
  }, 60_000);
  afterAll(async () => {
    await mapServicesOf(site).close();
  });

  const post = (path: string, body: string, headers: Record<string, string> = {}): Promise<Response> =>
    handler(
      setPeerAddress(
        new Request(`https://localhost${path}`, {
          method: 'POST',
          headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '""', referer: 'http://test', ...headers },
          body,
        }),
        '127.0.0.1',
      ),
    );

  it('joins a handler to each of the 55 signatures', () => {
    expect(OPERATION_SIGNATURES).toHaveLength(55);
    expect(SOAP_OPERATIONS.map((o) => o.name)).toEqual(OPERATION_SIGNATURES.map((s) => s.name));
  });

  it('answers GetMapCount over POST with text/xml', async () => {
    const res = await post('/server/services/olinda/MapServer', envelope('GetMapCount'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/xml; charset=utf-8');
    expect(await res.text()).toMatch(/<tns:GetMapCountResponse><Result>1<\/Result><\/tns:GetMapCountResponse>/);
  });

  it('serves the WSDL at ?wsdl (any case) with soap:address = the endpoint', async () => {
    for (const q of ['wsdl', 'WSDL', 'Wsdl=']) {
      const res = await handler(siteRequest(`/server/services/olinda/MapServer?${q}`));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/xml; charset=utf-8');
      const text = await res.text();
      expect(text).toContain('<service name="olinda_MapServer">');
      expect(text).toContain('location="https://localhost/server/services/olinda/MapServer"');
    }
  });

  it('answers other GETs with 405 Allow: POST, and PUT too', async () => {
    const res = await handler(siteRequest('/server/services/olinda/MapServer'));
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect((await handler(siteRequest('/server/services/olinda/MapServer', { method: 'PUT' }))).status).toBe(405);
  });

  it('faults with HTTP 500 for an unknown service, operation, map name; VersionMismatch for SOAP 1.2', async () => {
    // Without a token an unknown service reads as a secured one (499), so that it cannot be told apart.
    expect(await (await post('/server/services/nope/MapServer', envelope('GetMapCount'))).text()).toMatch(/<Code>499<\/Code>/);
    await site.addUser('reader');
    const token = encodeURIComponent(await site.token('reader'));
    const unknown = await post(`/server/services/nope/MapServer?token=${token}`, envelope('GetMapCount'));
    expect(unknown.status).toBe(500);
    expect(await unknown.text()).toMatch(
      /<faultcode>soap:Client<\/faultcode><faultstring>Service nope\/MapServer not found\.<\/faultstring>/,
    );
    const op = await post('/server/services/olinda/MapServer', envelope('DropEverything'));
    expect(await op.text()).toMatch(/Unknown operation 'DropEverything'/);
    const map = await post('/server/services/olinda/MapServer', envelope('GetServerInfo', '<MapName>Other</MapName>'));
    expect(await map.text()).toMatch(/Map 'Other' does not exist/);
    const v12 = await post('/server/services/olinda/MapServer', envelope('GetMapCount', '', SOAP12_ENV_NS));
    expect(await v12.text()).toMatch(/<faultcode>soap:VersionMismatch<\/faultcode>/);
  });

  it('refuses hostile envelopes quickly: XXE, billion laughs, 50 MB, deep nesting', async () => {
    const t0 = Date.now();
    const xxe = `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>${envelope('GetMapName', '<Index>&e;</Index>')}`;
    expect(await (await post('/server/services/olinda/MapServer', xxe)).text()).toMatch(
      /Document type and entity declarations are not accepted/,
    );
    const laughs = `<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>${envelope('GetMapName', '<Index>&b;</Index>')}`;
    expect((await post('/server/services/olinda/MapServer', laughs)).status).toBe(500);
    const big = await post('/server/services/olinda/MapServer', envelope('GetMapName', `<Index>${'0'.repeat(50 * 1024 * 1024)}</Index>`));
    expect(big.status).toBe(500);
    expect(await big.text()).toMatch(/larger than 10485760 bytes, the most the server accepts \(maxBodyBytes\)/);
    const deep = envelope('GetMapName', `${'<a>'.repeat(5000)}${'</a>'.repeat(5000)}`);
    expect(await (await post('/server/services/olinda/MapServer', deep)).text()).toMatch(/deeper than/);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it('a secured service needs a token for its operations and its WSDL; ?token= works', async () => {
    const none = await post('/server/services/secured/MapServer', envelope('GetMapCount'));
    expect(none.status).toBe(500);
    expect(await none.text()).toMatch(/<faultstring>Token Required<\/faultstring>[\s\S]*<Code>499<\/Code>/);
    const wsdl = await handler(siteRequest('/server/services/secured/MapServer?wsdl'));
    expect(wsdl.status).toBe(500);
    await site.addUser('viewer');
    const token = await site.token('viewer');
    const ok = await post(`/server/services/secured/MapServer?token=${encodeURIComponent(token)}`, envelope('GetMapCount'));
    expect(ok.status).toBe(200);
    const bad = await post('/server/services/secured/MapServer?token=forged', envelope('GetMapCount'));
    expect(await bad.text()).toMatch(/<Code>498<\/Code>/);
    expect((await handler(siteRequest(`/server/services/secured/MapServer?wsdl&token=${encodeURIComponent(token)}`))).status).toBe(200);
  });
});

describe("the SOAP endpoint under the site's limits", () => {
  let site: TestSite;
  let handler: (req: Request) => Promise<Response>;
  const tileBody = (level: number, row: number, col: number): string =>
    envelope('GetMapTile', `<MapName>Layers</MapName><Level>${level}</Level><Row>${row}</Row><Column>${col}</Column>`);
  const post = (body: string, signal?: AbortSignal): Promise<Response> =>
    handler(
      setPeerAddress(
        new Request('https://localhost/server/services/olinda/MapServer', {
          method: 'POST',
          headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '""' },
          body,
          ...(signal ? { signal } : {}),
        }),
        '127.0.0.1',
      ),
    );

  afterEach(async () => {
    await mapServicesOf(site).close();
  });

  it('caps the envelope at maxBodyBytes, naming the setting', async () => {
    site = await testSite({ maxBodyBytes: 4096 });
    await putOlindaMap(site);
    handler = soapRoutes(site)[0]!.handler;
    const small = await post(envelope('GetMapCount'));
    expect(small.status).toBe(200);
    const big = await post(envelope('GetMapName', `<Index>${'0'.repeat(5000)}</Index>`));
    expect(big.status).toBe(500);
    const text = await big.text();
    expect(text).toMatch(
      /<faultcode>soap:Client<\/faultcode><faultstring>The request is larger than 4096 bytes, the most the server accepts \(maxBodyBytes\)/,
    );
  });

  it('a tile past requestTimeoutMs is a Server fault with code 504, and leaves nothing running', async () => {
    site = await testSite({ requestTimeoutMs: 1 });
    await putOlindaMap(site);
    handler = soapRoutes(site)[0]!.handler;
    const res = await post(tileBody(2, 1, 1));
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(text).toMatch(/<faultcode>soap:Server<\/faultcode>[\s\S]*<Code>504<\/Code>/);
    await vi.waitFor(() => expect(mapTileCachesOf(site).stats()).toMatchObject({ running: 0, queued: 0 }), {
      timeout: 30_000,
    });
  });

  it('ExportMapImage past requestTimeoutMs stops drawing and is a Server fault with code 504', async () => {
    site = await testSite({ requestTimeoutMs: 1 });
    await putOlindaMap(site);
    handler = soapRoutes(site)[0]!.handler;
    const e = (await mapServicesOf(site).open('', 'olinda'))!.fullExtent;
    const body =
      `<?xml version="1.0" encoding="utf-8"?><soapenv:Envelope xmlns:soapenv="${SOAP11_ENV_NS}" xmlns:g="${GEO_SOAP_NS}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>` +
      `<g:ExportMapImage><MapDescription><Name>Layers</Name><MapArea xsi:type="g:MapExtent"><Extent xsi:type="g:EnvelopeN">` +
      `<XMin>${e.xmin}</XMin><YMin>${e.ymin}</YMin><XMax>${e.xmax}</XMax><YMax>${e.ymax}</YMax></Extent></MapArea><Rotation>0</Rotation></MapDescription>` +
      `<ImageDescription><ImageType><ImageFormat>geoImagePNG</ImageFormat><ImageReturnType>geoImageReturnMimeData</ImageReturnType></ImageType>` +
      `<ImageDisplay><ImageHeight>2000</ImageHeight><ImageWidth>2000</ImageWidth><ImageDPI>96</ImageDPI></ImageDisplay></ImageDescription></g:ExportMapImage>` +
      `</soapenv:Body></soapenv:Envelope>`;
    const res = await post(body);
    expect(res.status).toBe(500);
    expect(await res.text()).toMatch(/<faultcode>soap:Server<\/faultcode>[\s\S]*<Code>504<\/Code>/);
  });

  it('a client that hangs up stops its tile drawing', async () => {
    site = await testSite();
    await putOlindaMap(site);
    // The site's tile cache with drawings that end when aborted, or at once once `open`.
    let open = false;
    const signals: AbortSignal[] = [];
    const tiles = mapTileCachesOf(site, {
      render: (_service, t, signal) => {
        signals.push(signal!);
        if (open) return Promise.resolve(new Uint8Array(t.width * t.height * 4).fill(255));
        return new Promise((_, reject) => signal!.addEventListener('abort', () => reject(signal!.reason as Error), { once: true }));
      },
    });
    handler = soapRoutes(site)[0]!.handler;
    const gone = new AbortController();
    const answer = post(tileBody(2, 1, 2), gone.signal);
    await vi.waitFor(() => expect(signals).toHaveLength(1), { timeout: 30_000 });
    gone.abort();
    const text = await (await answer).text();
    expect(text).toMatch(/<faultcode>soap:Client<\/faultcode>/);
    expect(signals[0]!.aborted).toBe(true);
    await vi.waitFor(() => expect(tiles.stats()).toMatchObject({ running: 0, abandoned: 1 }), { timeout: 30_000 });
    // The same tile asked again is drawn and served.
    open = true;
    const again = await post(tileBody(2, 1, 2));
    expect(await again.text()).toMatch(/<tns:GetMapTileResponse><Result>/);
  });
});

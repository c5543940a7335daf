import { describe, expect, it } from 'vitest';
import { corsPolicyOf, originAllowed, withCors, type CorsPolicy } from './cors.js';

const policy: CorsPolicy = { origins: ['https://a.example'] };
const handler = withCors(
  () => Promise.resolve(policy),
  () => Promise.resolve(new Response('ok', { headers: { 'content-type': 'text/plain' } })),
);
const req = (method: string, headers: Record<string, string>) => new Request('https://localhost/x', { method, headers });

describe('CORS wrapper', () => {
  it('answers an allowed preflight with the echoed origin, methods, headers and max age', async () => {
    const res = await handler(req('OPTIONS', { origin: 'https://a.example', 'access-control-request-method': 'POST' }));
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('https://a.example');
    expect(res.headers.get('vary')).toBe('Origin');
    expect(res.headers.get('access-control-allow-methods')).toBe('GET, POST, OPTIONS');
    const allowed = res.headers.get('access-control-allow-headers')!;
    for (const h of ['X-Geo-Authorization', 'X-Esri-Authorization', 'Authorization', 'Content-Type']) expect(allowed).toContain(h);
    expect(res.headers.get('access-control-max-age')).toBe('600');
    expect(res.headers.has('access-control-allow-credentials')).toBe(false);
  });

  it('refuses a preflight from another origin or for another method (no CORS headers)', async () => {
    const other = await handler(req('OPTIONS', { origin: 'https://b.example', 'access-control-request-method': 'GET' }));
    expect(other.status).toBe(204);
    expect(other.headers.has('access-control-allow-origin')).toBe(false);
    const put = await handler(req('OPTIONS', { origin: 'https://a.example', 'access-control-request-method': 'PUT' }));
    expect(put.headers.has('access-control-allow-origin')).toBe(false);
  });

  it('decorates answers to allowed origins only, always with Vary: Origin', async () => {
    const ok = await handler(req('GET', { origin: 'https://A.example' }));
    expect(await ok.text()).toBe('ok');
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://A.example');
    expect(ok.headers.get('access-control-expose-headers')).toContain('ETag');
    const no = await handler(req('GET', { origin: 'https://evil.example' }));
    expect(no.headers.has('access-control-allow-origin')).toBe(false);
    expect(no.headers.get('vary')).toBe('Origin');
    const same = await handler(req('GET', {}));
    expect(same.headers.has('vary')).toBe(false);
  });

  it('reads the policy from service properties, else the site default; credentials only when configured', async () => {
    expect(corsPolicyOf({})).toBeUndefined();
    expect(corsPolicyOf({}, { origins: ['*'] })).toEqual({ origins: ['*'] });
    const p = corsPolicyOf({ cors: { origins: ['https://a.example', 3], allowCredentials: true, maxAge: 60 } })!;
    expect(p).toEqual({ origins: ['https://a.example'], allowCredentials: true, maxAge: 60 });
    expect(originAllowed({ origins: ['*'] }, 'https://x.example')).toBe(true);
    expect(originAllowed({ origins: ['*'] }, 'null')).toBe(false);
    const cred = withCors(
      () => Promise.resolve(p),
      () => Promise.resolve(new Response('')),
    );
    const res = await cred(req('OPTIONS', { origin: 'https://a.example', 'access-control-request-method': 'GET' }));
    expect(res.headers.get('access-control-allow-credentials')).toBe('true');
    expect(res.headers.get('access-control-max-age')).toBe('60');
  });
});

import { Script } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { STATIC_PREFIX, VIEWER_SCRIPT, viewerHtml, viewerStaticRoutes } from './viewer.js';

const route = (path: string) => viewerStaticRoutes().find((r) => r.path === `${STATIC_PREFIX}${path}`)!;
const get = (path: string) => route(path).handler(new Request(`https://localhost${STATIC_PREFIX}${path}`));

describe('viewer static files', () => {
  it('serves OpenLayers from the installed package with script and style types', async () => {
    const js = await get('/ol/ol.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('x-content-type-options')).toBe('nosniff');
    const text = await js.text();
    expect(text.length).toBeGreaterThan(100_000);
    expect(text).toContain('ImageArcGISRest');
    const css = await get('/ol/ol.css');
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(await css.text()).toContain('.ol-');
    expect((await get('/image-viewer.js')).headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await get('/image-viewer.css')).headers.get('content-type')).toBe('text/css; charset=utf-8');
  });

  it('the page loads everything from this server, settings as inert JSON, the rule escaped', () => {
    const html = viewerHtml({
      title: 'dem <x>',
      url: '/server/rest/services/dem/ImageServer',
      extent3857: { xmin: 1, ymin: 2, xmax: 3, ymax: 4 },
      rule: '{"rasterFunction":"Hillshade","x":"</script><b>"}',
      templates: ['Relief'],
    });
    expect(html).toContain(`<script src="${STATIC_PREFIX}/ol/ol.js"></script>`);
    expect(html).toContain(`<script src="${STATIC_PREFIX}/image-viewer.js"></script>`);
    expect(html).toContain(`href="${STATIC_PREFIX}/ol/ol.css"`);
    expect(html).not.toMatch(/https?:\/\/(?!localhost)/);
    expect(html).not.toMatch(/cdn|unpkg|jsdelivr/i);
    expect(html).toContain('dem &#60;x&#62;');
    // the only inline script is the JSON block, which a browser never runs
    const inline = [...html.matchAll(/<script(?![^>]*src=)([^>]*)>/g)].map((m) => m[1]);
    expect(inline).toEqual([' type="application/json" id="viewer-settings"']);
    const json = /<script type="application\/json" id="viewer-settings">(.*?)<\/script>/s.exec(html)![1]!;
    expect(json).not.toContain('</');
    expect(JSON.parse(json)).toEqual({
      url: '/server/rest/services/dem/ImageServer',
      extent3857: { xmin: 1, ymin: 2, xmax: 3, ymax: 4 },
      rule: '{"rasterFunction":"Hillshade","x":"</script><b>"}',
    });
    expect(html).toContain('<option value="Relief">Relief</option>');
    expect(html).toContain('<textarea id="rule"');
    expect(html).toContain('&#60;/script&#62;');
  });

  it('the script passes the page token to the source, checks JSON and shows service errors', () => {
    expect(VIEWER_SCRIPT).toContain("pageParams.get('token')");
    expect(VIEWER_SCRIPT).toContain('ol.source.ImageArcGISRest');
    expect(VIEWER_SCRIPT).toContain('JSON.parse(text)');
    expect(VIEWER_SCRIPT).toContain('imageloaderror');
    expect(VIEWER_SCRIPT).not.toMatch(/\beval\(|new Function/);
    expect(() => new Script(VIEWER_SCRIPT)).not.toThrow(); // parses
  });
});

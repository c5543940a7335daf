import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EngineError } from '../core/errors.js';
import { normaliseServerUrl } from '../adapters/site.js';
import { loadConfig, parseConfig } from './config.js';

function issuesOf(f: () => unknown): { path: string; message: string }[] {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(EngineError);
    expect((e as EngineError).code).toBe('INVALID_ARGUMENT');
    return (e as EngineError).issues.map((i) => ({ path: i.path, message: i.message }));
  }
  throw new Error('expected an error');
}

const FILE = '/etc/rasterflow/site.json';

describe('parseConfig', () => {
  it('accepts every setting and resolves relative paths against the file folder', () => {
    const c = parseConfig(
      {
        settings: {
          allSSL: true,
          trustedProxies: ['10.0.0.1'],
          headerAlias: false,
          defaultTokenMinutes: 30,
          maxTokenMinutes: 21600,
          oauthTokenMinutes: 120,
          throttleAttempts: 3,
          throttleWindowMs: 1000,
          orgName: 'Org',
          portalId: 'p1',
          writableRoots: ['exports', '/abs/out'],
          publicOrigin: 'https://gis.example.com:6443/',
        },
        tls: { cert: 'tls/cert.pem', key: '/keys/key.pem' },
        services: [{ serviceName: 'Elevation', type: 'ImageServer', folderName: 'Terrain', properties: { path: 'dem.tif' } }],
        federatedServers: [{ url: 'HTTPS://GIS.example.com:443/server/', name: 'gis' }],
      },
      FILE,
    );
    expect(c.settings).toEqual({
      allSSL: true,
      trustedProxies: ['10.0.0.1'],
      headerAlias: false,
      defaultTokenMinutes: 30,
      maxTokenMinutes: 21600,
      oauthTokenMinutes: 120,
      throttleAttempts: 3,
      throttleWindowMs: 1000,
      orgName: 'Org',
      portalId: 'p1',
      writableRoots: ['/etc/rasterflow/exports', '/abs/out'],
      publicOrigin: 'https://gis.example.com:6443',
    });
    expect(c.tls).toEqual({ cert: '/etc/rasterflow/tls/cert.pem', key: '/keys/key.pem' });
    expect(c.services).toEqual([
      { serviceName: 'Elevation', type: 'ImageServer', folder: 'Terrain', properties: { path: '/etc/rasterflow/dem.tif' } },
    ]);
    expect(c.federatedServers).toEqual([{ url: 'https://gis.example.com/server', name: 'gis' }]);
    expect(c.warnings).toEqual([]);
  });

  it('is empty-safe: {} gives defaults', () => {
    expect(parseConfig({}, FILE)).toEqual({ settings: {}, services: [], federatedServers: [], warnings: [] });
  });

  it('names the file and the JSON path of every problem', () => {
    const issues = issuesOf(() =>
      parseConfig(
        {
          settings: { allSSL: 'yes', maxTokenMinutes: 30000, writableRoots: 'x', publicOrigin: 'https://h/path', orgName: '' },
          tls: { cert: 'c.pem' },
          services: [
            { serviceName: 'ok', type: 'ImageServer', properties: { path: '/data/dem.tif' } },
            { serviceName: 'bad name', type: 'Nope' },
          ],
          federatedServers: [{ url: 'ftp://x' }, 'x'],
        },
        FILE,
      ),
    );
    const paths = issues.map((i) => i.path);
    expect(paths).toEqual([
      'settings.allSSL',
      'settings.maxTokenMinutes',
      'settings.orgName',
      'settings.writableRoots',
      'settings.publicOrigin',
      'tls.key',
      'services[1]',
      'federatedServers[0].url',
      'federatedServers[1]',
    ]);
    for (const i of issues) expect(i.message.startsWith(`${FILE}: `)).toBe(true);
    expect(issues[1]!.message).toContain('from 1 to 21600');
    expect(issues[6]!.message).toContain("'type' must be one of");
  });

  it('rejects unknown keys at every level with a did-you-mean', () => {
    const issues = issuesOf(() =>
      parseConfig(
        {
          setings: {},
          settings: { maxTokenMinute: 5, zzzzzzzz: 1 },
          tls: { cert: 'a', key: 'b', crt: 'c' },
          federatedServers: [{ url: 'https://a/server', nmae: 'x' }],
        },
        FILE,
      ),
    );
    expect(issues).toEqual([
      { path: 'setings', message: `${FILE}: unknown key 'setings' (did you mean settings?)` },
      { path: 'settings.maxTokenMinute', message: `${FILE}: unknown key 'maxTokenMinute' (did you mean maxTokenMinutes?)` },
      expect.objectContaining({ path: 'settings.zzzzzzzz', message: expect.stringContaining('(known: allSSL, trustedProxies') as string }),
      { path: 'tls.crt', message: `${FILE}: unknown key 'crt' (did you mean cert?)` },
      { path: 'federatedServers[0].nmae', message: `${FILE}: unknown key 'nmae' (did you mean name?)` },
    ]);
  });

  it('allows a maximum token lifetime below two weeks with a warning, and keeps the default within it', () => {
    const c = parseConfig({ settings: { maxTokenMinutes: 600 } }, FILE);
    expect(c.settings.maxTokenMinutes).toBe(600);
    expect(c.warnings).toHaveLength(1);
    expect(c.warnings[0]).toContain('settings.maxTokenMinutes is 600');
    expect(c.warnings[0]).toContain('20160');
    expect(parseConfig({ settings: { maxTokenMinutes: 20160 } }, FILE).warnings).toEqual([]);
    expect(issuesOf(() => parseConfig({ settings: { maxTokenMinutes: 0 } }, FILE))[0]!.path).toBe('settings.maxTokenMinutes');
    expect(issuesOf(() => parseConfig({ settings: { maxTokenMinutes: 1.5 } }, FILE))[0]!.path).toBe('settings.maxTokenMinutes');
    expect(issuesOf(() => parseConfig({ settings: { maxTokenMinutes: 600, defaultTokenMinutes: 700 } }, FILE))[0]!.path).toBe(
      'settings.defaultTokenMinutes',
    );
  });

  it('rejects a config that is not an object, and sections of the wrong type', () => {
    expect(issuesOf(() => parseConfig([], FILE))[0]!.message).toBe(`${FILE}: the config must be a JSON object`);
    expect(issuesOf(() => parseConfig({ settings: [], services: {}, federatedServers: 1, tls: 'x' }, FILE)).map((i) => i.path)).toEqual([
      'settings',
      'tls',
      'services',
      'federatedServers',
    ]);
  });
});

describe('loadConfig', () => {
  it('reads a file, resolving relative paths against its folder', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rf-config-'));
    const file = join(dir, 'site.json');
    writeFileSync(file, JSON.stringify({ tls: { cert: 'c.pem', key: 'k.pem' } }));
    expect(loadConfig(file).tls).toEqual({ cert: join(dir, 'c.pem'), key: join(dir, 'k.pem') });
  });

  it('names the file when it is missing or not JSON', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rf-config-'));
    expect(issuesOf(() => loadConfig(join(dir, 'none.json')))[0]).toEqual({
      path: 'config',
      message: `${join(dir, 'none.json')}: cannot read the config file: ENOENT`,
    });
    writeFileSync(join(dir, 'bad.json'), '{ "settings": ');
    expect(issuesOf(() => loadConfig(join(dir, 'bad.json')))[0]!.message).toMatch(new RegExp(`^${join(dir, 'bad.json')}: not valid JSON`));
  });
});

describe('normaliseServerUrl', () => {
  it('lower-cases scheme and host, drops default ports and trailing slashes', () => {
    expect(normaliseServerUrl('HTTPS://GIS.Example.com:443/server/')).toBe('https://gis.example.com/server');
    expect(normaliseServerUrl('https://gis.example.com:6443/server')).toBe('https://gis.example.com:6443/server');
    expect(normaliseServerUrl('http://h:80/arcgis//')).toBe('http://h/arcgis');
    expect(normaliseServerUrl('ftp://h/server')).toBeUndefined();
    expect(normaliseServerUrl('not a url')).toBeUndefined();
    expect(normaliseServerUrl('https://user:pw@h/server')).toBeUndefined();
  });
});

describe('image services in the config file', () => {
  it('checks their properties where the file gives them, and resolves a relative path against the file', () => {
    const e = (() => {
      try {
        parseConfig({ services: [{ serviceName: 'dem', type: 'ImageServer', properties: { anonymous: 'yes', path: 'x.tif' } }] }, FILE);
      } catch (err) {
        return err as EngineError;
      }
      return undefined;
    })();
    expect(e?.issues.map((i) => i.path)).toEqual(['services[0].properties.anonymous']);
    expect(e?.issues[0]?.message).toContain(`'anonymous' must be true or false.`);
    const missing = (() => {
      try {
        parseConfig({ services: [{ serviceName: 'dem', type: 'ImageServer', properties: {} }] }, FILE);
      } catch (err) {
        return err as EngineError;
      }
      return undefined;
    })();
    expect(missing?.issues.map((i) => i.path)).toEqual(['services[0].properties.path']);
    const c = parseConfig({ services: [{ serviceName: 'dem', type: 'ImageServer', properties: { path: 'data/dem.tif' } }] }, FILE);
    expect(c.services[0]!.properties['path']).toBe(join(FILE, '..', 'data/dem.tif'));
    const url = parseConfig({ services: [{ serviceName: 'c', type: 'ImageServer', properties: { path: 'https://h/c.tif' } }] }, FILE);
    expect(url.services[0]!.properties['path']).toBe('https://h/c.tif');
  });
});

describe('map services in the config file', () => {
  it('checks their properties under the entry and resolves layer, table and attachment paths against the file', () => {
    const e = (() => {
      try {
        parseConfig(
          { services: [{ serviceName: 'm', type: 'MapServer', properties: { layers: [{ name: 'A', type: 'feature' }] } }] },
          FILE,
        );
      } catch (err) {
        return err as EngineError;
      }
      return undefined;
    })();
    expect(e?.issues.map((i) => i.path)).toEqual(['services[0].properties.layers[0].path']);
    const layers = [{ name: 'A', type: 'feature', path: 'a.geojson', attachments: [{ featureId: 1, path: 'files/a.pdf' }] }];
    const c = parseConfig(
      { services: [{ serviceName: 'm', type: 'MapServer', properties: { layers, tables: [{ name: 'T', path: '/abs/t.json' }] } }] },
      FILE,
    );
    const p = c.services[0]!.properties as { layers: { path: string; attachments: { path: string }[] }[]; tables: { path: string }[] };
    expect(p.layers[0]!.path).toBe(join(FILE, '..', 'a.geojson'));
    expect(p.layers[0]!.attachments[0]!.path).toBe(join(FILE, '..', 'files/a.pdf'));
    expect(p.tables[0]!.path).toBe('/abs/t.json');
  });
});

describe('the site store in the config file', () => {
  it('takes a postgres:// URL; anything else is an error at store that never shows a password', () => {
    expect(parseConfig({ store: ' postgres://rf@db.example.com:5432/site ' }, FILE).store).toBe('postgres://rf@db.example.com:5432/site');
    expect(parseConfig({ store: 'postgresql://rf@db/site' }, FILE).store).toBe('postgresql://rf@db/site');
    expect(parseConfig({}, FILE).store).toBeUndefined();
    const bad = issuesOf(() => parseConfig({ store: 'mysql://rf:hunter2@db/site' }, FILE));
    expect(bad).toEqual([{ path: 'store', message: expect.stringContaining('must be a PostgreSQL URL') as string }]);
    expect(bad[0]!.message).toContain('mysql://rf:***@db/site');
    expect(bad[0]!.message).not.toContain('hunter2');
    expect(issuesOf(() => parseConfig({ store: 42 }, FILE))[0]!.path).toBe('store');
    expect(issuesOf(() => parseConfig({ stor: 'postgres://db/site' }, FILE))[0]!.message).toMatch(/did you mean store/);
  });
});

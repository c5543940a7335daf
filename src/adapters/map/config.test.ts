import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EngineError } from '../../core/errors.js';
import {
  checkRenderer,
  defaultRenderer,
  parseMapServiceProperties,
  tileSchemeOf,
  WEB_MERCATOR_LEVEL0,
  withResolvedMapPaths,
} from './config.js';
import { scaleOf } from './view.js';

const FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../../../test/fixtures/map');
const olinda = JSON.parse(readFileSync(join(FIXTURES, 'olinda-map.json'), 'utf8')) as {
  properties: Record<string, unknown>;
  description: string;
};

/** The error `parseMapServiceProperties` throws for `properties`. */
function errorOf(properties: Record<string, unknown>): EngineError {
  try {
    parseMapServiceProperties({ properties });
  } catch (e) {
    if (e instanceof EngineError) return e;
    throw e;
  }
  throw new Error('no error');
}

const feature = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  name: 'F',
  type: 'feature',
  path: 'f.geojson',
  ...extra,
});

describe('parseMapServiceProperties', () => {
  it('reads the fixture service with its paths resolved against the fixture folder', () => {
    const s = parseMapServiceProperties(olinda, FIXTURES);
    expect(s.layers.map((l) => [l.name, l.type])).toEqual([
      ['Spot heights', 'feature'],
      ['Contours', 'feature'],
      ['Elevation classes', 'feature'],
      ['Relief', 'raster'],
    ]);
    expect(s.layers[0]!.path).toBe(join(FIXTURES, 'spot-heights.geojson'));
    expect(s.layers[3]!.path).toBe(resolve(FIXTURES, '../../../golden/data/olinda_dem_utm25s.tif'));
    expect(s.tables.map((t) => t.name)).toEqual(['Inspections']);
    expect(s.relationships).toEqual([
      expect.objectContaining({
        name: 'Class inspections',
        origin: 2,
        destination: 4,
        originKey: 'OBJECTID',
        destinationKey: 'PARCEL_ID',
        cardinality: 'oneToMany',
      }),
    ]);
    const classes = s.layers[2]!;
    expect(classes.type === 'feature' && classes.attachments.map((a) => [a.featureId, a.name, a.contentType])).toEqual([
      [1, 'survey-notes.txt', 'text/plain'],
      [1, 'thumbnail.png', 'image/png'],
      [3, 'notes-copy.txt', 'text/plain'],
    ]);
    expect(classes.type === 'feature' && classes.subtypes?.subtypes.length).toBe(5);
    expect(s.mapName).toBe('Layers');
    expect(s.description).toBe(olinda.description);
    expect(s.anonymous).toBe(true);
    expect(s.bookmarks).toEqual([{ name: 'Heights', extent: { xmin: 294000, ymin: 9114000, xmax: 298000, ymax: 9118000 } }]);
  });

  it('fills in the defaults', () => {
    const s = parseMapServiceProperties({ properties: { layers: [feature()] } });
    expect(s).toMatchObject({
      mapName: 'Layers',
      maxRecordCount: 1000,
      maxImageWidth: 4096,
      maxImageHeight: 4096,
      anonymous: false,
      backgroundColor: [255, 255, 255, 255],
      tables: [],
      relationships: [],
      bookmarks: [],
      tiling: { dpi: 96, tileSize: 256, format: 'PNG', quality: 75, clientCachingAllowed: true },
    });
    expect(s.layers[0]).toMatchObject({ objectIdField: 'OBJECTID', visible: true, minScale: 0, maxScale: 0, path: 'f.geojson' });
  });

  it('names the JSON path of every error', () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{}, 'service.properties.layers', /needs 'properties.layers'/],
      [{ layers: [feature(), { name: 'R', type: 'raster' }] }, 'service.properties.layers[1].path', /'path' is required/],
      [{ layers: [feature({ type: 'vector' })] }, 'service.properties.layers[0].type', /'raster'.*'feature'/],
      [{ layers: [feature({ renderer: { type: 'heatmap' } })] }, 'service.properties.layers[0].renderer.type', /simple/],
      [
        { layers: [feature({ renderer: { type: 'simple', symbol: { type: 'esriSMS', color: [1, 2] } } })] },
        'service.properties.layers[0].renderer.symbol.color',
        /\[red, green, blue/,
      ],
      [
        {
          layers: [
            feature({
              renderer: {
                type: 'classBreaks',
                field: 'E',
                classBreakInfos: [{ classMaxValue: 5, symbol: { type: 'esriSLS', style: 'wavy' } }],
              },
            }),
          ],
        },
        'service.properties.layers[0].renderer.classBreakInfos[0].symbol.style',
        /esriSLSSolid/,
      ],
      [
        { layers: [feature({ fields: { A: { domain: { type: 'range', name: 'r', range: [5, 1] } } } })] },
        'service.properties.layers[0].fields.A.domain.range',
        /min <= max/,
      ],
      [
        { layers: [feature({ attachments: [{ featureId: 0, path: 'a.txt' }] })] },
        'service.properties.layers[0].attachments[0].featureId',
        /object id/,
      ],
      [
        {
          layers: [
            feature({
              subtypes: {
                field: 'C',
                subtypes: [
                  { code: 1, name: 'a' },
                  { code: 1, name: 'b' },
                ],
              },
            }),
          ],
        },
        'service.properties.layers[0].subtypes.subtypes[1].code',
        /twice/,
      ],
      [{ layers: [feature(), feature()] }, 'service.properties.layers[1].name', /used twice/],
      [{ layers: [feature()], tables: [{ name: 'f', path: 't.json' }] }, 'service.properties.tables[0].name', /used twice/],
      [
        { layers: [feature()], relationships: [{ name: 'r', origin: 'F', destination: 'Nope', originKey: 'A', destinationKey: 'B' }] },
        'service.properties.relationships[0].destination',
        /0 'F'/,
      ],
      [
        {
          layers: [feature()],
          tables: [{ name: 'T', path: 't.json' }],
          relationships: [{ name: 'r', origin: 0, destination: 1, originKey: 'A', destinationKey: 'B', cardinality: 'manyToMany' }],
        },
        'service.properties.relationships[0].cardinality',
        /oneToMany/,
      ],
      [{ layers: [feature()], maxRecordCount: 0 }, 'service.properties.maxRecordCount', /whole number from 1/],
      [{ layers: [feature()], tiling: { format: 'GIF' } }, 'service.properties.tiling.format', /PNG, JPEG or MIXED/],
      [{ layers: [feature()], tiling: { levels: [{ scale: 1000 }, { scale: 2000 }] } }, 'service.properties.tiling.levels[1]', /finer/],
      [
        { layers: [feature()], bookmarks: [{ name: 'b', extent: { xmin: 1, ymin: 0, xmax: 0, ymax: 1 } }] },
        'service.properties.bookmarks[0].extent',
        /xmin/,
      ],
      [{ layers: [feature({ minScale: 1000, maxScale: 5000 })] }, 'service.properties.layers[0].maxScale', /smaller than 'minScale'/],
      [
        { layers: [{ name: 'R', type: 'raster', path: 'r.tif', renderingRule: { rasterFunction: 'NoSuchFunction' } }] },
        'service.properties.layers[0].renderingRule',
        /'NoSuchFunction', which does not exist/,
      ],
      [{ layers: [feature()], anonymous: 'yes' }, 'service.properties.anonymous', /true or false/],
    ];
    for (const [properties, path, message] of cases) {
      let e: EngineError;
      try {
        e = errorOf(properties);
      } catch {
        throw new Error(`no error for ${path}`);
      }
      expect(e.code, path).toBe('INVALID_ARGUMENT');
      expect(e.path, JSON.stringify(properties)).toBe(path);
      expect(e.message).toMatch(message);
    }
  });

  it('resolves relationship ends by name (any case) or id', () => {
    const s = parseMapServiceProperties({
      properties: {
        layers: [feature()],
        tables: [{ name: 'Rows', path: 'r.json' }],
        relationships: [
          {
            name: 'r',
            origin: 'f',
            destination: 1,
            originKey: 'OBJECTID',
            destinationKey: 'FID',
            cardinality: 'esriRelCardinalityOneToOne',
          },
        ],
      },
    });
    expect(s.relationships[0]).toMatchObject({ origin: 0, destination: 1, cardinality: 'oneToOne' });
  });

  it('withResolvedMapPaths makes layer, table and attachment paths absolute', () => {
    const r = withResolvedMapPaths(olinda, FIXTURES);
    const s = parseMapServiceProperties(r);
    expect(s.layers.every((l) => l.path.startsWith('/'))).toBe(true);
    expect(s.tables[0]!.path).toBe(join(FIXTURES, 'inspections.json'));
    const spots = s.layers[0]!;
    expect(spots.type === 'feature' && spots.attachments[0]!.path).toBe(join(FIXTURES, 'attachments/summit.json'));
  });
});

describe('renderers', () => {
  it('checkRenderer answers the symbol families used', () => {
    expect([
      ...checkRenderer(olinda.properties['layers'] && (olinda.properties['layers'] as Record<string, unknown>[])[2]!['renderer'], 'r'),
    ]).toEqual(['esriSFS']);
    expect([...checkRenderer(defaultRenderer('polyline'), 'r')]).toEqual(['esriSLS']);
    expect([...checkRenderer(defaultRenderer('point'), 'r')]).toEqual(['esriSMS']);
  });
});

describe('tileSchemeOf', () => {
  const settings = parseMapServiceProperties({ properties: { layers: [feature()] } }).tiling;

  it('Web Mercator: the standard levels 0-19 and origin', () => {
    const t = tileSchemeOf(settings, { wkid: 3857 }, { xmin: 0, ymin: 0, xmax: 1, ymax: 1 }, undefined, '/tmp/c');
    expect(t.lods).toHaveLength(20);
    expect(t.lods[0]).toEqual({ level: 0, scale: WEB_MERCATOR_LEVEL0.scale, resolution: WEB_MERCATOR_LEVEL0.resolution });
    expect(t.lods[19]!.resolution).toBeCloseTo(0.29858214173896974, 12);
    expect(t.lods[19]!.scale).toBeCloseTo(1128.497176, 5);
    expect(t.origin).toEqual({ x: -20037508.342787, y: 20037508.342787 });
    expect(t).toMatchObject({ rows: 256, cols: 256, dpi: 96, format: 'PNG', cacheDir: '/tmp/c' });
  });

  it('other systems: level 0 covers the full extent in one tile, halving down to the finest cell', () => {
    const extent = { xmin: 1000, ymin: 2000, xmax: 101000, ymax: 7000 };
    const t = tileSchemeOf(settings, { metersPerUnit: 1 }, extent, 90, '/c');
    expect(t.origin).toEqual({ x: 1000, y: 7000 });
    expect(t.lods[0]!.resolution).toBeCloseTo(100000 / 256, 9);
    const last = t.lods[t.lods.length - 1]!;
    expect(last.resolution).toBeLessThanOrEqual(90);
    expect(t.lods[t.lods.length - 2]!.resolution).toBeGreaterThan(90);
    for (const l of t.lods) expect(l.scale).toBeCloseTo(scaleOf(l.resolution, 96, { metersPerUnit: 1 }), 6);
    // With feature layers too: on to 1:1000.
    const both = tileSchemeOf(settings, { metersPerUnit: 1 }, extent, 90, '/c', true);
    expect(both.lods[both.lods.length - 1]!.scale).toBeLessThanOrEqual(1000);
    expect(both.lods[both.lods.length - 2]!.scale).toBeGreaterThan(1000);
    // Without rasters: down to 1:1000.
    const v = tileSchemeOf(settings, { metersPerUnit: 1 }, extent, undefined, '/c');
    expect(v.lods[v.lods.length - 1]!.scale).toBeLessThanOrEqual(1000);
    expect(v.lods[v.lods.length - 2]!.scale).toBeGreaterThan(1000);
  });

  it('explicit levels are completed; a count caps the default levels', () => {
    const explicit = parseMapServiceProperties({
      properties: { layers: [feature()], tiling: { levels: [{ scale: 50000 }, { resolution: 2 }], origin: { x: 5, y: 6 } } },
    }).tiling;
    const t = tileSchemeOf(explicit, { metersPerUnit: 1 }, { xmin: 0, ymin: 0, xmax: 1, ymax: 1 }, undefined, '/c');
    expect(t.origin).toEqual({ x: 5, y: 6 });
    expect(t.lods[0]!.resolution).toBeCloseTo((50000 * 0.0254) / 96, 9);
    expect(t.lods[1]!.scale).toBeCloseTo((2 * 96) / 0.0254, 6);
    const capped = parseMapServiceProperties({ properties: { layers: [feature()], tiling: { levels: 3 } } }).tiling;
    expect(tileSchemeOf(capped, { wkid: 3857 }, { xmin: 0, ymin: 0, xmax: 1, ymax: 1 }, undefined, '/c').lods).toHaveLength(3);
  });
});

import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAP_FIXTURES, olindaMapDefinition, putOlindaMap } from '../../../test/map-fixture.js';
import { testSite, type TestSite } from '../../../test/site.js';
import { EngineError } from '../../core/errors.js';
import { createMapServices, mapServiceDir, mapServicesOf, openMapService, unitsOf, type MapServices } from './service.js';

let site: TestSite;
let services: MapServices;

beforeAll(async () => {
  site = await testSite();
  services = createMapServices(site);
  await putOlindaMap(site);
});
afterAll(async () => {
  await services.close();
});

describe('mapServicesOf / open', () => {
  it('opens the fixture map: layers, table, relationship, spatial reference, extents, tiling', async () => {
    const map = (await services.open('', 'olinda'))!;
    expect(map.name).toBe('olinda');
    expect(map.mapName).toBe('Layers');
    expect(map.anonymous).toBe(true);
    expect(map.layers.map((l) => [l.id, l.kind, l.name])).toEqual([
      [0, 'feature', 'Spot heights'],
      [1, 'feature', 'Contours'],
      [2, 'feature', 'Elevation classes'],
      [3, 'raster', 'Relief'],
    ]);
    expect(map.tables.map((t) => [t.id, t.name])).toEqual([[4, 'Inspections']]);
    expect(map.byId(4)?.kind).toBe('table');
    expect(map.byId(3)?.kind).toBe('raster');
    expect(map.byId(5)).toBeUndefined();
    expect(map.relationships).toEqual([
      {
        id: 0,
        name: 'Class inspections',
        origin: 2,
        destination: 4,
        originKey: 'OBJECTID',
        destinationKey: 'PARCEL_ID',
        cardinality: 'oneToMany',
      },
    ]);
    // The map SR is the raster's (UTM 25 S on GRS 80); features were imported into it.
    const relief = map.layers[3]!;
    if (relief.kind !== 'raster') throw new Error('raster expected');
    expect(map.spatialReference).toEqual(relief.image.info.spatialReference);
    expect(map.units).toBe('geoMeters');
    expect(relief.image.info.width).toBe(111);
    expect(relief.renderingRule).toMatchObject({ rasterFunction: 'Hillshade' });
    // Full extent = union of the layer extents (the vectors lie within the DEM).
    const e = relief.image.info.extent;
    expect(map.fullExtent.xmin).toBeCloseTo(e.xmin, 3);
    expect(map.fullExtent.ymax).toBeCloseTo(e.ymax, 3);
    expect(map.fullExtent.xmax).toBeGreaterThanOrEqual(e.xmax - 1e-6);
    for (const l of map.layers) {
      expect(l.extent.xmin).toBeGreaterThanOrEqual(map.fullExtent.xmin - 1e-6);
      expect(l.extent.xmax).toBeLessThanOrEqual(map.fullExtent.xmax + 1e-6);
    }
    expect(map.initialExtent).toEqual(map.fullExtent);
    // Default tile scheme: origin top-left, level 0 one tile over the full extent, down to the 90 m cell.
    expect(map.tiling.origin).toEqual({ x: map.fullExtent.xmin, y: map.fullExtent.ymax });
    const span = Math.max(map.fullExtent.xmax - map.fullExtent.xmin, map.fullExtent.ymax - map.fullExtent.ymin);
    expect(map.tiling.lods[0]!.resolution).toBeCloseTo(span / 256, 9);
    // The map has feature layers: the levels go on to 1:1000, past the DEM's 90 m cell.
    const last = map.tiling.lods[map.tiling.lods.length - 1]!;
    expect(last.scale).toBeLessThanOrEqual(1000);
    expect(map.tiling.lods[map.tiling.lods.length - 2]!.scale).toBeGreaterThan(1000);
    expect(map.tiling.lods.length).toBeGreaterThan(5);
    map.tiling.lods.forEach((l, i) => expect(l.level).toBe(i));
    expect(map.tiling.cacheDir).toBe(join(mapServiceDir(site.config.dataDir, '', 'olinda'), 'tiles', map.version));
    expect(map.maxRecordCount).toBe(1000);
    expect(map.bookmarks[0]?.name).toBe('Heights');
  });

  it('feature layers carry their renderer, display and hyperlink fields, popups, subtypes and attachments', async () => {
    const map = (await services.open('', 'olinda'))!;
    const [spots, contours, classes] = map.layers;
    if (spots?.kind !== 'feature' || contours?.kind !== 'feature' || classes?.kind !== 'feature')
      throw new Error('feature layers expected');
    expect(spots.renderer).toMatchObject({ type: 'simple', symbol: { type: 'esriSMS' } });
    expect(spots.hyperlinkField).toBe('URL');
    expect(spots.displayField).toBe('NAME');
    expect(spots.hasAttachments).toBe(true);
    expect(contours.renderer['type']).toBe('classBreaks');
    expect(contours.minScale).toBe(500000);
    expect(contours.hasAttachments).toBe(false);
    expect(classes.popupTemplate).toContain('{NAME}');
    expect(classes.subtypes?.field).toBe('CLASS');
    expect(classes.subtypes?.subtypes[4]?.domains['AREA']).toEqual({ type: 'range', name: 'Heights area', range: [0, 5000000] });
    expect(await classes.table.count({})).toBeGreaterThan(30);
    expect(map.tables[0]!.displayField).toBe('INSPECTOR');
    // The relationship resolves through the store: inspections of parcel 1.
    const related = await map.tables[0]!.table.query({ fieldIn: { field: 'PARCEL_ID', values: [1] } });
    expect(related.length).toBeGreaterThan(0);
    expect(related.every((r) => r.attributes['PARCEL_ID'] === 1)).toBe(true);
  });

  it('answers the same service until the record changes; a reopened version does not re-import', async () => {
    const a = (await services.open('', 'olinda'))!;
    expect(await services.open('', 'olinda')).toBe(a);
    expect(a.store?.imported).toBe(true);
    await putOlindaMap(site, { properties: { description: 'changed' } });
    const b = (await services.open('', 'olinda'))!;
    expect(b).not.toBe(a);
    expect(b.version).not.toBe(a.version);
    expect(b.description).toBe('Relief, contours, elevation classes and spot heights around Olinda (test fixture).');
    // A second registry (a restarted server) reuses the imported database of the same version.
    const other = createMapServices(site);
    const c = (await other.open('', 'olinda'))!;
    expect(c.version).toBe(b.version);
    expect(c.store?.imported).toBe(false);
    await other.close();
    // Old versions' files are removed by a later import once nothing in this process has them open.
    const dir = mapServiceDir(site.config.dataDir, '', 'olinda');
    const sqlite = (): string[] =>
      readdirSync(dir)
        .filter((f) => f.endsWith('.sqlite'))
        .sort();
    expect(sqlite()).toEqual([`${a.version}.sqlite`, `${b.version}.sqlite`].sort());
    await a.close();
    await putOlindaMap(site, { properties: { description: 'changed again' } });
    const d = (await services.open('', 'olinda'))!;
    expect(sqlite()).toEqual([`${b.version}.sqlite`, `${d.version}.sqlite`].sort());
    expect(existsSync(join(dir, 'attachments', a.version))).toBe(false);
    expect(existsSync(join(dir, 'attachments', d.version))).toBe(true);
  });

  it('undefined for missing services and other types; folders kept apart', async () => {
    expect(await services.open('', 'nope')).toBeUndefined();
    await site.store.putService({ folder: '', serviceName: 'img', type: 'ImageServer', properties: { path: '/x.tif' }, created: 0 });
    expect(await services.open('', 'img')).toBeUndefined();
    await putOlindaMap(site, { folder: 'Terrain' });
    const inFolder = (await services.open('Terrain', 'olinda'))!;
    expect(inFolder.name).toBe('Terrain/olinda');
    expect(inFolder.tiling.cacheDir.startsWith(mapServiceDir(site.config.dataDir, 'Terrain', 'olinda'))).toBe(true);
    await site.store.deleteService('Terrain/olinda.MapServer');
    expect(await services.open('Terrain', 'olinda')).toBeUndefined();
    expect(mapServicesOf(site)).toBe(mapServicesOf(site));
  });

  it('a map of feature layers only takes the GeoJSON coordinate system', async () => {
    const def = olindaMapDefinition();
    const layers = (def.properties['layers'] as Record<string, unknown>[]).filter((l) => l['type'] === 'feature');
    const map = await openMapService(
      { folder: '', serviceName: 'vectors', type: 'MapServer', properties: { ...def.properties, layers, relationships: [] }, created: 0 },
      { dataDir: site.config.dataDir },
    );
    expect(map.spatialReference).toMatchObject({ wkid: 31985 });
    expect(map.units).toBe('geoMeters');
    // No raster: the levels go down to 1:1000.
    expect(map.tiling.lods[map.tiling.lods.length - 1]!.scale).toBeLessThanOrEqual(1000);
    await map.close();
  });

  it('configuration problems found when opening name their JSON path', async () => {
    const def = olindaMapDefinition();
    const layers = def.properties['layers'] as Record<string, unknown>[];
    const open = (properties: Record<string, unknown>) =>
      openMapService(
        { folder: '', serviceName: 'bad', type: 'MapServer', properties: { ...def.properties, ...properties }, created: 0 },
        { dataDir: site.config.dataDir },
      );
    const withLayer = (i: number, patch: Record<string, unknown>) => ({ layers: layers.map((l, j) => (j === i ? { ...l, ...patch } : l)) });
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [
        withLayer(1, {
          renderer: { type: 'classBreaks', field: 'HEIGHT', classBreakInfos: [{ classMaxValue: 1, symbol: { type: 'esriSLS' } }] },
        }),
        'service.properties.layers[1].renderer.field',
        /'HEIGHT' is not a field/,
      ],
      [
        withLayer(1, { renderer: { type: 'simple', symbol: { type: 'esriSFS' } } }),
        'service.properties.layers[1].renderer',
        /polyline features, drawn with esriSLS/,
      ],
      [
        withLayer(2, {
          renderer: { type: 'classBreaks', field: 'NAME', classBreakInfos: [{ classMaxValue: 1, symbol: { type: 'esriSFS' } }] },
        }),
        'service.properties.layers[2].renderer.field',
        /numeric/,
      ],
      [withLayer(0, { hyperlinkField: 'ELEV' }), 'service.properties.layers[0].hyperlinkField', /string field/],
      [withLayer(0, { popup: '<b>{HEIGHT}</b>' }), 'service.properties.layers[0].popup', /\{HEIGHT\}/],
      [withLayer(0, { displayField: 'nope' }), 'service.properties.layers[0].displayField', /'nope' is not a field/],
      [
        {
          relationships: [
            { name: 'r', origin: 'Elevation classes', destination: 'Inspections', originKey: 'OBJECTID', destinationKey: 'PARCEL' },
          ],
        },
        'service.properties.relationships[0].destinationKey',
        /'PARCEL' is not a field of 'Inspections'/,
      ],
      [
        {
          relationships: [{ name: 'r', origin: 'Relief', destination: 'Inspections', originKey: 'OBJECTID', destinationKey: 'PARCEL_ID' }],
        },
        'service.properties.relationships[0].origin',
        /raster layer/,
      ],
      [withLayer(3, { path: '/nonexistent/dem.tif' }), 'service.properties.layers[3].path', /cannot be opened/],
      [withLayer(3, { path: join(MAP_FIXTURES, 'contours.geojson') }), 'service.properties.layers[3].path', /./],
    ];
    for (const [props, path, message] of cases) {
      const e = await open(props).catch((x: unknown) => x);
      expect(e, path).toBeInstanceOf(EngineError);
      expect((e as EngineError).path).toBe(path);
      expect((e as EngineError).message).toMatch(message);
    }
  });

  it('unitsOf', () => {
    expect(unitsOf({ wkid: 4326, geographic: true })).toBe('geoDecimalDegrees');
    expect(unitsOf({ wkid: 2263, metersPerUnit: 0.3048006096012192 })).toBe('geoFeet');
    expect(unitsOf({ wkid: 3857, metersPerUnit: 1 })).toBe('geoMeters');
    expect(unitsOf(undefined)).toBe('geoUnknownUnits');
  });
});

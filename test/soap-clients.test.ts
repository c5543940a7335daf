/**
 * Real SOAP clients against `rasterflow serve` on loopback HTTPS: zeep 4.2.1 (Debian python3-zeep,
 * run with the system python; test/clients/soap-zeep.py calls all 55 operations) and node-soap 1.13
 * (test/clients/soap-node.ts, a subset). Expected values come from GDAL/OGR on the same files
 * (computed by the zeep script) and from hand computations here.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { PNG as PngClass } from 'pngjs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATION_SIGNATURES } from '../src/adapters/soap/signatures.js';
import { startServer } from '../src/server/serve.js';
import { MAP_FIXTURES, olindaMapDefinition } from './map-fixture.js';

const OLINDA_DEM = new URL('../golden/data/olinda_dem_utm25s.tif', import.meta.url).pathname;

// The clients' answers are loosely typed JSON; the assertions pin their shape.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
type Outcome = { ok: true; value: Json } | { ok: false; error: Json };

const ROOT = new URL('..', import.meta.url).pathname;
const { PNG } = createRequire(import.meta.url)('pngjs') as { PNG: typeof PngClass };
const PYTHON = '/usr/bin/python3';
const zeepMissing = spawnSync(PYTHON, ['-c', 'import zeep, osgeo'], { stdio: 'ignore' }).status !== 0;
if (zeepMissing) console.warn('SKIPPED: zeep client tests need /usr/bin/python3 with zeep (python3-zeep) and GDAL (python3-gdal)');

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, limitMs = 240_000): Promise<Record<string, Outcome>> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(out) as Record<string, Outcome>);
      } catch {
        reject(new Error(`${cmd} exited ${code}: ${out.slice(0, 500)}\n${err.slice(-3000)}`));
      }
    });
  });
}

const b64 = (v: Json): Uint8Array => Buffer.from(v.base64 as string, 'base64');

describe.skipIf(zeepMissing)('SOAP map service: zeep and node-soap against rasterflow serve', () => {
  let dataDir: string;
  let server: Awaited<ReturnType<typeof startServer>>;
  let zeep: Record<string, Outcome>;
  let nodeSoap: Record<string, Outcome>;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'rf-soap-'));
    server = await startServer({
      dataDir,
      port: 0,
      host: '127.0.0.1',
      env: { RASTERFLOW_ADMIN_USERNAME: 'admin', RASTERFLOW_ADMIN_PASSWORD: 'correct horse battery staple' },
      print: () => undefined,
      config: { services: [olindaMapDefinition()] },
    });
    const wsdl = `${server.httpsUrl.replace(/\/$/, '')}/server/services/olinda/MapServer?wsdl`;
    const ca = join(dataDir, 'tls', 'cert.pem');
    [zeep, nodeSoap] = await Promise.all([
      run(PYTHON, [join(ROOT, 'test/clients/soap-zeep.py')], {
        RF_WSDL: wsdl,
        RF_CA: ca,
        REQUESTS_CA_BUNDLE: ca,
        CURL_CA_BUNDLE: ca,
        RF_FIXTURES: MAP_FIXTURES,
        RF_DEM: OLINDA_DEM,
      }),
      run(process.execPath, ['--import', 'tsx', join(ROOT, 'test/clients/soap-node.ts')], { RF_WSDL: wsdl, NODE_EXTRA_CA_CERTS: ca }),
    ]);
  }, 300_000);

  afterAll(async () => {
    await server?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const ok = (r: Record<string, Outcome>, name: string): Json => {
    const o = r[name];
    if (!o) throw new Error(`scenario ${name} did not run`);
    if (!o.ok) throw new Error(`${name} failed: ${JSON.stringify(o.error).slice(0, 3000)}`);
    return o.value;
  };
  const fault = (r: Record<string, Outcome>, name: string): Json => {
    const o = r[name]!;
    expect(o.ok, `${name} should fault`).toBe(false);
    return (o as { error: Json }).error;
  };

  const png = (bytes: Uint8Array): { width: number; height: number; data: Uint8Array } => {
    expect([...bytes.subarray(0, 8)]).toEqual([137, 80, 78, 71, 13, 10, 26, 10]);
    const p = PNG.sync.read(Buffer.from(bytes));
    return { width: p.width, height: p.height, data: new Uint8Array(p.data) };
  };
  const expected = (): Json => ok(zeep, 'expected');

  it('the zeep script calls every one of the 55 operations', () => {
    const script = readFileSync(join(ROOT, 'test/clients/soap-zeep.py'), 'utf8');
    const called = new Set([...script.matchAll(/svc\.(\w+)\(/g)].map((m) => m[1]));
    expect(OPERATION_SIGNATURES.map((o) => o.name).filter((n) => !called.has(n))).toEqual([]);
  });

  it('zeep loads the WSDL and reads the document and map names; an index out of range is a soap:Client fault', () => {
    const d = ok(zeep, 'document');
    expect([d.count, d.name0, d.default]).toEqual([1, 'Layers', 'Layers']);
    expect(d.info.PropertySetProperty.map((p: Json) => p.Key)).toContain('Title');
    expect(d.config.PropertySetProperty.find((p: Json) => p.Key === 'MaximumRecordCount').Value).toBe(1000);
    const f = fault(zeep, 'mapNameOutOfRange');
    expect(f.code).toBe('soap:Client');
    expect(f.detail).toContain('<Code>400</Code>');
  });

  it("GetServerInfo: layers, tables, extent and the spatial reference (EPSG:31985, the DEM's)", () => {
    const i = ok(zeep, 'serverInfo');
    expect(i.layers).toEqual([
      [0, 'Spot heights', 'Feature Layer', true],
      [1, 'Contours', 'Feature Layer', true],
      [2, 'Elevation classes', 'Feature Layer', true],
      [3, 'Relief', 'Raster Layer', false],
    ]);
    expect(i.tables).toEqual(['Inspections']);
    expect(i.SpatialReference.WKID).toBe(31985);
    expect(i.Units).toBe('geoMeters');
  });

  it('ExportMapImage as MIME data: a PNG of the asked size showing the layers (spot-height markers where GDAL puts the spots)', () => {
    const r = ok(zeep, 'exportMime');
    const img = png(b64(r.ImageData));
    expect([img.width, img.height, r.ImageType]).toEqual([400, 300, 'image/png']);
    expect(r.ImageURL ?? '').toBe('');
    expect(r.VisibleLayerIDs.Int).toEqual([0, 1, 2, 3]);
    const e = r.Extent;
    expect((e.XMax - e.XMin) / (e.YMax - e.YMin)).toBeCloseTo(400 / 300, 9);
    const res = (e.XMax - e.XMin) / 400;
    expect(r.MapScale).toBeCloseTo((res * 96) / 0.0254, 6);
    expect(ok(zeep, 'screen').scale).toBeCloseTo(r.MapScale, 6);
    const inside = (expected().spots as [number, number][]).filter(
      ([x, y]) => x > e.XMin + 10 * res && x < e.XMax - 10 * res && y > e.YMin + 10 * res && y < e.YMax - 10 * res,
    );
    expect(inside.length).toBeGreaterThan(0);
    for (const [x, y] of inside) {
      const col = Math.floor((x - e.XMin) / res);
      const row = Math.floor((e.YMax - y) / res);
      const at = (row * 400 + col) * 4;
      const [R, G, B] = [img.data[at]!, img.data[at + 1]!, img.data[at + 2]!];
      expect(R - Math.max(G, B), `spot at ${x},${y} -> pixel ${col},${row} = ${R},${G},${B}`).toBeGreaterThan(80);
    }
  });

  it('ExportMapImage as URL: the image is served over HTTPS; ExportScaleBar draws a bar', () => {
    const u = ok(zeep, 'exportUrl');
    expect(u.ImageURL).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/server\/rest\/directories\/output\/[A-Za-z0-9_-]{22,}\.png$/);
    expect([u.status, u.contentType]).toEqual([200, 'image/png']);
    const bar = ok(zeep, 'scaleBar');
    const img = png(b64(bar.ImageData));
    expect([img.width, img.height]).toEqual([300, 40]);
    let dark = 0;
    for (let i = 0; i < img.data.length; i += 4) if (img.data[i + 3]! > 0 && img.data[i]! < 80 && img.data[i + 1]! < 80) dark++;
    expect(dark).toBeGreaterThan(100);
  });

  it("Find and Identify: the spot by name, and the raster layer's pixel value equal to GDAL's read of the DEM", () => {
    const found = ok(zeep, 'find');
    expect(found.map((f: Json) => [f.Value, f.LayerID, f.FeatureID, f.FieldName])).toEqual([['Spot 1', 0, 1, 'NAME']]);
    // Stored as written: the GeoJSON's EPSG:31985 is the DEM's system, so nothing was reprojected.
    expect([found[0].Shape.X, found[0].Shape.Y]).toEqual([expected().spot1.x, expected().spot1.y]);
    const id = ok(zeep, 'identify');
    expect(id.find((r: Json) => r.LayerID === 0).FeatureID).toBe(1);
    const raster = id.find((r: Json) => r.LayerID === 3);
    const pv = raster.Properties.PropertyArray.PropertySetProperty.find((p: Json) => p.Key === 'Pixel Value');
    expect(Number(pv.Value)).toBe(expected().demAtSpot1);
  });

  it("QueryFeatureCount/IDs/Data with a where clause and a spatial filter equal OGR's answers on the same GeoJSON", () => {
    const q = ok(zeep, 'queryFeatures');
    expect(q.count).toBe(expected().classesWhere.length);
    expect(q.ids).toEqual(expected().classesWhere);
    expect(q.spatialIds).toEqual(expected().classesWhereRect);
    expect(q.fields).toEqual([
      ['OBJECTID', 'geoFieldTypeOID'],
      ['SHAPE', 'geoFieldTypeGeometry'],
      ['CLASS', 'geoFieldTypeInteger'],
      ['NAME', 'geoFieldTypeString'],
      ['AREA', 'geoFieldTypeDouble'],
      ['SURVEYED', 'geoFieldTypeDate'],
    ]);
    const q2 = ok(zeep, 'queryFeatures2');
    expect(q2.count).toBe(expected().classesNot5.length);
    expect(q2.ids).toEqual(expected().classesNot5);
    expect(q2.json.geometryType).toBe('esriGeometryPolygon');
    expect(q2.json.features.map((f: Json) => f.attributes.OBJECTID)).toEqual(expected().classesNot5);
  });

  it('where-clause injection and unknown layers are soap:Client faults', () => {
    expect(fault(zeep, 'injection').message).toMatch(/Invalid where clause at position 4/);
    expect(fault(zeep, 'unknownLayer').message).toBe("Layer 99 does not exist in map 'Layers'.");
    expect(fault(zeep, 'tileNotFound').message).toBe('Tile not found.');
  });

  it("tables: QueryRowCount/IDs/Data, related records by the relationship's keys, statistics by group", () => {
    const rows = ok(zeep, 'rows');
    expect(rows.count).toBe(expected().inspectionsOver50);
    expect(rows.ids).toHaveLength(rows.count);
    expect(rows.data.Object.Records.Record).toHaveLength(rows.count);
    for (const which of ['one', 'two']) {
      const groups = ok(zeep, 'related')[which].Object.RelatedRecordGroups.RelatedRecordGroup;
      const got = Object.fromEntries(
        groups.map((g: Json) => [
          String(g.SourceRowID),
          g.Records.Record.map((r: Json) => r.Values.Value[0]).sort((a: number, b: number) => a - b),
        ]),
      );
      expect(got).toEqual(expected().relatedTo);
    }
    const stats = ok(zeep, 'statistics').Records.Record.map((r: Json) => r.Values.Value);
    for (const [cls, total] of stats) expect(total).toBeCloseTo(expected().areaByClass[String(cls)], 3);
    expect(stats).toHaveLength(Object.keys(expected().areaByClass).length);
  });

  it('hyperlinks, screen <-> map points, distances, legends, SQL syntax and image return types', () => {
    const links = ok(zeep, 'hyperlinks');
    expect(links.length).toBeGreaterThan(0);
    for (const l of links) expect(l.URL).toMatch(/^https:\/\/example\.org\/olinda\/spots\/\d+$/);
    const s = ok(zeep, 'screen');
    expect(s.x.Int ?? s.x).toEqual([0, 200, 399]);
    expect(s.y.Int ?? s.y).toEqual([0, 150, 299]);
    expect(s.distance).toBeCloseTo(4, 2);
    const legend = ok(zeep, 'legend');
    expect(legend.one.map((l: Json) => l.Name)).toEqual(['Spot heights', 'Contours', 'Elevation classes', 'Relief']);
    const classes = legend.two[0].LegendGroups.MapServerLegendGroup[0].LegendClasses.MapServerLegendClass;
    expect(classes.map((c: Json) => c.Label)).toEqual(
      expect.arrayContaining(['Coastal plain', 'Lowland', 'Low hills', 'Hills', 'Heights']),
    );
    for (const c of classes) png(b64(c.SymbolImage.ImageData));
    const sql = ok(zeep, 'sqlAndTypes');
    expect(sql.returnTypes).toBe('geoImageReturnMimeData');
    expect(sql.sql.FunctionNames.PropertyArray.PropertySetProperty.map((p: Json) => p.Key)).toContain('UPPER');
  });

  it("the tile cache: TileCacheInfo, GetMapTile equal to the virtual cache directory's tile, cache descriptions", () => {
    const c = ok(zeep, 'cache');
    expect([c.fixed, c.fused, c.layerCache, c.control]).toEqual([true, true, true, true]);
    expect(c.tileCacheInfo.TileCols).toBe(256);
    expect(c.tileCacheInfo.LODInfos.LODInfo.length).toBeGreaterThan(0);
    const tile = png(b64(c.tile));
    expect([tile.width, tile.height]).toEqual([256, 256]);
    expect(c.virtualTileStatus).toBe(200);
    expect(Buffer.from(b64(c.virtualTile)).equals(Buffer.from(b64(c.tile)))).toBe(true);
    png(b64(c.layerTile));
    expect(c.cacheName).toBe('_alllayers');
    expect(c.storage.StorageFormat).toBe('geoMapCacheStorageModeExploded');
    expect(c.imageInfo.CacheTileFormat).toBe('PNG');
  });

  it('raster values, attachments (bytes equal the stored files), popups, drawing descriptions, subtypes, data classes', () => {
    for (const which of ['one', 'two']) png(b64(ok(zeep, 'rasterValue')[which][0].ImageData));
    const a = ok(zeep, 'attachments');
    expect(a.infos.map((i: Json) => [i.ParentID, i.Name])).toEqual([
      [1, 'survey-notes.txt'],
      [1, 'thumbnail.png'],
      [3, 'notes-copy.txt'],
    ]);
    expect(a.data[0].Data.base64).toBe(expected().attachment1);
    expect(a.data2[0].URL).toMatch(/^https:\/\//);
    const p = ok(zeep, 'popups');
    expect(p.one[0]).toMatch(/^<h3>Coastal plain<\/h3><p>Class 1, /);
    expect(p.two[0]).toMatch(/^<p>Ana Lima scored 0 on /);
    const d = ok(zeep, 'drawing');
    expect(d.drawing).toHaveLength(4);
    expect(d.subtypes[0].SubtypeInfos.SubtypeInfo.map((s: Json) => s.SubtypeName)).toEqual([
      'Coastal plain',
      'Lowland',
      'Low hills',
      'Hills',
      'Heights',
    ]);
    const breaks = ok(zeep, 'classes').breaks.ClassBreakInfos.ClassBreakInfo;
    expect(breaks).toHaveLength(4);
    const maxArea = Math.max(...Object.values(expected().areaByClass as Record<string, number>).map(() => 0), 0);
    expect(breaks[3].ClassMaximumValue).toBeGreaterThan(maxArea);
    expect(ok(zeep, 'classes').unique.UniqueValueInfos.UniqueValueInfo).toHaveLength(5);
  });

  it("node-soap: the 55 operations, and a subset answering as zeep's do", () => {
    expect(ok(nodeSoap, 'describe')).toHaveLength(55);
    expect(ok(nodeSoap, 'mapCount').Result).toBe(1);
    expect(ok(nodeSoap, 'serverInfo').Result.Name).toBe('Layers');
    const img = png(Buffer.from(ok(nodeSoap, 'exportMime').Result.ImageData, 'base64'));
    expect([img.width, img.height]).toEqual([400, 300]);
    expect(ok(nodeSoap, 'queryCount').Result).toBe(expected().classesWhere.length);
    expect(ok(nodeSoap, 'querySpatial').Result.FIDArray.Int).toEqual(expected().classesWhereRect);
    const raster = ok(nodeSoap, 'identify').Result.MapServerIdentifyResult[0];
    expect(raster.LayerID).toBe(3);
    expect(Number(raster.Properties.PropertyArray.PropertySetProperty.find((p: Json) => p.Key === 'Pixel Value').Value.$value)).toBe(
      expected().demAt294000,
    );
    expect(ok(nodeSoap, 'mapTile').Result).toBe(Buffer.from(b64(ok(zeep, 'cache').tile)).toString('base64'));
    expect(ok(nodeSoap, 'legend').Result.MapServerLegendInfo[0].Name).toBe('Elevation classes');
    expect(ok(nodeSoap, 'classes').Result.ClassBreakInfos.ClassBreakInfo).toHaveLength(3);
    const pts = ok(nodeSoap, 'fromMapPoints');
    expect([pts.ScreenXValues.Int, pts.ScreenYValues.Int]).toEqual([[200], [150]]);
    const f = fault(nodeSoap, 'fault');
    expect(f.message).toMatch(/^soap:Client: Map index 9 is out of range/);
    expect(f.fault.detail.GeoError.Code).toBe('400');
  });
});

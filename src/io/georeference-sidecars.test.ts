/**
 * Issue 15, item 4: PNG and JPEG renders stay georeferenced. The render of the bundled DEM written
 * as GeoTIFF, PNG and JPEG (world file + .aux.xml beside the images): GDAL reports the same
 * geotransform and the same CRS for all three, and a one-band JPEG is one band. The GDAL parts are
 * skipped with a message without GDAL's python bindings.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RasterInfo } from '../core/pixel-block.js';
import { registry } from '../functions/index.js';
import { render, renderTiles } from '../graph/render.js';
import { buildGraph } from '../rule/build.js';
import { bindSources } from '../rule/sources.js';
import { encodeByExtension } from './encode.js';
import { pamAuxXml, worldFilePath, worldFileText, writeGeoreferenceSidecars } from './georeference-sidecars.js';
import { openerScope } from './source.js';
import { writeTiffStream } from './tiff-stream-writer.js';

const PYTHON = '/usr/bin/python3';
const haveGdal = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'from osgeo import gdal'], { encoding: 'utf8' }).status === 0;
if (!haveGdal) console.warn('georeference-sidecars.test.ts: GDAL python bindings not found; the GDAL checks are SKIPPED');

const DATA = resolve(import.meta.dirname, '../../golden/data');
const dir = mkdtempSync(join(tmpdir(), 'rasterflow-sidecars-'));

/** GDAL's view of each file: band count, geotransform, and whether its CRS is the first file's. */
function gdalView(paths: readonly string[]): { bands: number; gt: number[]; sameSrs: boolean; epsg: string | null }[] {
  const py = `
import sys, json
from osgeo import gdal
gdal.UseExceptions()
first = None
out = []
for p in sys.argv[1:]:
    ds = gdal.Open(p)
    srs = ds.GetSpatialRef()
    if first is None:
        first = srs
    out.append({'bands': ds.RasterCount, 'gt': list(ds.GetGeoTransform()), 'sameSrs': bool(srs is not None and first is not None and srs.IsSame(first)),
                'epsg': srs.GetAuthorityCode(None) if srs is not None else None})
print(json.dumps(out))
`;
  const r = spawnSync(PYTHON, ['-c', py, ...paths], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as ReturnType<typeof gdalView>;
}

describe('world file and .aux.xml beside PNG and JPEG', () => {
  const info: RasterInfo = {
    width: 10,
    height: 5,
    bandCount: 1,
    pixelType: 'U8',
    extent: { xmin: 1000, ymin: 2000, xmax: 1300, ymax: 2100 },
    cellSize: { x: 30, y: 20 },
    spatialReference: { wkid: 102100 },
  };

  it('world file: pixel sizes, then the centre of the top-left pixel; names as GDAL looks them up', () => {
    expect(worldFileText(info).trim().split('\n').map(Number)).toEqual([30, 0, 0, -20, 1015, 2090]);
    expect(worldFilePath('/a/out.png')).toBe('/a/out.pgw');
    expect(worldFilePath('/a/out.jpg')).toBe('/a/out.jgw');
    expect(worldFilePath('/a/out.jpeg')).toBe('/a/out.jgw');
  });

  it('.aux.xml carries the SRS: WKT when known, else the EPSG code (Esri Web Mercator as 3857), else proj4; none without one', () => {
    expect(pamAuxXml(info)).toContain('<SRS>EPSG:3857</SRS>');
    expect(pamAuxXml({ ...info, spatialReference: { wkt: 'GEOGCS["x & y"]', wkid: 4326 } })).toContain('GEOGCS[&quot;x &amp; y&quot;]');
    expect(pamAuxXml({ ...info, spatialReference: { proj4: '+proj=utm +zone=16 +datum=WGS84 +units=m +no_defs' } })).toContain('+proj=utm');
    expect(pamAuxXml({ ...info, spatialReference: undefined })).toBeUndefined();
  });

  it('an unwritable folder is IO_ERROR at output', async () => {
    await expect(writeGeoreferenceSidecars(join(dir, 'missing', 'x.png'), info)).rejects.toMatchObject({
      code: 'IO_ERROR',
      path: 'output',
    });
  });

  for (const dem of ['jacksboro_fault_dem_utm16n_75m.tif', 'jacksboro_fault_dem_3arcsec.tif']) {
    it(`${dem}: GDAL sees the PNG and the JPEG where the GeoTIFF is, same CRS; the one-band JPEG is greyscale`, async () => {
      const files = openerScope();
      try {
        const { root } = await buildGraph(
          { rasterFunction: 'Hillshade' },
          { registry, resolveSource: bindSources({ $$: join(DATA, dem) }, files.open) },
        );
        const tif = join(dir, `${dem}-hs.tif`);
        await writeTiffStream(tif, root.info, renderTiles(root, { tileSize: 256 }));
        const block = await render(root, { tileSize: 256 });
        const images = ['png', 'jpg'].map((ext) => {
          const path = join(dir, `${dem}-hs.${ext}`);
          writeFileSync(path, encodeByExtension(path, block, root.info, { quality: 90 }));
          return path;
        });
        for (const path of images) {
          const written = await writeGeoreferenceSidecars(path, root.info);
          expect(written).toEqual([worldFilePath(path), `${path}.aux.xml`]);
          expect(readFileSync(`${path}.aux.xml`, 'utf8')).toMatch(/^<PAMDataset>/);
        }
        if (!haveGdal) return;
        const [t, png, jpg] = gdalView([tif, ...images]);
        for (const v of [png!, jpg!]) {
          v.gt.forEach((g, i) => expect(Math.abs(g - t!.gt[i]!), `geotransform[${i}]`).toBeLessThanOrEqual(1e-6));
          expect(v.sameSrs).toBe(true);
          expect(v.epsg).toBe(t!.epsg);
        }
        expect(png!.bands).toBe(1);
        expect(jpg!.bands).toBe(1);
      } finally {
        await files.closeAll();
      }
    });
  }
});

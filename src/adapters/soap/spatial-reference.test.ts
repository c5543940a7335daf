import { describe, expect, it } from 'vitest';
import { epsgOfProj4, proj4ForEpsg } from '../../core/crs.js';
import type { MapService } from '../map/model.js';
import { drawnMap, scaleOf, toMap, toScreen } from './display.js';
import { optionalSpatialReference, soapSpatialReference, spatialReferenceOfSoap } from './spatial-reference.js';

describe('SOAP spatial references', () => {
  it('names a proj4-only system by the EPSG code it equals, and none when several codes share it', () => {
    expect(epsgOfProj4('+proj=utm +zone=25 +south +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs')).toBe(31985);
    for (const code of [32616, 32725, 26915, 4326, 3857]) expect(epsgOfProj4(proj4ForEpsg(code)!)).toBe(code);
    expect(epsgOfProj4(proj4ForEpsg(4674)!)).toBeUndefined(); // ETRS89, GDA94 and SIRGAS 2000 share it
    expect(epsgOfProj4('+proj=lcc +lat_1=33 +lat_2=45 +datum=NAD83 +units=m')).toBeUndefined();
    expect(soapSpatialReference({ proj4: proj4ForEpsg(31985)!, metersPerUnit: 1 })).toEqual({
      $type: 'ProjectedCoordinateSystem',
      WKID: 31985,
      LatestWKID: 31985,
    });
    expect(soapSpatialReference({ wkid: 102100, proj4: proj4ForEpsg(3857)! })).toEqual({
      $type: 'ProjectedCoordinateSystem',
      WKID: 102100,
      LatestWKID: 3857,
    });
    expect(soapSpatialReference({ wkid: 4326, geographic: true })).toMatchObject({ $type: 'GeographicCoordinateSystem', WKID: 4326 });
    expect(soapSpatialReference({})).toEqual({ $type: 'UnknownCoordinateSystem' });
  });

  it('reads WKID, LatestWKID or WKT; an SR naming nothing is "the map\'s own" where optional, an error where required', () => {
    expect(spatialReferenceOfSoap({ $type: 'ProjectedCoordinateSystem', WKID: 32725 }, 'SR').wkid).toBe(32725);
    expect(spatialReferenceOfSoap({ $type: 'ProjectedCoordinateSystem', WKID: 999999, LatestWKID: 3857 }, 'SR').wkid).toBe(3857);
    expect(() => spatialReferenceOfSoap({ $type: 'UnknownCoordinateSystem' }, 'MapPoints/SpatialReference')).toThrow(
      /MapPoints\/SpatialReference: a spatial reference needs/,
    );
    expect(optionalSpatialReference({ $type: 'UnknownCoordinateSystem' }, 'x')).toBeUndefined();
    expect(optionalSpatialReference(undefined, 'x')).toBeUndefined();
    expect(() =>
      optionalSpatialReference({ $type: 'ProjectedCoordinateSystem', WKID: 123456789 }, 'MapDescription/SpatialReference'),
    ).toThrow(/MapDescription\/SpatialReference/);
  });
});

describe('the drawn map of a MapDescription and an ImageDisplay', () => {
  const service = {
    spatialReference: { wkid: 32725, proj4: proj4ForEpsg(32725)!, metersPerUnit: 1 },
    initialExtent: { xmin: 0, ymin: 0, xmax: 1000, ymax: 1000 },
    maxImageWidth: 4096,
    maxImageHeight: 4096,
    bookmarks: [{ name: 'B', extent: { xmin: 100, ymin: 100, xmax: 200, ymax: 300 } }],
    mapName: 'Layers',
  } as unknown as MapService;
  const display = { ImageWidth: 400, ImageHeight: 300, ImageDPI: 96 };
  const paths = { mapDescription: 'MapDescription', imageDisplay: 'ImageDisplay' };

  it('grows the short side about the centre to the image aspect; scale = m/px x DPI / 0.0254', async () => {
    const area = { $type: 'MapExtent', Extent: { $type: 'EnvelopeN', XMin: 0, YMin: 0, XMax: 4000, YMax: 4000 } };
    const m = await drawnMap(service, { Name: 'Layers', MapArea: area }, display, paths);
    expect(m.extent.xmin).toBeCloseTo(-666.6666667, 6);
    expect(m.extent.xmax).toBeCloseTo(4666.6666667, 6);
    expect([m.extent.ymin, m.extent.ymax]).toEqual([0, 4000]);
    expect(m.resolution).toBeCloseTo(13.3333333, 6);
    expect(m.scale).toBeCloseTo((13.333333333 * 96) / 0.0254, 3);
    expect(scaleOf(25, 96, service.spatialReference)).toBeCloseTo(94488.19, 2); // protocols.md §5.5's example
    expect(toMap(m, 0, 0)).toEqual({ x: m.extent.xmin + m.resolution / 2, y: m.extent.ymax - m.resolution / 2 });
    expect(toScreen(m, toMap(m, 123, 45).x, toMap(m, 123, 45).y)).toEqual({ x: 123, y: 45 });
  });

  it('reads CenterAndScale, CenterAndSize and bookmarks; refuses bad displays and unknown bookmarks at their path', async () => {
    const cs = await drawnMap(
      service,
      { Name: 'Layers', MapArea: { $type: 'CenterAndScale', Center: { $type: 'PointN', X: 500, Y: 500 }, Scale: 10000 } },
      display,
      paths,
    );
    expect(cs.scale).toBeCloseTo(10000, 6);
    const size = await drawnMap(
      service,
      { Name: 'Layers', MapArea: { $type: 'CenterAndSize', Center: { $type: 'PointN', X: 0, Y: 0 }, Width: 400, Height: 300, Units: '' } },
      display,
      paths,
    );
    expect(size.extent).toEqual({ xmin: -200, ymin: -150, xmax: 200, ymax: 150 });
    const b = await drawnMap(service, { Name: 'Layers', MapArea: { $type: 'MapServerBookmark', Name: 'B' } }, display, paths);
    expect(b.extent.ymax - b.extent.ymin).toBe(200);
    await expect(
      drawnMap(service, { Name: 'Layers', MapArea: { $type: 'MapServerBookmark', Name: 'Nope' } }, display, paths),
    ).rejects.toThrow(/Bookmark 'Nope'/);
    await expect(drawnMap(service, { Name: 'Layers' }, { ...display, ImageWidth: 0 }, paths)).rejects.toThrow(/ImageDisplay\/ImageWidth/);
    await expect(drawnMap(service, { Name: 'Layers' }, { ...display, ImageWidth: 5000 }, paths)).rejects.toThrow(
      /exceeds this service's largest image/,
    );
  });
});

describe('a MapDescription with its own SpatialReference', () => {
  it("reads an Extent without one in the MapDescription's system (drawn there, not reprojected from the map's)", async () => {
    const service = {
      spatialReference: { wkid: 31985, proj4: proj4ForEpsg(31985)!, metersPerUnit: 1 },
      initialExtent: { xmin: 288776, ymin: 9110771, xmax: 298765, ymax: 9120760 },
      maxImageWidth: 4096,
      maxImageHeight: 4096,
      bookmarks: [],
      mapName: 'Layers',
    } as unknown as MapService;
    const ll = { $type: 'EnvelopeN', XMin: -34.9, YMin: -8.0, XMax: -34.86, YMax: -7.97 };
    const m = await drawnMap(
      service,
      {
        Name: 'Layers',
        SpatialReference: { $type: 'GeographicCoordinateSystem', WKID: 4326 },
        MapArea: { $type: 'MapExtent', Extent: ll },
      },
      { ImageWidth: 400, ImageHeight: 300, ImageDPI: 96 },
      { mapDescription: 'MapDescription', imageDisplay: 'ImageDisplay' },
    );
    expect(m.spatialReference.wkid).toBe(4326);
    expect(m.extent.ymin).toBeCloseTo(-8.0, 9);
    expect(m.extent.ymax).toBeCloseTo(-7.97, 9);
    expect((m.extent.xmin + m.extent.xmax) / 2).toBeCloseTo(-34.88, 9);
  });
});

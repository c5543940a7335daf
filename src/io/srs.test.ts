/**
 * GeoKeys <-> SpatialReference and the GDAL metadata tags. Expected proj4 strings are GDAL 3.6.2's
 * (`osr.SpatialReference().ImportFromEPSG(code); ExportToProj4()`).
 */
import { describe, expect, it } from 'vitest';
import { bandNamesOf, formatNoData, gdalMetadataXml, parseGdalMetadata, parseNoData, statisticsOf } from './gdal-metadata.js';
import { GEOKEY, geoKeysFromSpatialReference, proj4ForEpsg, spatialReferenceFromGeoKeys, unitsOfProj4 } from './srs.js';

describe('proj4ForEpsg', () => {
  it('matches GDAL for the UTM families, geographic systems and Web Mercator', () => {
    const gdal: Record<number, string> = {
      32616: '+proj=utm +zone=16 +datum=WGS84 +units=m +no_defs',
      32725: '+proj=utm +zone=25 +south +datum=WGS84 +units=m +no_defs',
      31985: '+proj=utm +zone=25 +south +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs',
      31965: '+proj=utm +zone=11 +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs',
      31977: '+proj=utm +zone=17 +south +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs',
      26916: '+proj=utm +zone=16 +datum=NAD83 +units=m +no_defs',
      25832: '+proj=utm +zone=32 +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs',
      4326: '+proj=longlat +datum=WGS84 +no_defs',
      4269: '+proj=longlat +datum=NAD83 +no_defs',
      4674: '+proj=longlat +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +no_defs',
      4258: '+proj=longlat +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +no_defs',
      3857: '+proj=merc +a=6378137 +b=6378137 +lat_ts=0 +lon_0=0 +x_0=0 +y_0=0 +k=1 +units=m +nadgrids=@null +wktext +no_defs',
    };
    for (const [code, def] of Object.entries(gdal)) expect(proj4ForEpsg(Number(code)), code).toBe(def);
    expect(proj4ForEpsg(2263)).toBeUndefined(); // not in the table, not registered with proj4
  });
});

describe('spatialReferenceFromGeoKeys', () => {
  it('projected EPSG with units', () => {
    expect(spatialReferenceFromGeoKeys({ GTModelTypeGeoKey: 1, ProjectedCSTypeGeoKey: 2263, ProjLinearUnitsGeoKey: 9003 })).toEqual({
      wkid: 2263,
      metersPerUnit: 1200 / 3937,
    });
    expect(spatialReferenceFromGeoKeys({ GTModelTypeGeoKey: 1, ProjectedCSTypeGeoKey: 32616 })).toMatchObject({
      wkid: 32616,
      metersPerUnit: 1,
    });
  });

  it('user-defined Transverse Mercator in feet', () => {
    const sr = spatialReferenceFromGeoKeys({
      GTModelTypeGeoKey: 1,
      ProjectedCSTypeGeoKey: 32767,
      ProjCoordTransGeoKey: 1,
      ProjLinearUnitsGeoKey: 9002,
      ProjNatOriginLatGeoKey: 0,
      ProjNatOriginLongGeoKey: -87,
      ProjScaleAtNatOriginGeoKey: 0.9996,
      ProjFalseEastingGeoKey: 1000,
      ProjFalseNorthingGeoKey: 0,
      GeographicTypeGeoKey: 4269,
    });
    expect(sr).toEqual({
      proj4: '+proj=tmerc +lat_0=0 +lon_0=-87 +k=0.9996 +x_0=304.8 +y_0=0 +datum=NAD83 +units=ft +no_defs',
      metersPerUnit: 0.3048,
    });
  });

  it('geographic, user-defined ellipsoid by axes', () => {
    expect(
      spatialReferenceFromGeoKeys({
        GTModelTypeGeoKey: 2,
        GeographicTypeGeoKey: 32767,
        GeogSemiMajorAxisGeoKey: 6378388,
        GeogInvFlatteningGeoKey: 297,
      }),
    ).toEqual({
      proj4: '+proj=longlat +a=6378388 +rf=297 +no_defs',
      geographic: true,
    });
  });

  it('nothing to go on: undefined, or the grid without CRS details', () => {
    expect(spatialReferenceFromGeoKeys(null)).toBeUndefined();
    expect(spatialReferenceFromGeoKeys({ GTRasterTypeGeoKey: 1 })).toBeUndefined();
    expect(spatialReferenceFromGeoKeys({ GTModelTypeGeoKey: 1, ProjectedCSTypeGeoKey: 32767 })).toEqual({ metersPerUnit: 1 });
  });
});

describe('geoKeysFromSpatialReference', () => {
  const ids = (keys: ReturnType<typeof geoKeysFromSpatialReference>) => Object.fromEntries(keys.map((k) => [k.id, k.value]));
  it('EPSG codes, aliases and units', () => {
    expect(ids(geoKeysFromSpatialReference({ wkid: 32616, metersPerUnit: 1 }))).toEqual({
      [GEOKEY.GTModelType]: 1,
      [GEOKEY.GTRasterType]: 1,
      [GEOKEY.ProjectedCSType]: 32616,
      [GEOKEY.ProjLinearUnits]: 9001,
    });
    expect(ids(geoKeysFromSpatialReference({ wkid: 4326 }))).toMatchObject({ [GEOKEY.GTModelType]: 2, [GEOKEY.GeographicType]: 4326 });
    expect(ids(geoKeysFromSpatialReference({ wkid: 102100 }))).toMatchObject({ [GEOKEY.ProjectedCSType]: 3857 });
    expect(ids(geoKeysFromSpatialReference({ wkid: 3000, metersPerUnit: 2 }))).toMatchObject({
      [GEOKEY.ProjLinearUnits]: 32767,
      [GEOKEY.ProjLinearUnitSize]: [2],
    });
  });

  it('keys come out sorted by id, and an unusable SR gives only the raster type', () => {
    const keys = geoKeysFromSpatialReference({ proj4: '+proj=utm +zone=25 +south +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs' });
    expect(keys.map((k) => k.id)).toEqual([...keys.map((k) => k.id)].sort((a, b) => a - b));
    expect(geoKeysFromSpatialReference({ proj4: '+proj=lcc +lat_1=33 +datum=WGS84' })).toEqual([
      { id: GEOKEY.GTRasterType, kind: 'short', value: 1 },
    ]);
    expect(geoKeysFromSpatialReference(undefined)).toEqual([{ id: GEOKEY.GTRasterType, kind: 'short', value: 1 }]);
  });

  it('unitsOfProj4', () => {
    expect(unitsOfProj4('+proj=lcc +units=us-ft')).toBe(1200 / 3937);
    expect(unitsOfProj4('+proj=lcc +to_meter=0.201168')).toBe(0.201168);
    expect(unitsOfProj4('+proj=longlat')).toBeUndefined();
  });
});

describe('GDAL_METADATA and GDAL_NODATA', () => {
  it('parses what GDAL writes (items with sample and role), escaping included', () => {
    const md = parseGdalMetadata(`<GDALMetadata>
  <Item name="SOURCE">matplotlib sample_data/jacksboro_fault_dem.npz</Item>
  <Item name="UNITTYPE" sample="0" role="unittype">m</Item>
  <Item name="DESCRIPTION" sample="0" role="description">elevation &amp; &lt;m&gt;</Item>
  <Item name="STATISTICS_MAXIMUM" sample="0">1074.35400390625</Item>
  <Item name="STATISTICS_MINIMUM" sample="0">236.45242309570312</Item>
  <Item name="STATISTICS_MEAN" sample="1">5</Item>
</GDALMetadata>`);
    expect(md.dataset.get('SOURCE')).toBe('matplotlib sample_data/jacksboro_fault_dem.npz');
    expect(bandNamesOf(md, 2)).toEqual(['elevation & <m>', 'Band_2']);
    expect(statisticsOf(md, 1)).toEqual([{ min: 236.45242309570312, max: 1074.35400390625 }]);
    expect(statisticsOf(md, 2)).toBeUndefined(); // band 2 has no min/max
  });

  it('round-trips statistics and names through the XML we write', () => {
    const xml = gdalMetadataXml([{ min: 0, max: 1e-300, mean: -0.5, stdDev: 2 }], ['a"b'], 1)!;
    const md = parseGdalMetadata(xml);
    expect(statisticsOf(md, 1)).toEqual([{ min: 0, max: 1e-300, mean: -0.5, stdDev: 2 }]);
    expect(bandNamesOf(md, 1)).toEqual(['a"b']);
    expect(gdalMetadataXml(undefined, undefined, 3)).toBeUndefined();
  });

  it('NoData text both ways', () => {
    expect(parseNoData('-9999\0')).toBe(-9999);
    expect(parseNoData('nan')).toBeNaN();
    expect(parseNoData('-inf')).toBe(-Infinity);
    expect(parseNoData('3.4028234663852886e+38')).toBe(3.4028234663852886e38);
    expect(parseNoData('')).toBeUndefined();
    expect(parseNoData('abc')).toBeUndefined();
    expect([Number.NaN, Infinity, -Infinity, -9999, 0.1].map(formatNoData)).toEqual(['nan', 'inf', '-inf', '-9999', '0.1']);
  });
});

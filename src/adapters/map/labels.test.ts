import { beforeAll, describe, expect, it } from 'vitest';
import { featureLayer, memoryMap, memoryTable } from '../../../test/memory-map.js';
import { testSite } from '../../../test/site.js';
import { imageServicesOf, type ImageServices } from '../image/service.js';
import { drawnMap, toScreen } from '../soap/display.js';
import { drawMap } from './draw.js';
import { expressionFields, labelAnchor, labelText } from './labels.js';
import { DEFAULT_TEXT } from './scale-bar.js';

describe('label expressions', () => {
  it('read fields in the VBScript, Arcade and Python forms, joined to quoted text', () => {
    const a = { NAME: 'Spot 1', ELEV: 88, NOTE: null };
    expect(labelText('[NAME] & " (" & [ELEV] & " m)"', a)).toBe('Spot 1 (88 m)');
    expect(labelText('$feature.NAME + " / " + $feature["ELEV"]', a)).toBe('Spot 1 / 88');
    expect(labelText('!NAME!', a)).toBe('Spot 1');
    expect(labelText('[name]', a)).toBe('Spot 1');
    expect(labelText('[NOTE]', a)).toBe('');
    expect(labelText('"a & b" & [ELEV]', a)).toBe('a & b88');
    expect(expressionFields('[NAME] & " " & $feature.ELEV & !X!')).toEqual(['NAME', 'ELEV', 'X']);
  });

  it('anchors points above them, lines half way along, polygons inside', () => {
    expect(labelAnchor({ type: 'Point', coordinates: [1, 2] })).toEqual({ x: 1, y: 2, at: 'above' });
    expect(
      labelAnchor({
        type: 'LineString',
        coordinates: [
          [0, 0],
          [10, 0],
          [10, 30],
        ],
      }),
    ).toEqual({ x: 10, y: 10, at: 'center' });
    // an L-shaped polygon: the anchor is inside it, not at its bounding box centre (outside)
    const l = labelAnchor({
      type: 'Polygon',
      coordinates: [
        [
          [0, 0],
          [10, 0],
          [10, 2],
          [2, 2],
          [2, 10],
          [0, 10],
          [0, 0],
        ],
      ],
    })!;
    const inside = (l.x >= 0 && l.x <= 10 && l.y >= 0 && l.y <= 2) || (l.x >= 0 && l.x <= 2 && l.y >= 0 && l.y <= 10);
    expect(inside).toBe(true);
  });
});

describe('labels on the map', () => {
  let services: ImageServices;
  beforeAll(async () => {
    services = imageServicesOf(await testSite());
  });
  const CX = 745000;
  const CY = 4055000;
  const UTM = { wkid: 32616 };
  const FULL = { xmin: 730000, ymin: 4030000, xmax: 760000, ymax: 4070000 };

  it('writes each label above its point and drops a label that would overlap one already placed', async () => {
    const table = memoryTable(
      [
        { id: 1, attributes: { NAME: 'Alpha' }, geometry: { type: 'Point', coordinates: [CX - 1000, CY] } },
        { id: 2, attributes: { NAME: 'Beta' }, geometry: { type: 'Point', coordinates: [CX + 1000, CY] } },
        { id: 3, attributes: { NAME: 'Gamma' }, geometry: { type: 'Point', coordinates: [CX + 1000, CY] } },
      ],
      'point',
    );
    const symbol = { type: 'esriSMS', style: 'esriSMSCircle', color: [0, 0, 0, 0], size: 1 };
    const service = memoryMap([featureLayer(0, 'Wells', table, { type: 'simple', symbol }, { displayField: 'NAME' })], UTM, FULL);
    const d = await drawnMap(
      service,
      {
        Name: 'Layers',
        MapArea: { $type: 'MapExtent', Extent: { $type: 'EnvelopeN', XMin: CX - 2000, YMin: CY - 1000, XMax: CX + 2000, YMax: CY + 1000 } },
      },
      { ImageWidth: 400, ImageHeight: 200, ImageDPI: 96 },
      { mapDescription: 'MapDescription', imageDisplay: 'ImageDisplay' },
    );
    const label = { expression: '[NAME]', style: DEFAULT_TEXT, minScale: 0, maxScale: 0 };
    const img = await drawMap(services, service, d, { layers: new Map([[0, { labels: [label] }]]) });
    const darkAround = (x: number, y: number): number => {
      const p = toScreen(d, x, y);
      let n = 0;
      for (let yy = p.y - 20; yy < p.y; yy++) for (let xx = p.x - 30; xx < p.x + 30; xx++) if (img.rgba[4 * (yy * 400 + xx)]! < 128) n++;
      return n;
    };
    expect(darkAround(CX - 1000, CY)).toBeGreaterThan(10);
    expect(darkAround(CX + 1000, CY)).toBeGreaterThan(10);
    // nothing written below the points
    let below = 0;
    for (let y = 110; y < 200; y++) for (let x = 0; x < 400; x++) if (img.rgba[4 * (y * 400 + x)]! < 128) below++;
    expect(below).toBe(0);
    // 'Gamma' overlaps 'Beta' (same point): the map is the same as with Beta alone
    const without = memoryTable(
      [
        { id: 1, attributes: { NAME: 'Alpha' }, geometry: { type: 'Point', coordinates: [CX - 1000, CY] } },
        { id: 2, attributes: { NAME: 'Beta' }, geometry: { type: 'Point', coordinates: [CX + 1000, CY] } },
      ],
      'point',
    );
    const service2 = memoryMap([featureLayer(0, 'Wells', without, { type: 'simple', symbol })], UTM, FULL);
    const img2 = await drawMap(services, service2, d, { layers: new Map([[0, { labels: [label] }]]) });
    expect(Buffer.compare(Buffer.from(img.rgba), Buffer.from(img2.rgba))).toBe(0);
    // and without labels nothing is written at all
    const bare = await drawMap(services, service, d);
    expect(bare.rgba.every((v) => v === 255)).toBe(true);
  });
});

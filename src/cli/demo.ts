/** `rasterflow demo` (`npm run demo`): a small gallery of rules over the bundled sample data. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { render } from '../graph/render.js';
import { registry } from '../functions/index.js';
import { buildGraph } from '../rule/build.js';
import { bindSources } from '../rule/sources.js';
import { encodeByExtension, openerScope, writeGeoreferenceSidecars } from '../io/index.js';
import type { PixelBlock } from '../core/pixel-block.js';
import type { RasterNode } from '../graph/types.js';

const DATA = resolve(dirname(fileURLToPath(import.meta.url)), '../../golden/data');
const DEM = join(DATA, 'jacksboro_fault_dem_utm16n_75m.tif');
const DEM_GEO = join(DATA, 'jacksboro_fault_dem_3arcsec.tif');
const LANDSAT = join(DATA, 'L7_ETMs.tif');

interface Entry {
  readonly name: string;
  readonly input: string;
  readonly rule: unknown;
  readonly formats: readonly string[];
}

const slopeAsU8 = (slopeType: number, scale: number) => ({
  rasterFunction: 'Arithmetic',
  outputPixelType: 'U8',
  rasterFunctionArguments: {
    Raster: { rasterFunction: 'Slope', rasterFunctionArguments: { SlopeType: slopeType } },
    Raster2: scale,
    Operation: 3,
  },
});

export const GALLERY: readonly Entry[] = [
  {
    name: 'hillshade',
    input: DEM,
    rule: { rasterFunction: 'Hillshade', rasterFunctionArguments: { Azimuth: 315, Altitude: 45 } },
    formats: ['tif', 'png'],
  },
  {
    name: 'hillshade-multidirectional',
    input: DEM,
    rule: { rasterFunction: 'Hillshade', rasterFunctionArguments: { HillshadeType: 1 } },
    formats: ['tif', 'png'],
  },
  { name: 'hillshade-geographic', input: DEM_GEO, rule: { rasterFunction: 'Hillshade', variableName: 'DEM' }, formats: ['tif', 'png'] },
  { name: 'slope-degrees', input: DEM, rule: { rasterFunction: 'Slope' }, formats: ['tif'] },
  { name: 'aspect', input: DEM, rule: { rasterFunction: 'Aspect' }, formats: ['tif'] },
  { name: 'curvature-profile', input: DEM, rule: { rasterFunction: 'Curvature', rasterFunctionArguments: { Type: 1 } }, formats: ['tif'] },
  {
    name: 'shaded-relief',
    input: DEM,
    rule: { rasterFunction: 'ShadedRelief', rasterFunctionArguments: { HillshadeType: 1, Colorramp: 'Elevation #1' } },
    formats: ['tif', 'png'],
  },
  { name: 'slope-degrees-u8', input: DEM, rule: slopeAsU8(1, 255 / 90), formats: ['png'] },
  {
    name: 'landsat-natural-color',
    input: LANDSAT,
    rule: { rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [2, 1, 0] } },
    formats: ['tif', 'png', 'jpg'],
  },
  {
    name: 'landsat-false-color',
    input: LANDSAT,
    rule: {
      rasterFunction: 'CompositeBand',
      rasterFunctionArguments: {
        Rasters: [
          { rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [3] } },
          { rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [2] } },
          { rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [1] } },
        ],
      },
    },
    formats: ['png'],
  },
  {
    name: 'landsat-nir-minus-red',
    input: LANDSAT,
    rule: {
      rasterFunction: 'Arithmetic',
      rasterFunctionArguments: {
        Raster: { rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [3] } },
        Raster2: { rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [2] } },
        Operation: 2,
      },
    },
    formats: ['tif'],
  },
  {
    name: 'landsat-stretch-percent-clip',
    input: LANDSAT,
    rule: {
      rasterFunction: 'Stretch',
      rasterFunctionArguments: {
        StretchType: 6,
        MinPercent: 0.5,
        MaxPercent: 0.5,
        DRA: true,
        Raster: { rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [2, 1, 0] } },
      },
    },
    formats: ['png'],
  },
  {
    name: 'landsat-ndvi-colormap',
    input: LANDSAT,
    rule: {
      rasterFunction: 'ColormapToRGB',
      rasterFunctionArguments: {
        Raster: {
          rasterFunction: 'Colormap',
          rasterFunctionArguments: {
            ColormapName: 'NDVI',
            Raster: { rasterFunction: 'NDVI', rasterFunctionArguments: { VisibleBandID: 2, InfraredBandID: 3 } },
          },
        },
      },
    },
    formats: ['png'],
  },
  {
    name: 'landsat-nir-otsu',
    input: LANDSAT,
    rule: {
      rasterFunction: 'Threshold',
      rasterFunctionArguments: { ThresholdType: 1, Raster: { rasterFunction: 'ExtractBand', rasterFunctionArguments: { BandIDs: [3] } } },
    },
    formats: ['tif'],
  },
  {
    name: 'dem-focal-stddev-5x5',
    input: DEM,
    rule: { rasterFunction: 'Statistics', rasterFunctionArguments: { Type: 'StandardDeviation', Columns: 5, Rows: 5 } },
    formats: ['tif'],
  },
  {
    name: 'dem-smoothed-hillshade',
    input: DEM,
    rule: {
      rasterFunction: 'Hillshade',
      rasterFunctionArguments: { Raster: { rasterFunction: 'Convolution', rasterFunctionArguments: { Type: 12 } } },
    },
    formats: ['png'],
  },
  {
    name: 'dem-aspect-arrows',
    input: DEM,
    rule: {
      rasterFunction: 'VectorFieldRenderer',
      rasterFunctionArguments: {
        Raster: {
          rasterFunction: 'CompositeBand',
          rasterFunctionArguments: { Rasters: [{ rasterFunction: 'Slope' }, { rasterFunction: 'Aspect' }] },
        },
        SymbolTileSize: 16,
        MinimumMagnitude: 0,
        MaximumMagnitude: 30,
      },
    },
    formats: ['png'],
  },
];

export async function runDemo(outDir: string, print: (s: string) => void): Promise<string[]> {
  mkdirSync(outDir, { recursive: true });
  const written: string[] = [];
  for (const e of GALLERY) {
    // Close the rasters each entry opened (their file handles were left to the garbage collector).
    const files = openerScope();
    let root: RasterNode;
    let block: PixelBlock;
    try {
      ({ root } = await buildGraph(e.rule, { registry, resolveSource: bindSources({ $$: e.input }, files.open) }));
      block = await render(root, { tileSize: 256 });
    } finally {
      await files.closeAll();
    }
    for (const f of e.formats) {
      const path = join(outDir, `${e.name}.${f}`);
      writeFileSync(path, encodeByExtension(path, block, root.info, { quality: 90 }));
      written.push(path);
      // PNG and JPEG stay georeferenced: a world file and a .aux.xml with the SRS, as GDAL's WORLDFILE=YES.
      if (f !== 'tif') await writeGeoreferenceSidecars(path, root.info);
      print(
        `wrote ${path}  (${root.info.width}x${root.info.height}, ${root.info.bandCount} band(s) ${root.info.pixelType})  rule: ${JSON.stringify(e.rule)}`,
      );
    }
  }
  return written;
}

/**
 * The registry: an explicit, sorted list of every raster function (no side-effect imports).
 * Adding a function means one file in its family folder, one line here, one golden case.
 */
import { createRegistry, type RasterFunction, type Registry } from '../graph/types.js';
import { compositeBand } from './bands/composite-band.js';
import { extractBand } from './bands/extract-band.js';
import { arithmetic } from './local/arithmetic.js';
import { identity } from './local/identity.js';
import { aspect } from './terrain/aspect.js';
import { curvature } from './terrain/curvature.js';
import { elevationVoidFill } from './terrain/elevation-void-fill.js';
import { hillshade } from './terrain/hillshade.js';
import { shadedRelief } from './terrain/shaded-relief.js';
import { slope } from './terrain/slope.js';
import { surfaceParam } from './terrain/surface-param.js';

export const builtinFunctions: readonly RasterFunction[] = [
  arithmetic,
  aspect,
  compositeBand,
  curvature,
  elevationVoidFill,
  extractBand,
  hillshade,
  identity,
  shadedRelief,
  slope,
  surfaceParam,
] as readonly RasterFunction[];

export const registry: Registry = createRegistry(builtinFunctions);

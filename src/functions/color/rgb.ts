/** The output description shared by functions that make an RGB image (3 x U8) on their input's grid. */
import type { BandStatistics, RasterInfo } from '../../core/pixel-block.js';

const FULL: readonly BandStatistics[] = [0, 1, 2].map(() => ({ min: 0, max: 255 }));

/** 3 bands U8 named Red, Green, Blue on `src`'s grid, no NoData value (NoData travels in the mask). */
export function rgbInfo(src: RasterInfo, statistics: readonly BandStatistics[] = FULL): RasterInfo {
  return {
    width: src.width,
    height: src.height,
    bandCount: 3,
    pixelType: 'U8',
    extent: src.extent,
    cellSize: src.cellSize,
    ...(src.spatialReference ? { spatialReference: src.spatialReference } : {}),
    bandNames: ['Red', 'Green', 'Blue'],
    statistics,
  };
}

/**
 * Jobs on a queue (BullMQ on Redis): the training-data export split into chip ranges, and batch
 * renders split into bands of rows, over `rasterflow worker` processes.
 */
export { parseQueueUrl, connectQueue, displayUrl, EXPORTS_QUEUE, RANGES_QUEUE, type QueueSettings } from './connection.js';
export {
  submitExport,
  watchExport,
  cancelExport,
  failureOf,
  DEFAULT_RANGE_SIZE,
  type ExportJobData,
  type SubmitOptions,
} from './export-queue.js';
export { startQueueWorker, openQueueClient, type QueueWorker, type QueueWorkerOptions, type QueueClient } from './worker.js';
export { queuedTiles, planBands, BAND_JOB, type BandJobData, type QueuedRenderOptions } from './render-queue.js';
export { absoluteLocation } from './cli.js';
export {
  submitRender,
  watchRender,
  cancelRender,
  RENDER_JOB,
  type RenderJobData,
  type RenderRequest,
  type RenderProgress,
  type SubmitRenderOptions,
} from './render-job.js';

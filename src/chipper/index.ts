/** The training-data exporter: the library entry points, `import { ... } from 'rasterflow/chipper'`. */
export { exportTrainingData, type ExportOptions, type ExportProgress, type ExportSummary } from './export.js';
export {
  createJobManager,
  JOB_STATUSES,
  TERMINAL,
  type JobManager,
  type JobManagerOptions,
  type JobMessage,
  type JobStatus,
  type JobView,
  type ResultParameter,
} from './job.js';
export { parseChipParams, METADATA_FORMATS, CHIP_FORMATS, type ChipParams, type MetadataFormat, type ChipFormat } from './params.js';

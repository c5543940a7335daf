/** The training-data exporter (seed section 6): the library entry points. */
export { exportTrainingData, type ExportOptions, type ExportProgress, type ExportSummary } from './export.js';
export { createJobManager, JOB_STATUSES, TERMINAL, type JobManager, type JobManagerOptions, type JobMessage, type JobStatus, type JobView, type ResultParameter } from './job.js';
export { parseChipParams, METADATA_FORMATS, CHIP_FORMATS, type ChipParams, type MetadataFormat, type ChipFormat } from './params.js';

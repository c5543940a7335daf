/**
 * `serve --queue`: the geoprocessing jobs of the training-data task on the job queue. The GP job's
 * id is the queue job's id, so a server started again follows the jobs an earlier run submitted
 * (their records in the site store say which), and progress, cancel and status go through the
 * same job runner and REST front as in-process jobs.
 */
import { Job } from 'bullmq';
import type { JobQueueHook } from '../adapters/gp/jobs.js';
import { EngineError } from '../core/errors.js';
import { cancelExport, submitExport, watchExport } from './export-queue.js';
import type { QueueClient } from './worker.js';

export function gpQueueHook(client: QueueClient): JobQueueHook {
  const detach = new AbortController();
  return {
    async run(jobId, params, options, started) {
      const existing = await Job.fromId(client.exports, jobId);
      if (existing === undefined) {
        if (params === undefined) {
          throw new EngineError(
            'NOT_FOUND',
            'the job is no longer on the job queue (its Redis lost it while the server was stopped); submit it again with "resume": true',
          );
        }
        await submitExport(client.exports, params, { jobId, ...(options.inputPolicy ? { inputPolicy: options.inputPolicy } : {}) });
      }
      return watchExport(client.exports, client.redis, client.settings, jobId, {
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
        detach: detach.signal,
        started,
      });
    },
    cancel: (jobId) => cancelExport(client.exports, client.redis, client.settings, jobId),
    detach() {
      detach.abort();
      return Promise.resolve();
    },
  };
}

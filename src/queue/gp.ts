/**
 * `serve --queue`: the geoprocessing jobs of the training-data task on the job queue. The GP job's
 * id is the queue job's id, so a server started again follows the jobs an earlier run submitted
 * (their records in the site store say which), and progress, cancel and status go through the
 * same job runner and REST front as in-process jobs.
 */
import { Job } from 'bullmq';
import { generateOutcome, type GenerateLimits, type GenerateParams } from '../adapters/gp/generate-raster-task.js';
import type { JobQueueHook, TaskQueueHook } from '../adapters/gp/jobs.js';
import { EngineError } from '../core/errors.js';
import { cancelExport, submitExport, watchExport } from './export-queue.js';
import { cancelRender, submitRender, watchRender } from './render-job.js';
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

/**
 * The GenerateRaster task's jobs on the job queue: a `render` job (render-job.ts) under the GP
 * job's id, its bands rendered by any worker; followed again after a server restart like exports.
 */
export function gpRenderHook(client: QueueClient, o: { readonly limits?: GenerateLimits } = {}): TaskQueueHook {
  const detach = new AbortController();
  return {
    async run(jobId, params, options, started) {
      const existing = await Job.fromId(client.exports, jobId);
      if (existing === undefined) {
        if (params === undefined) {
          throw new EngineError(
            'NOT_FOUND',
            'the job is no longer on the job queue (its Redis lost it while the server was stopped); submit it again',
          );
        }
        // The disk quota's room now: the worker checks the output's size against it.
        const room = typeof options.maxBytes === 'function' ? options.maxBytes(0) : options.maxBytes;
        await submitRender(client.exports, params as unknown as GenerateParams, {
          jobId,
          ...(options.inputPolicy ? { inputPolicy: options.inputPolicy } : {}),
          ...(o.limits ? { limits: o.limits } : {}),
          ...(room !== undefined ? { maxBytes: room, maxBytesName: options.maxBytesName ?? 'maxBytes' } : {}),
        });
      }
      const summary = await watchRender(client.exports, client.redis, client.settings, jobId, {
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
        detach: detach.signal,
        started,
      });
      return generateOutcome(summary);
    },
    cancel: (jobId) => cancelRender(client.exports, client.redis, client.settings, jobId),
    detach() {
      detach.abort();
      return Promise.resolve();
    },
  };
}

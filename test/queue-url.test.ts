/** `--queue` URLs and the queued chip's absolute paths (no Redis needed). */
import { describe, expect, it } from 'vitest';
import { parseQueueUrl } from '../src/queue/connection.js';
import { absoluteParams } from '../src/queue/cli.js';
import { catchError } from './helpers.js';

describe('--queue URLs', () => {
  it('takes redis:// and rediss:// with user, password, database and a key prefix', () => {
    const s = parseQueueUrl('rediss://bob:s%3Acret@redis.example:6380/2?prefix=site-a');
    expect(s.prefix).toBe('site-a');
    expect(s.redis).toMatchObject({ host: 'redis.example', port: 6380, db: 2, username: 'bob', password: 's:cret' });
    expect(s.redis.tls).toBeDefined();
    expect(parseQueueUrl('redis://127.0.0.1').redis).toMatchObject({ host: '127.0.0.1', port: 6379, db: 0 });
    expect(parseQueueUrl('redis://[::1]:7000').redis).toMatchObject({ host: '::1', port: 7000 });
  });

  it.each([
    ['localhost:6379', /--queue must be a redis:\/\/ or rediss:\/\/ URL/],
    ['http://127.0.0.1:6379', /--queue must be a redis:\/\/ or rediss:\/\/ URL/],
    ['not a url', /--queue must be a Redis URL such as redis:\/\/127\.0\.0\.1:6379/],
    ['redis://127.0.0.1/x', /database number .* whole number, got x/],
    ['redis://127.0.0.1?prefix=a b', /prefix must be letters/],
  ])('refuses %s naming --queue', (url, message) => {
    const e = catchError(() => parseQueueUrl(url));
    expect(e?.code).toBe('INVALID_ARGUMENT');
    expect(e?.path).toBe('queue');
    expect(e?.message).toMatch(message);
  });

  it('never shows the password in a message', () => {
    expect(catchError(() => parseQueueUrl('http://u:hunter2@h:1'))?.message).toBe(
      '--queue must be a redis:// or rediss:// URL (the Redis server of the job queue), got http://u:***@h:1/',
    );
  });
});

describe("a queued chip's parameters", () => {
  it('resolves relative input and output paths against the submitting folder; URLs and absolute paths are kept', () => {
    const p = absoluteParams(
      {
        inputRaster: ['a.tif', { url: 'b.tif', renderingRule: { rasterFunction: 'Slope' } }, 'https://h/c.tif'],
        InputClassData: 'labels.geojson',
        outputLocation: 'out',
        inputMaskPolygons: '/abs/mask.geojson',
        tileSize: { x: 8, y: 8 },
      },
      '/work/here',
    );
    expect(p).toEqual({
      inputRaster: ['/work/here/a.tif', { url: '/work/here/b.tif', renderingRule: { rasterFunction: 'Slope' } }, 'https://h/c.tif'],
      InputClassData: '/work/here/labels.geojson',
      outputLocation: '/work/here/out',
      inputMaskPolygons: '/abs/mask.geojson',
      tileSize: { x: 8, y: 8 },
    });
  });
});

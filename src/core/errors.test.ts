import { describe, expect, it } from 'vitest';
import { memorySource } from '../graph/memory-source.js';
import { catchError } from '../../test/helpers.js';
import { ERROR_CODES, ERROR_TABLE } from './errors.js';
import type { RasterInfo } from './pixel-block.js';

describe('ERROR_TABLE', () => {
  it('maps every code to an exit status, an HTTP status and a protocol message', () => {
    expect(Object.keys(ERROR_TABLE).sort()).toEqual([...ERROR_CODES].sort());
    for (const code of ERROR_CODES) {
      const e = ERROR_TABLE[code];
      expect(e.exitStatus, code).toBeGreaterThan(0);
      expect(e.exitStatus, `${code}: 2 is the usage-error status`).not.toBe(2);
      expect(e.httpStatus, code).toBeGreaterThanOrEqual(400);
      expect(e.protocolMessage.length, code).toBeGreaterThan(0);
    }
    // Client mistakes are 4xx, server-side faults 5xx.
    expect(ERROR_TABLE.INVALID_ARGUMENT.httpStatus).toBe(400);
    expect(ERROR_TABLE.INTERNAL.httpStatus).toBe(500);
  });
});

describe('errors at the public edges are EngineErrors with a path', () => {
  const info = { width: 2, height: 2, bandCount: 1, pixelType: 'U8' } as RasterInfo;

  it('memorySource names the band, the mask or the band count that does not fit', () => {
    expect(catchError(() => memorySource('m', info, []))).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'bands' });
    expect(catchError(() => memorySource('m', info, [new Uint8Array(3)]))).toMatchObject({ code: 'INVALID_ARGUMENT', path: 'bands[0]' });
    expect(catchError(() => memorySource('m', info, [new Uint8Array(4)], new Uint8Array(5)))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      path: 'mask',
    });
    expect(memorySource('m', info, [new Uint8Array(4)], new Uint8Array(4)).info.width).toBe(2);
  });
});

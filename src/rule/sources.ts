/**
 * A SourceResolver from bindings of reference names (`$$`, `$1`, `$2101234`, variable names) to
 * locations, with the opener injected (the engine's rule layer does not depend on io). Each
 * location is opened once, so `$$` and `$1` naming the same file share one source node.
 */
import { EngineError } from '../core/errors.js';
import type { SourceNode } from '../graph/types.js';
import type { SourceResolver } from './build.js';

export type Opener = (location: string, options: { id: string }) => Promise<SourceNode>;

export interface BindOptions {
  /**
   * A reference bound to nothing: return the location to open (and the caller may record it), or
   * undefined for the error. The chipper opens bare names as paths so.
   */
  readonly unbound?: (name: string) => string | undefined;
  /** What the error for an unbound reference suggests, in the caller's terms (the CLI: `--input`). */
  readonly hint?: (name: string) => string;
}

export function bindSources(
  bound: ReadonlyMap<string, string> | Readonly<Record<string, string>>,
  open: Opener,
  options: BindOptions = {},
): SourceResolver {
  const entries =
    bound instanceof Map
      ? [...(bound as ReadonlyMap<string, string>).entries()]
      : Object.entries(bound as Readonly<Record<string, string>>);
  const byName = new Map(entries.map(([k, v]) => [k.toLowerCase(), v] as const));
  const opened = new Map<string, Promise<SourceNode>>();
  const openOnce = (location: string): Promise<SourceNode> => {
    let p = opened.get(location);
    if (p === undefined) {
      p = open(location, { id: location });
      opened.set(location, p);
    }
    return p;
  };
  return async (ref, path) => {
    if (ref.kind === 'url') {
      try {
        return await openOnce(ref.url);
      } catch (e) {
        const err = e instanceof EngineError ? e : new EngineError('IO_ERROR', String(e));
        throw new EngineError(err.code, err.message, { path, cause: e });
      }
    }
    const bound = byName.get(ref.name.toLowerCase()) ?? (ref.name === '$1' ? byName.get('$$') : undefined);
    const fallback = bound === undefined ? options.unbound?.(ref.name) : undefined;
    if (fallback !== undefined) {
      // Written in the rule, so a failure to open it is reported at the rule's path.
      return openOnce(fallback).catch((e: unknown) => {
        const err = e instanceof EngineError ? e : new EngineError('IO_ERROR', String(e));
        throw new EngineError(err.code, err.message, { path, cause: e });
      });
    }
    const location = bound;
    if (location === undefined) {
      const known = entries.map(([k]) => k).join(', ') || 'none';
      const hint = options.hint?.(ref.name);
      throw new EngineError('INVALID_ARGUMENT', `no raster is bound to ${ref.name} (bound: ${known})${hint ? `; ${hint}` : ''}`, { path });
    }
    return openOnce(location);
  };
}

/**
 * Sign-in throttling (protocols.md §6: "throttle failures per user and per IP"): failed attempts are
 * counted per username and per client address within `config.throttleWindowMs`; once either count
 * reaches `config.throttleAttempts` every attempt for that user or from that address is refused with
 * TOO_MANY_ATTEMPTS (429) until the window that started with the first failure has passed, even
 * with the right password. A success clears the user's count. In memory and bounded.
 */
import { EngineError } from '../../core/errors.js';
import type { SiteDeps } from '../site.js';

/** Decision: at most this many counters per kind; beyond it expired ones go, then the oldest. */
export const MAX_THROTTLE_ENTRIES = 10_000;

interface Counter {
  count: number;
  /** Start of the window (first failure). */
  since: number;
}

export interface Throttle {
  /** Throws TOO_MANY_ATTEMPTS when the user or the address has used up its attempts. */
  check(username: string, address: string): void;
  /** Counts one failure for both. */
  fail(username: string, address: string): void;
  /** A successful sign-in clears the user's count (the address keeps its count). */
  succeed(username: string): void;
  /** Number of counters held (for the bound). */
  size(): number;
}

export const TOO_MANY_ATTEMPTS_MESSAGE = 'Too many invalid attempts. Please try again later.';

export const tooManyAttempts = (): EngineError =>
  new EngineError('TOO_MANY_ATTEMPTS', 'too many failed sign-in attempts', { details: [TOO_MANY_ATTEMPTS_MESSAGE] });

export function createThrottle(deps: Pick<SiteDeps, 'clock' | 'config'>, maxEntries = MAX_THROTTLE_ENTRIES): Throttle {
  const users = new Map<string, Counter>();
  const addresses = new Map<string, Counter>();
  const { throttleAttempts, throttleWindowMs } = deps.config;

  const live = (map: Map<string, Counter>, key: string): Counter | undefined => {
    const c = map.get(key);
    if (c && deps.clock.now() - c.since >= throttleWindowMs) {
      map.delete(key);
      return undefined;
    }
    return c;
  };

  const bump = (map: Map<string, Counter>, key: string): void => {
    const c = live(map, key);
    if (c) {
      c.count++;
      return;
    }
    if (map.size >= maxEntries) {
      const now = deps.clock.now();
      for (const [k, v] of map) if (now - v.since >= throttleWindowMs) map.delete(k);
      // Still full: drop the oldest windows (Map keeps insertion order).
      for (const k of map.keys()) {
        if (map.size < maxEntries) break;
        map.delete(k);
      }
    }
    map.set(key, { count: 1, since: deps.clock.now() });
  };

  return {
    check: (username, address) => {
      const u = live(users, username);
      const a = live(addresses, address);
      if ((u && u.count >= throttleAttempts) || (a && a.count >= throttleAttempts)) throw tooManyAttempts();
    },
    fail: (username, address) => {
      bump(users, username);
      bump(addresses, address);
    },
    succeed: (username) => void users.delete(username),
    size: () => users.size + addresses.size,
  };
}

const throttles = new WeakMap<object, Throttle>();

/** The site's throttle, shared by generateToken and the OAuth sign-in page (keyed on the store). */
export function throttleOf(deps: Pick<SiteDeps, 'clock' | 'config' | 'store'>): Throttle {
  let t = throttles.get(deps.store);
  if (!t) {
    t = createThrottle(deps);
    throttles.set(deps.store, t);
  }
  return t;
}

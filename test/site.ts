/** Test helpers for the site adapters: a throw-away site on an in-memory store, users, tokens, requests. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashPassword, ADMIN_AUDIENCE, PORTAL_AUDIENCE } from '../src/adapters/auth.js';
import { setPeerAddress, type Privilege, type SiteConfig, type UserRole } from '../src/adapters/site.js';
import { issueToken, type Binding, type Clock } from '../src/adapters/tokens.js';
import { openSite, type Site } from '../src/server/site.js';
import { openSqliteStore } from '../src/server/sqlite-store.js';

/** A clock tests move by hand. */
export interface ManualClock extends Clock {
  set(ms: number): void;
  advance(ms: number): void;
}

export function manualClock(start = Date.UTC(2026, 0, 15, 12)): ManualClock {
  let t = start;
  return { now: () => t, set: (ms) => void (t = ms), advance: (ms) => void (t += ms) };
}

export interface TestSite extends Site {
  readonly clock: ManualClock;
  /** Adds a user (password = `${username}-pw`) with a built-in role and custom roles. */
  addUser(username: string, role?: UserRole, privileges?: readonly Privilege[]): Promise<void>;
  /** A token for `username`, bound to referer `http://test` unless another binding is given. */
  token(username: string, options?: { audience?: string; binding?: Binding; minutes?: number }): Promise<string>;
}

export const TEST_REFERER = 'http://test';
export const TEST_IP = '127.0.0.1';

/** A site on `:memory:` SQLite with a data dir in the temp folder and a manual clock. */
export async function testSite(config: Partial<Omit<SiteConfig, 'dataDir'>> = {}): Promise<TestSite> {
  const clock = manualClock();
  const store = openSqliteStore(':memory:', { clock });
  const dataDir = mkdtempSync(join(tmpdir(), 'rf-site-'));
  const site = await openSite({ store, dataDir, clock, config: { portalId: 'org1', ...config } });
  return {
    ...site,
    clock,
    addUser: async (username, role = 'user', privileges = []) => {
      const roles: string[] = [];
      if (privileges.length > 0) {
        const rolename = `${username}-role`;
        await store.putRole({ rolename, privileges });
        roles.push(rolename);
      }
      await store.putUser({ username, passwordHash: await hashPassword(`${username}-pw`), role, roles, created: clock.now() });
    },
    token: (username, options = {}) =>
      issueToken(site.keys, {
        subject: username,
        audience: options.audience ?? PORTAL_AUDIENCE,
        binding: options.binding ?? { kind: 'referer', value: TEST_REFERER },
        expiresAt: clock.now() + (options.minutes ?? 60) * 60_000,
      }),
  };
}

export { ADMIN_AUDIENCE, PORTAL_AUDIENCE };

export interface RequestOptions {
  readonly method?: string;
  /** Form fields sent urlencoded in the body (POST). */
  readonly form?: Record<string, string>;
  readonly headers?: Record<string, string>;
  /** Socket peer address (default 127.0.0.1). */
  readonly peer?: string;
  /** https (default) or http. */
  readonly scheme?: 'https' | 'http';
}

/** A real Request to `path` on `https://localhost`, with the peer address recorded and the test referer. */
export function siteRequest(path: string, options: RequestOptions = {}): Request {
  const url = `${options.scheme ?? 'https'}://localhost${path}`;
  const headers = new Headers({ referer: TEST_REFERER, ...options.headers });
  let body: string | undefined;
  if (options.form) {
    headers.set('content-type', 'application/x-www-form-urlencoded');
    body = new URLSearchParams(options.form).toString();
  }
  const req = new Request(url, {
    method: options.method ?? (options.form ? 'POST' : 'GET'),
    headers,
    ...(body === undefined ? {} : { body }),
  });
  return setPeerAddress(req, options.peer ?? TEST_IP);
}

/** The JSON body of a response (asserting it is JSON). */
export async function jsonOf<T = Record<string, unknown>>(res: Response): Promise<T> {
  const text = await res.text();
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new Error(`not JSON (HTTP ${res.status}): ${text.slice(0, 200)}`);
  }
}

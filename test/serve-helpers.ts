/** Helpers for tests of `rasterflow serve`: HTTPS requests trusting a given CA, child processes that stop themselves. */
import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface SimpleResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/**
 * One request with node:http(s) (Node 20's global fetch takes no CA): `ca` is the PEM the server's
 * certificate must chain to; without it an https URL fails verification.
 */
export function httpCall(
  url: string,
  options: { method?: string; ca?: string; headers?: Record<string, string>; body?: string; servername?: string } = {},
): Promise<SimpleResponse> {
  const u = new URL(url);
  const request = u.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      u,
      {
        method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
        headers: {
          ...(options.body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
          ...options.headers,
        },
        ...(u.protocol === 'https:' ? { ca: options.ca, ...(options.servername ? { servername: options.servername } : {}) } : {}),
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

export interface Child {
  readonly proc: ChildProcess;
  /** Everything written to stderr so far. */
  stderr(): string;
  stdout(): string;
  /** Resolves with the first stderr text matching `re` (rejects when the child exits or after timeoutMs). */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code (or the signal name). */
  readonly exited: Promise<number | string>;
}

const root = new URL('..', import.meta.url).pathname;

/** Spawns `node --import tsx <entry> ...args` in the repository root (as runCli does); killed with SIGKILL after `limitMs`. */
export function spawnChild(entry: string, args: readonly string[], env: NodeJS.ProcessEnv, limitMs = 60_000): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', `${root}${entry}`, ...args], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  let out = '';
  const waiters = new Set<() => void>();
  proc.stderr!.on('data', (c: Buffer) => {
    err += c.toString('utf8');
    for (const w of waiters) w();
  });
  proc.stdout!.on('data', (c: Buffer) => {
    out += c.toString('utf8');
  });
  const guard = setTimeout(() => proc.kill('SIGKILL'), limitMs);
  const exited = new Promise<number | string>((resolve) =>
    proc.on('exit', (code, signal) => {
      clearTimeout(guard);
      for (const w of waiters) w();
      resolve(code ?? signal ?? -1);
    }),
  );
  return {
    proc,
    stderr: () => err,
    stdout: () => out,
    exited,
    waitFor: (re, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const m = re.exec(err);
          if (m) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(m);
          } else if (proc.exitCode !== null || proc.signalCode !== null) {
            waiters.delete(check);
            clearTimeout(timer);
            reject(new Error(`the child exited before printing ${re}:\n${err}`));
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${re}:\n${err}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
  };
}

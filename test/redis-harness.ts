/**
 * A Redis server for the queue tests: Debian's redis-server on a free loopback port, nothing kept
 * on disk (`--save '' --appendonly no`, a temporary folder as its working directory), stopped by
 * `stop()` (call it in afterAll). Where the binary is absent the tests skip, saying so.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { freePort } from './helpers.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const REDIS_SERVER = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((p) => existsSync(p));

/** Why the queue tests skip, or undefined when they run. */
export const redisMissing: string | undefined = REDIS_SERVER
  ? undefined
  : 'redis-server is not installed (apt-get install redis-server): the queue tests are skipped';
if (redisMissing) console.warn(redisMissing);

export interface RedisHarness {
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** Start redis-server; resolves once it accepts connections. With `tls`, on TLS only (a `rediss://localhost` URL). */
export async function startRedis(
  o: { readonly tls?: { readonly certFile: string; readonly keyFile: string } } = {},
): Promise<RedisHarness> {
  if (!REDIS_SERVER) throw new Error(redisMissing);
  const dir = mkdtempSync(join(tmpdir(), 'rf-redis-'));
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const child: ChildProcess = spawn(
      REDIS_SERVER,
      [
        ...(o.tls
          ? [
              '--port',
              '0',
              '--tls-port',
              String(port),
              '--tls-cert-file',
              o.tls.certFile,
              '--tls-key-file',
              o.tls.keyFile,
              '--tls-auth-clients',
              'no',
            ]
          : ['--port', String(port)]),
        ...['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--protected-mode', 'yes'],
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const ready = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 10000);
      const check = (): void => {
        if (/Ready to accept connections/.test(out)) {
          clearTimeout(timer);
          resolve(true);
        }
      };
      child.stdout!.on('data', check);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve(false);
      });
    });
    if (!ready) {
      child.kill('SIGKILL');
      if (attempt < 3 && /Address already in use/.test(out)) continue;
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`redis-server did not start: ${out.slice(-500)}`);
    }
    return {
      url: o.tls ? `rediss://localhost:${port}` : `redis://127.0.0.1:${port}`,
      port,
      async stop() {
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise((r) => child.once('exit', r));
          child.kill('SIGTERM');
          const t = setTimeout(() => child.kill('SIGKILL'), 3000);
          await exited;
          clearTimeout(t);
        }
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
}

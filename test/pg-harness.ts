/**
 * A throw-away PostgreSQL for tests: `initdb` into a temporary folder and `pg_ctl start` on a free
 * loopback port, its socket in that folder, stopped (and the folder removed) by `stop()`. PostgreSQL
 * refuses to run as root: when the tests run as root the folder is given to the `postgres` user and
 * the binaries run as it (`runuser -u postgres --`). `findPostgres()` answers undefined only when the
 * binaries are absent; the suites then skip, saying so.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { freePort } from './helpers.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

/** The folder of initdb/pg_ctl: PG_BIN, else Debian's newest /usr/lib/postgresql/<v>/bin, else none. */
export function findPostgres(): string | undefined {
  const given = process.env['PG_BIN'];
  if (given && existsSync(join(given, 'initdb'))) return given;
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base)
    .filter((v) => existsSync(join(base, v, 'bin', 'initdb')) && existsSync(join(base, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(base, versions[0], 'bin');
}

/** The message a suite prints when it skips. */
export const NO_POSTGRES =
  'PostgreSQL is not installed (no initdb/pg_ctl under /usr/lib/postgresql/*/bin or PG_BIN): the PostgreSQL store tests skip';

export interface PgServer {
  /** `postgres://postgres@127.0.0.1:<port>/<database>`. */
  url(database?: string): string;
  readonly port: number;
  /** Creates an empty database and answers its URL. */
  createDatabase(name?: string): Promise<string>;
  /** Stops the server immediately and removes its folder. Idempotent. */
  stop(): Promise<void>;
}

let counter = 0;

/** Starts a PostgreSQL cluster of its own (a few seconds). */
export async function startPostgres(bin = findPostgres()): Promise<PgServer> {
  if (bin === undefined) throw new Error(NO_POSTGRES);
  const dir = mkdtempSync(join(tmpdir(), 'rasterflow-pg-'));
  const data = join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  const as = async (cmd: string, args: string[]): Promise<void> => {
    if (asRoot) await run('runuser', ['-u', 'postgres', '--', cmd, ...args], { cwd: dir });
    else await run(cmd, args, { cwd: dir });
  };
  if (asRoot) await run('chown', ['-R', 'postgres:', dir]);
  const port = await freePort();
  const url = (database = 'postgres'): string => `postgres://postgres@127.0.0.1:${port}/${database}`;
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      await as(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    })());
  try {
    await as(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
    // Decision (tests only): fsync off makes a start and every commit fast; durability across a
    // reopen is tested through a new connection pool, not a power cut.
    const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
    await as(join(bin, 'pg_ctl'), ['-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', '-t', '60', 'start']);
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    port,
    url,
    async createDatabase(name = `t${process.pid}_${++counter}`) {
      const client = new pg.Client({ connectionString: url() });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE "${name}"`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    stop,
  };
}

/**
 * The README's "Run a server" commands, run as they are written: the `serve` line (through npx, so
 * the built CLI), the curl line, and the arcgis-rest-js snippet with NODE_EXTRA_CA_CERTS. They run
 * in a scratch folder inside the repository (so that `npx rasterflow` and the snippet's import
 * resolve), which is removed afterwards. When port 6443 is taken, `--port <free>` is added and the
 * URLs follow it; nothing else is changed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = new URL('..', import.meta.url).pathname;
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const section = /<!-- readme-server:start -->([\s\S]*?)<!-- readme-server:end -->/.exec(readme)?.[1] ?? '';
const blocks = [...section.matchAll(/```(sh|js)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, text: m[2]!.trim() }));

const freePort = (port: number): Promise<number> =>
  new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => {
      const t = createServer();
      t.listen(0, '127.0.0.1', () => {
        const p = (t.address() as { port: number }).port;
        t.close(() => resolve(p));
      });
    });
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(port)));
  });

function run(command: string, cwd: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', command], { cwd, env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

const built = existsSync(join(ROOT, 'dist/cli/rasterflow.js'));
const hasCurl = existsSync('/usr/bin/curl');

const skipReason = !built ? ' (skipped: dist/ is not built; npm ci builds it)' : !hasCurl ? ' (skipped: curl is not installed)' : '';
if (skipReason) console.log(`README server example${skipReason}`);

describe.skipIf(skipReason !== '')(`README "Run a server"${skipReason}`, () => {
  const scratch = mkdtempSync(join(ROOT, '.readme-server-'));
  let server: ChildProcess | undefined;

  afterAll(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server!.once('exit', r));
      process.kill(-server.pid!, 'SIGTERM');
      await exited;
    }
    rmSync(scratch, { recursive: true, force: true });
  });

  it('has the three blocks: serve, curl, arcgis-rest-js', () => {
    expect(blocks.map((b) => b.lang)).toEqual(['sh', 'sh', 'js']);
    expect(blocks[0]!.text).toMatch(/npx rasterflow serve$/);
  });

  it('serve starts, curl gets a token, the arcgis-rest-js snippet signs in and exports the site', async () => {
    const port = await freePort(6443);
    const at = (s: string): string => (port === 6443 ? s : s.replaceAll(':6443/', `:${port}/`));
    const serveLine = port === 6443 ? blocks[0]!.text : `${blocks[0]!.text} --port ${port}`;
    // Its own process group, so that SIGTERM reaches npx and the server under it.
    server = spawn('bash', ['-c', serveLine], { cwd: scratch, env: process.env, detached: true });
    let log = '';
    server.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    server.stdout!.on('data', (d: Buffer) => (log += d.toString()));
    const deadline = Date.now() + 60_000;
    while (!log.includes('SIGTERM stops') && Date.now() < deadline && server.exitCode === null)
      await new Promise((r) => setTimeout(r, 100));
    expect(log).toContain(`https://127.0.0.1:${port}/portal/sharing/rest`);

    const curl = await run(at(blocks[1]!.text), scratch);
    expect(curl.code, curl.err).toBe(0);
    const token = JSON.parse(curl.out) as { token: string; expires: number; ssl: boolean };
    expect(token.token.length).toBeGreaterThan(100);
    expect(token.expires).toBeGreaterThan(Date.now() + 59 * 60_000);

    writeFileSync(join(scratch, 'signin.mjs'), at(blocks[2]!.text));
    const node = await run('node signin.mjs', scratch, { NODE_EXTRA_CA_CERTS: 'rasterflow-site/tls/cert.pem' });
    expect(node.code, node.err).toBe(0);
    expect(node.out).toContain('org_admin');
    expect(node.out).toMatch(/status: 'success'/);
    expect(node.out).toMatch(/exportSite\/download\/\d{8}-\d{6}-UTC\.agssite/);
  }, 120_000);
});

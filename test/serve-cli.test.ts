import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from './helpers.js';
import { httpCall, spawnChild, type Child } from './serve-helpers.js';

const children: Child[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
});

const tempDir = (): string => mkdtempSync(join(tmpdir(), 'rf-serve-cli-'));

function serve(args: readonly string[], env: NodeJS.ProcessEnv = {}): Child {
  const c = spawnChild('test/serve-entry.ts', ['serve', ...args], { ...process.env, RASTERFLOW_ADMIN_PASSWORD: 'cli-admin-pw', ...env });
  children.push(c);
  return c;
}

describe('rasterflow serve', { timeout: 60_000 }, () => {
  it('documents its options', () => {
    const r = runCli(['serve', '--help']);
    expect(r.code).toBe(0);
    for (const o of ['--port <n>', '--http-port <n>', '--host <host>', '--data <dir>', '--config <file>', 'RASTERFLOW_ADMIN_PASSWORD']) {
      expect(r.stdout).toContain(o);
    }
    expect(runCli(['--help']).stdout).toMatch(/serve\s+.*HTTPS/);
  });

  it('refuses bad options and a bad config with the error line and exit status', () => {
    const port = runCli(['serve', '--port', 'x']);
    expect(port.code).toBe(2);
    expect(port.stderr).toContain('error INVALID_ARGUMENT at port: --port must be a port number from 0 to 65535, got x');
    const dir = tempDir();
    const file = join(dir, 'site.json');
    writeFileSync(file, JSON.stringify({ settings: { maxTokenMinute: 10 }, services: [{ serviceName: 'a', type: 'Nope' }] }));
    const bad = runCli(['serve', '--port', '0', '--data', join(dir, 'data'), '--config', file]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      `error INVALID_ARGUMENT at settings.maxTokenMinute: ${file}: unknown key 'maxTokenMinute' (did you mean maxTokenMinutes?)`,
    );
    expect(bad.stderr).toContain(`error INVALID_ARGUMENT at services[0]: ${file}: 'type' must be one of`);
    expect(bad.stderr).not.toMatch(/\n\s+at /);
    const missing = runCli(['serve', '--port', '0', '--data', join(dir, 'data'), '--config', join(dir, 'none.json')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`error INVALID_ARGUMENT at config: ${join(dir, 'none.json')}: cannot read the config file: ENOENT`);
  });

  it('starts, prints its URLs, and on SIGTERM finishes the request in flight and exits 0', async () => {
    const dataDir = tempDir();
    const c = serve(['--port', '0', '--http-port', '0', '--data', dataDir]);
    const [, origin] = (await c.waitFor(/services: (https:\/\/127\.0\.0\.1:\d+)\/server\/rest\/services/)) as unknown as [string, string];
    const [, httpOrigin] = (await c.waitFor(/services: (http:\/\/127\.0\.0\.1:\d+)\/server\/rest\/services/)) as unknown as [
      string,
      string,
    ];
    expect(c.stderr()).toContain(`portal:   ${origin}/portal/sharing/rest`);
    expect(c.stderr()).toContain(`admin:    ${origin}/server/admin`);
    expect(c.stderr()).toContain(`portal:   ${httpOrigin}/portal/sharing/rest`);
    await c.waitFor(/SIGINT or SIGTERM stops/);
    const ca = readFileSync(join(dataDir, 'tls', 'cert.pem'), 'utf8');
    const slow = httpCall(`${origin}/test/slow?ms=1500&token=NEVERLOGGED`, { ca });
    await new Promise((r) => setTimeout(r, 300));
    c.proc.kill('SIGTERM');
    await c.waitFor(/stopping: waiting for 1 request\(s\) in flight/);
    const res = await slow;
    expect(res).toMatchObject({ status: 200, body: 'slow done' });
    expect(await c.exited).toBe(0);
    expect(c.stderr()).toMatch(/info request method=GET path=\/test\/slow\?ms=1500&token=\*\*\* status=200/);
    expect(c.stderr()).not.toContain('NEVERLOGGED');
    expect(c.stderr()).not.toContain('cli-admin-pw');
    expect(c.stderr()).toContain('stopped');
  });

  it('prints a generated administrator password on the first start only', async () => {
    const dataDir = tempDir();
    const first = serve(['--port', '0', '--data', dataDir], { RASTERFLOW_ADMIN_PASSWORD: '' });
    await first.waitFor(/SIGINT or SIGTERM stops/);
    expect(first.stderr()).toMatch(/created the primary site administrator 'admin' with the password: \S{20,}\n/);
    first.proc.kill('SIGINT');
    expect(await first.exited).toBe(0);
    const second = serve(['--port', '0', '--data', dataDir], { RASTERFLOW_ADMIN_PASSWORD: '' });
    await second.waitFor(/SIGINT or SIGTERM stops/);
    expect(second.stderr()).not.toMatch(/password|administrator/);
    second.proc.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('exits at once on a second signal while draining', async () => {
    const dataDir = tempDir();
    const c = serve(['--port', '0', '--http-port', '0', '--data', dataDir]);
    const [, httpOrigin] = (await c.waitFor(/services: (http:\/\/127\.0\.0\.1:\d+)\//)) as unknown as [string, string];
    await c.waitFor(/SIGINT or SIGTERM stops/);
    const slow = httpCall(`${httpOrigin}/test/slow?ms=20000`).catch((e: Error) => e);
    await new Promise((r) => setTimeout(r, 300));
    c.proc.kill('SIGTERM');
    await c.waitFor(/stopping: waiting for 1 request/);
    const started = Date.now();
    c.proc.kill('SIGTERM');
    expect(await c.exited).toBe(143);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await slow).toBeInstanceOf(Error);
  });
});

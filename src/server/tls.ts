/**
 * The HTTPS certificate of `rasterflow serve`: the operator's (config `tls.cert` / `tls.key`), or a
 * self-signed one made on first start and kept in `<dataDir>/tls/` for later starts.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { EngineError } from '../core/errors.js';

export interface TlsMaterial {
  readonly cert: string;
  readonly key: string;
  /** SHA-256 fingerprint of the (first) certificate, `AB:CD:...`. */
  readonly fingerprint: string;
  /** Where it came from: the config, the kept self-signed one, or one made just now. */
  readonly origin: 'config' | 'self-signed' | 'generated';
  readonly certFile: string;
}

/** Lifetime of the generated certificate: 825 days, the longest that browsers accept. */
export const SELF_SIGNED_DAYS = 825;

function readPem(file: string, what: string, path: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new EngineError('INVALID_ARGUMENT', `cannot read the TLS ${what} ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`, {
      path,
    });
  }
}

function fingerprintOf(cert: string, file: string): string {
  try {
    return new X509Certificate(cert).fingerprint256;
  } catch {
    throw new EngineError('INVALID_ARGUMENT', `${file} is not a PEM certificate`, { path: 'tls.cert' });
  }
}

/** The configured certificate and key, checked to belong together. */
export function loadTls(files: { readonly cert: string; readonly key: string }): TlsMaterial {
  const cert = readPem(files.cert, 'certificate', 'tls.cert');
  const key = readPem(files.key, 'private key', 'tls.key');
  const fingerprint = fingerprintOf(cert, files.cert);
  let matches = false;
  try {
    // createPrivateKey throws on a bad key; checkPrivateKey tells whether the pair matches.
    matches = new X509Certificate(cert).checkPrivateKey(createPrivateKey(key));
  } catch {
    throw new EngineError('INVALID_ARGUMENT', `${files.key} is not a PEM private key`, { path: 'tls.key' });
  }
  if (!matches) throw new EngineError('INVALID_ARGUMENT', `${files.key} is not the private key of ${files.cert}`, { path: 'tls.key' });
  return { cert, key, fingerprint, origin: 'config', certFile: files.cert };
}

/**
 * The self-signed certificate in `<dataDir>/tls/` (`cert.pem`, `key.pem` with mode 0600), made on
 * first start: CN localhost, SAN DNS:localhost, IP:127.0.0.1, IP:::1, P-256, SHA-256, 825 days.
 */
export async function selfSignedTls(dataDir: string, now = new Date()): Promise<TlsMaterial> {
  const dir = join(dataDir, 'tls');
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  if (existsSync(certFile) && existsSync(keyFile)) {
    const cert = readFileSync(certFile, 'utf8');
    const key = readFileSync(keyFile, 'utf8');
    return { cert, key, fingerprint: fingerprintOf(cert, certFile), origin: 'self-signed', certFile };
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const notBeforeDate = new Date(now.getTime() - 60_000);
  const notAfterDate = new Date(now.getTime() + SELF_SIGNED_DAYS * 86_400_000);
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate,
    notAfterDate,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  });
  // Key first, each through a temporary file and a rename, so a crash never leaves half a pair.
  writeFileSync(`${keyFile}.tmp`, pems.private, { mode: 0o600 });
  chmodSync(`${keyFile}.tmp`, 0o600);
  renameSync(`${keyFile}.tmp`, keyFile);
  writeFileSync(`${certFile}.tmp`, pems.cert, { mode: 0o644 });
  renameSync(`${certFile}.tmp`, certFile);
  return { cert: pems.cert, key: pems.private, fingerprint: fingerprintOf(pems.cert, certFile), origin: 'generated', certFile };
}

/** The configured pair when there is one, else the self-signed one. */
export function siteTls(dataDir: string, configured: { readonly cert: string; readonly key: string } | undefined): Promise<TlsMaterial> {
  return configured ? Promise.resolve(loadTls(configured)) : selfSignedTls(dataDir);
}

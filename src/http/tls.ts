import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';

export interface TlsMaterial {
  key: string;
  cert: string;
}

/**
 * The HTTPS certificate: configured files, or a self-signed one generated once into
 * `<state>/tls`; none in proxy mode, where a trusted TLS proxy terminates HTTPS.
 */
export async function loadTls(config: Readonly<Config>, log: Logger): Promise<TlsMaterial | null> {
  const http = config.http;
  if (http.tls_mode === 'proxy') return null;
  if (http.tls_mode === 'files') {
    return { key: readFileSync(http.tls_key, 'utf8'), cert: readFileSync(http.tls_cert, 'utf8') };
  }
  const dir = resolve(config.paths.state, 'tls');
  const keyPath = join(dir, 'server.key');
  const certPath = join(dir, 'server.crt');
  if (existsSync(keyPath) && existsSync(certPath)) {
    return { key: readFileSync(keyPath, 'utf8'), cert: readFileSync(certPath, 'utf8') };
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Loaded only to make a certificate: a daemon with one already kept does not pay for its import.
  const { generate } = await import('selfsigned');
  const pems = await generate([{ name: 'commonName', value: http.public_hostname }], {
    keyType: 'ec',
    curve: 'P-256',
    notAfterDate: new Date(Date.now() + 825 * 86400_000),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: http.public_hostname },
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  } as never);
  writeFileSync(keyPath, pems.private, { mode: 0o600 });
  writeFileSync(certPath, pems.cert, { mode: 0o644 });
  log.info({ certPath }, 'generated a self-signed certificate');
  return { key: pems.private, cert: pems.cert };
}

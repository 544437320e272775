import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { collectDefaultMetrics, register } from 'prom-client';

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

let defaultsCollected = false;

/** Prometheus text on GET /metrics, on its own (private) address. */
export async function startMetricsServer(opts: { host: string; port: number; log: Logger }): Promise<MetricsServer> {
  if (!defaultsCollected) {
    collectDefaultMetrics({ prefix: 'svc_' });
    defaultsCollected = true;
  }
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    register
      .metrics()
      .then((text) => res.writeHead(200, { 'content-type': register.contentType }).end(text))
      .catch((err) => {
        opts.log.error({ err }, 'metrics collection failed');
        res.writeHead(500).end();
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

// The world the HTTP SMS benches share: a daemon on a fresh database, a seller's SMS route to a
// local SMSC (prefix 1 at 0.010), bought by a funded buyer holding `keyCount` live keys, the keys
// written one a line for the wrk scripts.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config/load.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';

export interface SmsBenchWorld {
  daemon: Daemon;
  buyerId: string;
  keyFile: string;
  /** https://127.0.0.1:<port>/api/v1 */
  base: string;
}

export async function startSmsBenchWorld(o: {
  databaseUrl: string;
  state: string;
  smscPort: number;
  keyCount: number;
  scopes: string[];
  funds: string;
}): Promise<SmsBenchWorld> {
  const config = loadConfig({
    overrides: {
      paths: { state: o.state },
      log: { level: 'silent' },
      http: { host: '127.0.0.1', port: 0 },
      sip: { host: '127.0.0.1', port: 0, tls_port: 0 },
      smpp: { host: '127.0.0.1', port: 0, tls_port: 0 },
      metrics: { enabled: false },
      limits: { default_per_second: 1_000_000 },
      database: { url: o.databaseUrl, pool_max: Number(process.env['BENCH_POOL'] ?? 20) },
      sms: { bind_tps: 100_000, bind_window_size: 100 },
      // The bench SMSC listens on loopback: an operator's private interconnect, as far as the outbound guard knows.
      security: { private_supplier_networks: ['127.0.0.0/8'] },
    },
  });
  const daemon = await startDaemon(config, { log: pino({ level: 'silent' }) });
  const s = daemon.modules.services;
  const seller = await s.accounts.createAccount({
    email: 'bench-seller@example.test',
    password: 'correct horse battery',
  });
  const buyer = await s.accounts.createAccount({
    email: 'bench-buyer@example.test',
    password: 'correct horse battery',
  });
  const route = await s.routes.createRoute(seller.id, {
    type: 'sms',
    name: 'Bench SMSC',
    smsDelivery: { kind: 'smpp', host: '127.0.0.1', port: o.smscPort, systemId: 'bench', password: 'bench' },
  });
  await s.routes.uploadSheet(seller.id, route.id, { format: 'csv', csv: 'prefix,destination,rate\n1,US,0.010\n' });
  await s.purchases.buy(buyer.id, route.id);
  await s.ledger.topup({ accountId: buyer.id, amount: o.funds, source: 'card', postingKey: 'bench-fund' });
  const keys: string[] = [];
  for (let i = 0; i < o.keyCount; i++)
    keys.push((await s.keys.create(buyer.id, { mode: 'live', scopes: o.scopes })).secret);
  const keyFile = join(o.state, 'keys.txt');
  writeFileSync(keyFile, keys.join('\n'));
  return { daemon, buyerId: buyer.id, keyFile, base: `https://127.0.0.1:${daemon.ports['http']}/api/v1` };
}

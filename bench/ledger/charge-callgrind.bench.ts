// What one charge costs the backend that serves it, in CPU instructions counted by callgrind: a
// figure the machine's load does not move. `node --import tsx bench/ledger/charge-callgrind.bench.ts`
// A throw-away cluster runs whole under valgrind (a backend is a forked child, so callgrind follows
// it and writes one file per backend when it exits); the migrations and ledger.bench's buyers and
// sellers are loaded, then each client posts its charges on one connection of its own, twice (N1 and
// N2 operations): per operation (N2 − N1) / (N2 − N1 operations) of the largest backend's total, so
// start-up, catalog loading, PL/pgSQL compilation and the first plans cancel out. The clients:
// - Node through src/ledger as the daemon builds it (ledger.charge, balance events on: one named
//   prepared statement, Bind/Execute/Sync per charge);
// - pgbench with ledger.bench's charge script (simple protocol: parsed and planned every time);
// - pgbench with the same call prepared (-M prepared: what the Node client sends, from libpq);
// - pgbench -N, the anchor of both ledger benches (five statements in a transaction, simple protocol).
// Charges pick accounts from a fixed sequence, the same for every client and run.
// Needs valgrind and the PostgreSQL server binaries (Debian layout); takes about ten minutes.
// SVC_BENCH_CG_OPS=N1,N2 (default 100,500); SVC_BENCH_CG_KINDS=node,pgbench,pgbench-prepared,pgbench-N.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { connect } from '../../src/db/connection.js';
import { migrate } from '../../src/db/migrate.js';
import { createLedger } from '../../src/ledger/ledger.js';
import { freePort } from '../../test/telephony/sip/sipp.js';
import {
  ACCOUNTS,
  benchId,
  BUYER_PREFIX,
  SELLER_PREFIX,
  daemonLedgerDeps,
  writeChargeScript,
} from '../lib/ledger-charges.js';
import { initCluster, startServer, type ClusterServer } from '../lib/pg-cluster.js';

const [N1, N2] = (process.env['SVC_BENCH_CG_OPS'] ?? '100,500').split(',').map(Number) as [number, number];
const KINDS = (process.env['SVC_BENCH_CG_KINDS'] ?? 'node,pgbench,pgbench-prepared,pgbench-N').split(',');
const log = pino({ level: 'silent' });

const files = initCluster('bench-charge-cg-');
const out = join(files.dir, 'callgrind');
mkdirSync(out);
files.own(out);
const port = await freePort();
let server: ClusterServer | undefined;
try {
  server = await startServer(files, port, {
    settings: ['fsync=off', 'autovacuum=off', 'shared_buffers=128MB'],
    wrap: ['valgrind', '--tool=callgrind', `--callgrind-out-file=${out}/callgrind.%p`],
    ready: (sql) => sql`create database cg`,
    attempts: 300,
    delayMs: 500,
  });
  const url = server.url;
  const admin = connect({ url: url('cg'), max: 1, log });
  await migrate(admin, log);
  const pgbench = (args: string[]) => {
    const r = spawnSync('pgbench', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', ...args, 'cg'], {
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`pgbench failed: ${r.stderr}`);
  };
  pgbench(['-i', '-q', '-s', '1']);
  for (const prefix of [BUYER_PREFIX, SELLER_PREFIX]) {
    const ids = Array.from({ length: ACCOUNTS }, (_, i) => benchId(prefix, i + 1));
    await admin`insert into accounts ${admin(ids.map((id) => ({ id, email: `${id}@bench.local` })))}`;
    await admin`select ledger_topup('seed-' || id, id, 1000000::numeric, 'wire', null, now()) from unnest(${ids}::uuid[]) as id`;
  }
  await admin`checkpoint`;
  await admin.end();

  const scripts = join(files.dir, 'scripts');
  mkdirSync(scripts);
  const simple = writeChargeScript(scripts);
  // ledger.bench's call with its key from a number, so that -M prepared sends it as parameters.
  const prepared = join(scripts, 'charge-prepared.sql');
  writeFileSync(
    prepared,
    [
      `\\set b random(1, ${ACCOUNTS})`,
      `\\set s random(1, ${ACCOUNTS})`,
      `\\set k random(1, 1000000000000)`,
      `select ledger_charge('pgp-' || :k, ('${BUYER_PREFIX}' || lpad(:b::text, 12, '0'))::uuid, ('${SELLER_PREFIX}' || lpad(:s::text, 12, '0'))::uuid, 0.012000, 0.000500, false, null, 'call', null, null, now());`,
      '',
    ].join('\n'),
  );

  const seen = new Set<string>();
  /** The largest instruction total of the backends that exited since the last call (pgbench opens one more). */
  async function exitedBackends(): Promise<number> {
    let best = 0;
    for (let quiet = 0, i = 0; i < 1500 && (best === 0 || quiet < 15); i++, quiet++) {
      for (const f of readdirSync(out).filter((x) => !seen.has(x))) {
        const m = /^(?:totals|summary): (\d+)/m.exec(readFileSync(join(out, f), 'utf8'));
        if (!m) continue;
        seen.add(f);
        best = Math.max(best, Number(m[1]));
        quiet = 0;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    if (best === 0) throw new Error('no callgrind output from the backend');
    return best;
  }
  for (const f of readdirSync(out)) seen.add(f);

  let seed = 1;
  const pick = (prefix: string) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return benchId(prefix, 1 + (seed % ACCOUNTS));
  };
  const viaNode = async (n: number, tag: string) => {
    const sql = connect({ url: url('cg'), max: 1, log });
    const ledger = createLedger(daemonLedgerDeps(sql, log));
    for (let i = 0; i < n; i++) {
      await ledger.charge({
        postingKey: `${tag}-${i}`,
        accountId: pick(BUYER_PREFIX),
        sellerId: pick(SELLER_PREFIX),
        amount: '0.012000',
        fee: '0.000500',
        relatedEntityType: 'call',
      });
    }
    await sql.end();
    return exitedBackends();
  };
  const viaPgbench = (args: string[]) => (n: number) => {
    pgbench([...args, '-n', '-c', '1', '-t', String(n)]);
    return exitedBackends();
  };
  const clients: Record<string, [string, (n: number, tag: string) => Promise<number>]> = {
    node: ['charge, Node (ledger.charge)', viaNode],
    pgbench: ['charge, pgbench-driven (simple)', viaPgbench(['-f', simple])],
    'pgbench-prepared': ['charge, pgbench -M prepared', viaPgbench(['-f', prepared, '-M', 'prepared'])],
    'pgbench-N': ['pgbench -N transaction', viaPgbench(['-N'])],
  };
  console.log(`backend instructions per operation (callgrind, ${N2} less ${N1} operations on one connection):`);
  for (const kind of KINDS) {
    const [label, run] = clients[kind] ?? [];
    if (!run) throw new Error(`unknown kind ${kind}`);
    seed = 1;
    const few = await run(N1, `${kind}-${N1}`);
    seed = 1;
    const many = await run(N2, `${kind}-${N2}`);
    console.log(`${label!.padEnd(34)} ${((many - few) / (N2 - N1) / 1000).toFixed(1).padStart(7)}k`);
  }
} finally {
  await server?.stop();
  files.remove();
}

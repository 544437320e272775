// CPU instructions per item of the SMS path's ledger batches (ledger_hold_many, ledger_settle_many),
// counted by callgrind on a single-user backend: a figure the machine's load does not move.
// A throw-away cluster gets the migrations, a funded buyer, a seller and 50 batches of open holds;
// then each script (10 and 50 batches of 20 holds, or of 20 settles with seller and fee, as the
// SMS bench posts them) runs under valgrind on a fresh copy of it. Per item: (50 − 10 batches) / 800,
// so start-up, catalog loading and first plans cancel out.
// Needs valgrind and the PostgreSQL server binaries (Debian layout); takes a few minutes.
// Run: node --import tsx bench/ledger/batch-callgrind.bench.ts
// BENCH_CALLGRIND_KEEP=<dir>: the callgrind files are copied there (callgrind_annotate shows which
// statements and functions the instructions go to).
import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import postgres from 'postgres';
import pino from 'pino';
import { migrate } from '../../src/db/migrate.js';
import type { Sql } from '../../src/db/connection.js';
import { freePort } from '../../test/telephony/sip/sipp.js';
import { initCluster, startServer, type ClusterServer } from '../lib/pg-cluster.js';

const BATCH = 20;

const files = initCluster('bench-cg-');
const { dir, data, bin } = files;
/** Runs `cmd` as the cluster's owner, `input` on its standard input; throws on a non-zero exit. */
const run = (cmd: string, args: string[], input?: string) => {
  const [c, a] = files.asOwner(cmd, args);
  const r = spawnSync(c, a, { encoding: 'utf8', ...(input !== undefined ? { input } : {}), maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr.slice(-2000)}`);
  return r;
};
let server: ClusterServer | undefined;
try {
  server = await startServer(files, await freePort(), {
    settings: ['fsync=off', 'autovacuum=off'],
    ready: (sql) => sql`create database cg`,
  });
  const url = server.url;
  const sql = postgres(url('cg'), { max: 1, onnotice: () => {} }) as unknown as Sql;
  await migrate(sql, pino({ level: 'silent' }));
  const buyer = crypto.randomUUID();
  const seller = crypto.randomUUID();
  await sql`insert into accounts (id, email) values (${buyer}, 'buyer@bench.test'), (${seller}, 'seller@bench.test')`;
  await sql`select ledger_topup('fund', ${buyer}::uuid, 1000000::numeric, 'card', null, now())`;
  const expires = new Date(Date.now() + 30 * 86400_000).toISOString();
  const hold = (key: string) => ({
    key,
    accountId: buyer,
    amount: '0.010000',
    test: false,
    expiresAt: expires,
    reference: 'SMS',
    relatedEntityType: 'api_sms',
    relatedEntityId: crypto.randomUUID(),
    callId: null,
  });
  // The holds the settle scripts settle, made now (their ids go into the scripts).
  const settles: string[] = [];
  for (let b = 0; b < 50; b++) {
    const items = Array.from({ length: BATCH }, (_, i) => hold(`open:${b}:${i}`));
    const [r] = await sql<
      { r: { holdId: string }[] }[]
    >`select ledger_hold_many(${sql.json(items as never)}, now()) as r`;
    settles.push(
      JSON.stringify(
        r!.r.map((h, i) => ({
          key: `settle:${b}:${i}`,
          holdId: h.holdId,
          sellerId: seller,
          amount: '0.008000',
          fee: '0.002000',
          reference: 'SMS',
          relatedEntityType: 'api_sms',
          relatedEntityId: items[i]!.relatedEntityId,
          callId: null,
        })),
      ),
    );
  }
  await sql.end();
  await server.stop();

  const literal = (s: string) => `'${s.replace(/'/g, "''")}'`;
  const script = (fn: 'hold' | 'settle', n: number) =>
    Array.from({ length: n }, (_, b) =>
      fn === 'hold'
        ? `select length(ledger_hold_many(${literal(JSON.stringify(Array.from({ length: BATCH }, (_, i) => hold(`h:${b}:${i}`))))}::jsonb, now())::text);`
        : `select length(ledger_settle_many(${literal(settles[b]!)}::jsonb, now())::text);`,
    ).join('\n') + '\n';
  /** Instructions of one single-user backend running the script on a fresh copy of the cluster. */
  const instructions = (fn: 'hold' | 'settle', n: number): number => {
    const copy = join(dir, `run-${fn}-${n}`);
    cpSync(data, copy, { recursive: true });
    files.own(copy, true);
    const out = join(dir, `callgrind-${fn}-${n}.out`);
    const r = run(
      'valgrind',
      [
        '--tool=callgrind',
        `--callgrind-out-file=${out}`,
        join(bin, 'postgres'),
        '--single',
        '-D',
        copy,
        '-c',
        'fsync=off',
        'cg',
      ],
      script(fn, n),
    );
    if (/ERROR:/.test(r.stdout + r.stderr))
      throw new Error(`${fn} script failed: ${(r.stdout + r.stderr).slice(-2000)}`);
    rmSync(copy, { recursive: true, force: true });
    const keep = process.env['BENCH_CALLGRIND_KEEP'];
    if (keep) cpSync(out, join(keep, `callgrind-${fn}-${n}.out`));
    const totals = /^(?:summary|totals): (\d+)/m.exec(readFileSync(out, 'utf8'));
    if (!totals) throw new Error(`no totals in ${out}`);
    return Number(totals[1]);
  };
  for (const fn of ['hold', 'settle'] as const) {
    const few = instructions(fn, 10);
    const many = instructions(fn, 50);
    const per = (many - few) / (40 * BATCH);
    console.log(
      `ledger_${fn}_many (batches of ${BATCH}, 50 less 10): ${(per / 1000).toFixed(1)}k instructions per item`,
    );
  }
  writeFileSync(join(dir, 'done'), '');
} finally {
  await server?.stop();
  files.remove();
}

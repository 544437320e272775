// CPU per request of POST /verify/start by SMS beside POST /comms/sms, in the same world and run:
// the daemon's process CPU (with the in-process SMSC), the CPU of the database's backends, commits
// and rows written per request and, where the cluster has pg_stat_statements loaded, the
// statements per request with their time. CPU per request holds under the machine's other load,
// where wall rates do not (issue 21: the verify path must cost little more than the SMS it sends).
// Needs wrk (Debian `wrk`) and PostgreSQL on 127.0.0.1:5432 (or SVC_BENCH_PG_ADMIN_URL).
// Run: node --import tsx bench/verify/cpu.bench.ts   (BENCH_SECONDS=10 BENCH_CONNECTIONS=32 BENCH_KEYS=600
//      BENCH_ROUNDS=2; BENCH_CPU_PROF=<dir>: one .cpuprofile per path of the last round; BENCH_STATEMENTS=<n>: the
//      n statements of each path that took most time)
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { pgCounters } from '../lib/pg-counters.js';
import { runWrk } from '../lib/wrk.js';
import { withVerifyBenchWorld } from './world.js';

const seconds = Number(process.env['BENCH_SECONDS'] ?? 10);
const connections = Number(process.env['BENCH_CONNECTIONS'] ?? 32);
const roundCount = Number(process.env['BENCH_ROUNDS'] ?? 2);
const topStatements = Number(process.env['BENCH_STATEMENTS'] ?? 0);
const profDir = process.env['BENCH_CPU_PROF'];

interface Statement {
  query: string;
  calls: number;
  rows: number;
  ms: number;
}

await withVerifyBenchWorld('verify_cpu', async ({ daemon, adminSql, dbName, paths: urls, args }) => {
  const [ext] = await adminSql<{ ok: boolean }[]>`
    select exists (select 1 from pg_extension where extname = 'pg_stat_statements')
       and current_setting('shared_preload_libraries') like '%pg_stat_statements%' as ok`;
  const statements = ext!.ok;
  const statementsOf = async (): Promise<Statement[]> =>
    adminSql<Statement[]>`
      select query, calls::int, rows::int, total_exec_time::float8 as ms from pg_stat_statements
      where dbid = (select oid from pg_database where datname = ${dbName})
      order by total_exec_time desc`;
  const paths = {
    sms: {
      ...urls.sms,
      done: async () =>
        (await daemon.sql<{ n: number }[]>`select count(*)::int as n from messages where status = 'sent'`)[0]!.n,
    },
    verify: {
      ...urls.verify,
      done: async () =>
        (
          await daemon.sql<{ n: number }[]>`
            select count(*)::int as n from verifications v join messages m on m.id = v.message_id
            where m.status = 'sent'`
        )[0]!.n,
    },
  };
  for (const p of Object.values(paths))
    await runWrk(p.url, { seconds: 2, connections, script: p.script, scriptArgs: args() }); // warm-up

  /** One wrk window of a path, then its CPU and statements divided by the requests it completed. */
  async function measure(name: keyof typeof paths, profile: boolean) {
    const p = paths[name];
    const done0 = await p.done();
    if (statements) await adminSql`select pg_stat_statements_reset()`;
    const pg0 = await pgCounters(adminSql, dbName);
    const prof = profile ? new Session() : null;
    if (prof) {
      prof.connect();
      await prof.post('Profiler.enable');
      await prof.post('Profiler.start');
    }
    const cpu0 = process.cpuUsage();
    const w = await runWrk(p.url, { seconds, connections, script: p.script, scriptArgs: args() });
    // Requests still in flight when wrk stopped finish before the counters are read.
    let n = 0;
    for (let i = 0, last = -1; i < 50 && n !== last; i++) {
      last = n;
      await new Promise((res) => setTimeout(res, 200));
      n = (await p.done()) - done0;
    }
    const cpu = process.cpuUsage(cpu0);
    if (prof && profDir) {
      mkdirSync(profDir, { recursive: true });
      writeFileSync(join(profDir, `${name}.cpuprofile`), JSON.stringify((await prof.post('Profiler.stop')).profile));
    }
    await new Promise((res) => setTimeout(res, 1100)); // PostgreSQL 15 flushes backend statistics at most once a second
    const pg1 = await pgCounters(adminSql, dbName);
    const st = statements ? await statementsOf() : [];
    const per = (x: number) => x / Math.max(1, n);
    return {
      name,
      n,
      rate: n / seconds,
      p50: w.p50Ms,
      p99: w.p99Ms,
      non2xx: w.non2xx,
      daemonUs: per((cpu.user + cpu.system) / 1e6) * 1e6,
      pgUs: per(pg1.cpu - pg0.cpu) * 1e6,
      xact: per(pg1.xact - pg0.xact),
      rows: per(pg1.rows - pg0.rows),
      calls: per(st.reduce((a, s) => a + s.calls, 0)),
      stMs: per(st.reduce((a, s) => a + s.ms, 0)),
      top: st.slice(0, topStatements).map((s) => ({ ...s, calls: per(s.calls), ms: per(s.ms), rows: per(s.rows) })),
    };
  }

  const rounds: Awaited<ReturnType<typeof measure>>[][] = [];
  for (let i = 0; i < roundCount; i++) {
    const last = i === roundCount - 1;
    rounds.push([await measure('sms', last && !!profDir), await measure('verify', last && !!profDir)]);
  }
  for (const [i, round] of rounds.entries()) {
    for (const r of round) {
      console.log(
        `round ${i + 1} ${r.name === 'sms' ? 'POST /comms/sms    ' : 'POST /verify/start '}: ${r.n} done, ${r.rate.toFixed(0)}/s, ` +
          `p50 ${r.p50.toFixed(0)} ms, p99 ${r.p99.toFixed(0)} ms, non-2xx ${r.non2xx}; per request: daemon CPU ${r.daemonUs.toFixed(0)} µs, ` +
          `PostgreSQL CPU ${r.pgUs.toFixed(0)} µs, commits ${r.xact.toFixed(2)}, rows written ${r.rows.toFixed(2)}` +
          (statements ? `, statements ${r.calls.toFixed(2)} taking ${(r.stMs * 1000).toFixed(0)} µs` : ''),
      );
      for (const s of r.top)
        console.log(
          `    ${s.calls.toFixed(3)} calls ${(s.ms * 1000).toFixed(0)} µs ${s.rows.toFixed(2)} rows  ${s.query.replace(/\s+/g, ' ').slice(0, 150)}`,
        );
    }
    const [s, v] = round as [(typeof round)[0], (typeof round)[0]];
    console.log(
      `round ${i + 1} verify / sms: rate ${(v.rate / s.rate).toFixed(3)}, daemon CPU ${(v.daemonUs / s.daemonUs).toFixed(3)}, ` +
        `PostgreSQL CPU ${(v.pgUs / s.pgUs).toFixed(3)}, both ${((v.daemonUs + v.pgUs) / (s.daemonUs + s.pgUs)).toFixed(3)}`,
    );
  }
  if (!statements) console.log('(no pg_stat_statements in this cluster: statement counts left out)');
  console.log(`uptime: ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
});
process.exit(0);

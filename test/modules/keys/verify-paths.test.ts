import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';

/**
 * A wrong key takes the same path whatever its prefix: a look-up by the public prefix answered a
 * wrong secret under a known (cached) prefix from memory, faster than an unknown prefix that went
 * to the database, so timing told which prefixes exist. With api_keys locked, both kinds of wrong
 * key must be waiting on the database; neither may be answered from what a valid key left cached.
 */
t.test('a known prefix with a wrong secret goes the same way as an unknown prefix', async (t) => {
  const d = await startTestDaemon(t, { auth: { credential_cache_seconds: 300 } });
  const owner = await d.modules.services.accounts.createAccount({
    email: 'keys@example.test',
    password: 'a long password',
  });
  const { secret } = await d.modules.services.keys.create(owner.id, { mode: 'live' });
  t.equal((await d.https('GET', '/account', { token: secret })).status, 200, 'the valid key is now cached');
  const knownPrefixWrongSecret = secret.slice(0, 20) + 'x'.repeat(secret.length - 20);
  const unknownPrefix = 'svc_live_sk_' + 'y'.repeat(secret.length - 12);

  const waiting = async () => {
    const [row] = await d.sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and query like '%from api_keys%'`;
    return row!.n;
  };
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let locked!: () => void;
  const isLocked = new Promise<void>((resolve) => (locked = resolve));
  const holder = d.sql.begin(async (tx) => {
    await tx`lock table api_keys in access exclusive mode`;
    locked();
    await released;
  });
  await isLocked;
  const answers = [knownPrefixWrongSecret, unknownPrefix].map((token) => d.https('GET', '/account', { token }));
  const settled: string[] = [];
  void answers[0]!.then(() => settled.push('known prefix'));
  void answers[1]!.then(() => settled.push('unknown prefix'));
  const deadline = Date.now() + 20_000;
  while ((await waiting()) < 2 && settled.length === 0 && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 25));
  t.same(settled, [], 'no wrong key was answered without the database');
  t.equal(await waiting(), 2, 'both wrong keys wait on the same look-up');
  release();
  await holder;
  const [known, unknown] = await Promise.all(answers);
  t.equal(known!.status, 401);
  t.equal(unknown!.status, 401);
  t.same(known!.json, unknown!.json, 'the same answer');
});

import t from 'tap';
import { Type } from 'typebox';
import type { ApiModule, App } from '../../src/http/app.js';
import { ok } from '../../src/http/envelope.js';
import { ruleError } from '../../src/http/errors.js';
import { bearer, buildTestApp } from '../helpers/app.js';

/** A money-like action: counts how often it really ran, and can be held open by the test. */
function counterModule() {
  const state = { runs: 0, gate: null as Promise<void> | null };
  const mod: ApiModule = {
    routes(app: App) {
      app.post(
        '/probe/charge',
        {
          config: { access: { auth: 'required' }, idempotent: true },
          schema: { body: Type.Object({ amount: Type.String({ pattern: '^\\d+\\.\\d{6}$' }) }) },
        },
        async (req, reply) => {
          state.runs++;
          if (state.gate) await state.gate;
          if (req.body.amount === '999.000000') throw ruleError('Insufficient balance for this charge');
          return reply.code(201).send(ok({ run: state.runs, amount: req.body.amount }));
        },
      );
    },
  };
  return { mod, state };
}

// One app for the file: each subtest signs up its own account and uses its own keys, and counts
// the probe's runs from where it found them.
const { mod, state } = counterModule();
const h = await buildTestApp(t, { extra: [mod] });

t.test('replay returns the first response and acts once; another body answers 422', async (t) => {
  state.runs = 0;
  const u = await h.signUp();
  const send = (amount: string, key = 'k-1') =>
    h.app.inject({
      method: 'POST',
      url: '/api/v1/probe/charge',
      headers: { ...bearer(u.session), 'x-idempotency-key': key },
      payload: { amount },
    });
  const first = await send('1.000000');
  const again = await send('1.000000');
  t.equal(first.statusCode, 201);
  t.equal(again.statusCode, 201);
  t.equal(again.body, first.body, 'same body');
  t.equal(again.headers['idempotent-replayed'], 'true');
  t.equal(state.runs, 1, 'acted once');
  const other = await send('2.000000');
  t.equal(other.statusCode, 422);
  t.equal(other.json().error.code, 'IDEMPOTENCY_KEY_REUSED');

  const invalid = await send('nope', 'k-2');
  t.equal(invalid.statusCode, 400, 'validation failure');
  const fixed = await send('3.000000', 'k-2');
  t.equal(fixed.statusCode, 201, 'validation failures are not stored against the key');

  const refused = await send('999.000000', 'k-3');
  const refusedAgain = await send('999.000000', 'k-3');
  t.equal(refused.statusCode, 400);
  t.equal(refusedAgain.body, refused.body, 'a business refusal is replayed too');

  const other2 = await h.signUp();
  const sameKeyOtherAccount = await h.app.inject({
    method: 'POST',
    url: '/api/v1/probe/charge',
    headers: { ...bearer(other2.session), 'x-idempotency-key': 'k-1' },
    payload: { amount: '2.000000' },
  });
  t.equal(sameKeyOtherAccount.statusCode, 201, 'keys are scoped to the account');
});

t.test('a concurrent retry while the first is in flight answers 409', async (t) => {
  state.runs = 0;
  const u = await h.signUp();
  let open!: () => void;
  state.gate = new Promise((r) => (open = r));
  const req = () =>
    h.app.inject({
      method: 'POST',
      url: '/api/v1/probe/charge',
      headers: { ...bearer(u.session), 'x-idempotency-key': 'race' },
      payload: { amount: '1.000000' },
    });
  const first = req();
  while (state.runs === 0) await new Promise((r) => setImmediate(r));
  const results = await Promise.all([req(), req(), req()]);
  t.same(
    results.map((r) => r.statusCode),
    [409, 409, 409],
  );
  t.equal(results[0]!.json().error.code, 'CONFLICT');
  open();
  t.equal((await first).statusCode, 201);
  t.equal(state.runs, 1);
  state.gate = null;
});

t.test('a request that died mid-way frees its key when the lease runs out', async (t) => {
  state.runs = 0;
  const u = await h.signUp();
  const fingerprintSource = await h.app.inject({
    method: 'POST',
    url: '/api/v1/probe/charge',
    headers: { ...bearer(u.session), 'x-idempotency-key': 'crash' },
    payload: { amount: '1.000000' },
  });
  t.equal(fingerprintSource.statusCode, 201);
  // Make the stored claim look like a daemon that died holding it: in flight, lease over.
  await h.sql`update idempotency_keys set state = 'in_flight', status_code = null, response_body = null,
              lease_until = now() - interval '1 second' where key = 'crash'`;
  const retry = await h.app.inject({
    method: 'POST',
    url: '/api/v1/probe/charge',
    headers: { ...bearer(u.session), 'x-idempotency-key': 'crash' },
    payload: { amount: '1.000000' },
  });
  t.equal(retry.statusCode, 201, 'the retry takes over');
  t.equal(state.runs, 2);
  await h.sql`update idempotency_keys set state = 'in_flight', lease_until = now() + interval '1 minute' where key = 'crash'`;
  const blocked = await h.app.inject({
    method: 'POST',
    url: '/api/v1/probe/charge',
    headers: { ...bearer(u.session), 'x-idempotency-key': 'crash' },
    payload: { amount: '1.000000' },
  });
  t.equal(blocked.statusCode, 409, 'a live lease is respected');
});

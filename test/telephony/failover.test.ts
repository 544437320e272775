import t from 'tap';
import { FAILOVER_MAX_ROUTES, shouldFailover } from '../../src/telephony/failover.js';

/** The failover rule both call planes use (spec "Voice and SMS", failover rule). */
t.test('retryable refusals before ringing move the call', async (t) => {
  for (const s of [403, 480, 500, 502, 503, 504])
    t.ok(shouldFailover({ sipStatus: s, noResponse: false, ringing: false }), String(s));
});

t.test('final refusals never move it', async (t) => {
  for (const s of [404, 484, 486, 487, 488, 600, 603, 408])
    t.notOk(shouldFailover({ sipStatus: s, noResponse: false, ringing: false }), String(s));
});

t.test('no response moves it; a call that rang never moves', async (t) => {
  t.ok(shouldFailover({ sipStatus: null, noResponse: true, ringing: false }));
  t.notOk(
    shouldFailover({ sipStatus: null, noResponse: false, ringing: false }),
    'an ending that is not "no response"',
  );
  t.notOk(shouldFailover({ sipStatus: null, noResponse: true, ringing: true }));
  t.notOk(shouldFailover({ sipStatus: 503, noResponse: false, ringing: true }));
});

t.test('three routes at most', async (t) => {
  t.equal(FAILOVER_MAX_ROUTES, 3);
});

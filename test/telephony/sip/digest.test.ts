import t from 'tap';
import { answerChallenge, computeHa1, createDigestServer } from '../../../src/telephony/sip/digest.js';
import { parseDigest } from '../../../src/telephony/sip/headers.js';

const realm = 'sip.example.net';

function setup() {
  let now = 1_000_000;
  const server = createDigestServer({ realm, secret: 's3cret', nonceTtlMs: 60_000, nonceMaxUses: 3, now: () => now });
  return { server, advance: (ms: number) => (now += ms) };
}

const creds = (
  server: ReturnType<typeof createDigestServer>,
  challenge: string,
  o: { password?: string; realm?: string; uri?: string } = {},
) => {
  const value = answerChallenge({
    challenge,
    method: 'INVITE',
    uri: o.uri ?? 'sip:127.0.0.1:5060',
    username: 'sub_abc',
    password: o.password ?? 'pw',
  });
  const d = server.parseCredentials(value);
  if (!d) throw new Error('unparsed');
  if (o.realm) d.params['realm'] = o.realm;
  return d;
};

t.test('right password passes, over the uri the client sent', async (t) => {
  const { server } = setup();
  const ch = server.challenge();
  t.equal(parseDigest(ch).params['realm'], realm);
  t.notOk('qop' in parseDigest(ch).params, 'no qop offered');
  const ha1 = computeHa1('sub_abc', realm, 'pw');
  t.same(server.check(creds(server, ch, { uri: 'sip:12025550123@10.0.0.1' }), 'INVITE', ha1), { result: 'ok' });
  t.same(server.check(creds(server, ch, { password: 'bad' }), 'INVITE', ha1), { result: 'bad-response' });
});

t.test('another realm is challenged again with the same nonce', async (t) => {
  const { server } = setup();
  const ch = server.challenge();
  const nonce = parseDigest(ch).params['nonce'];
  const r = server.check(creds(server, ch, { realm: 'other' }), 'INVITE', computeHa1('sub_abc', realm, 'pw'));
  t.same(r, { result: 'wrong-realm', nonce });
  t.equal(parseDigest(server.challenge({ nonce })).params['nonce'], nonce);
});

t.test('nonces are bounded in time and use, and must be signed', async (t) => {
  const { server, advance } = setup();
  const ha1 = computeHa1('sub_abc', realm, 'pw');
  const ch = server.challenge();
  for (let i = 0; i < 3; i++) t.same(server.check(creds(server, ch), 'INVITE', ha1), { result: 'ok' });
  t.same(server.check(creds(server, ch), 'INVITE', ha1), { result: 'stale' }, 'use count');
  const ch2 = server.challenge();
  advance(60_001);
  t.same(server.check(creds(server, ch2), 'INVITE', ha1), { result: 'stale' }, 'expired');
  const forged = ch2.replace(/nonce="([^"]+)"/, (_m, n: string) => `nonce="${n.slice(0, -2)}xx"`);
  t.same(server.check(creds(server, forged), 'INVITE', ha1), { result: 'bad-nonce' });
  t.match(server.challenge({ stale: true }), /stale=true/);
});

t.test('client answers qop=auth challenges', async (t) => {
  const value = answerChallenge({
    challenge: 'Digest realm="r", nonce="n", qop="auth,auth-int", opaque="o"',
    method: 'INVITE',
    uri: 'sip:x@y',
    username: 'u',
    password: 'p',
  });
  const p = parseDigest(value).params;
  t.equal(p['qop'], 'auth');
  t.equal(p['opaque'], 'o');
  t.equal(p['nc'], '00000001');
});

t.test("another daemon's nonce (same site secret) is accepted, bounded in use and time here too", async (t) => {
  let now = 1_000_000;
  const opts = { realm, secret: 's3cret', nonceTtlMs: 60_000, nonceMaxUses: 2, now: () => now };
  const a = createDigestServer(opts);
  const b = createDigestServer(opts);
  const other = createDigestServer({ ...opts, secret: 'another site' });
  const ha1 = computeHa1('sub_abc', realm, 'pw');
  const ch = a.challenge();
  t.same(b.check(creds(a, ch), 'INVITE', ha1), { result: 'ok' }, 'challenged by A, answered to B');
  t.same(b.check(creds(a, ch), 'INVITE', ha1), { result: 'ok' });
  t.same(b.check(creds(a, ch), 'INVITE', ha1), { result: 'stale' }, "B counts the nonce's uses");
  t.same(other.check(creds(a, ch), 'INVITE', ha1), { result: 'bad-nonce' }, 'another secret never accepts it');
  const late = a.challenge();
  now += 60_001;
  t.same(b.check(creds(a, late), 'INVITE', ha1), { result: 'stale' }, 'expired wherever it is answered');
});

t.test('a used-up nonce stays used up while older nonces expire around it', async (t) => {
  const { server, advance } = setup();
  const ha1 = computeHa1('sub_abc', realm, 'pw');
  // A challenge every 10 ms for two TTLs: each mint past the first minute expires the oldest.
  for (let i = 0; i < 12_000; i++) {
    advance(10);
    server.challenge();
  }
  const ch = server.challenge();
  for (let i = 0; i < 3; i++) t.same(server.check(creds(server, ch), 'INVITE', ha1), { result: 'ok' });
  // Another 30 s of challenges: 3,000 more nonces expire while this one is still within its TTL.
  for (let i = 0; i < 3_000; i++) {
    advance(10);
    server.challenge();
  }
  t.same(server.check(creds(server, ch), 'INVITE', ha1), { result: 'stale' }, 'its uses are still counted');
  const fresh = server.challenge();
  t.same(server.check(creds(server, fresh), 'INVITE', ha1), { result: 'ok' });
  advance(60_001);
  t.same(server.check(creds(server, fresh), 'INVITE', ha1), { result: 'stale' }, 'expired');
});

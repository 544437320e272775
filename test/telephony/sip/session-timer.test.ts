import t from 'tap';
import type { SipRequest } from '../../../src/telephony/sip/message.js';
import {
  expiryMs,
  isRefresh,
  negotiateSession,
  parseSessionExpires,
  refreshMs,
} from '../../../src/telephony/sip/session-timer.js';

const policy = { minSeSeconds: 90, defaultSeconds: 1800 };
const req = (headers: [string, string][]): SipRequest => ({
  kind: 'request',
  method: 'INVITE',
  uri: 'sip:441@127.0.0.1',
  version: 'SIP/2.0',
  headers: headers.map(([name, value]) => ({ name, value })),
  body: Buffer.alloc(0),
});
const sdp = (version: number, extra = '') =>
  Buffer.from(`v=0\r\no=user1 53655765 ${version} IN IP4 127.0.0.1\r\ns=-\r\nm=audio 6000 RTP/AVP 0\r\n${extra}`);

t.test('Session-Expires parsing', async (t) => {
  t.same(parseSessionExpires('1800;refresher=uas'), { seconds: 1800, refresher: 'uas' });
  t.same(parseSessionExpires(' 600 ; REFRESHER=UAC ; x=1'), { seconds: 600, refresher: 'uac' });
  t.same(parseSessionExpires('90'), { seconds: 90 });
  t.equal(parseSessionExpires('soon'), null);
  t.equal(parseSessionExpires(undefined), null);
});

t.test('negotiation', async (t) => {
  t.same(
    negotiateSession(req([['Session-Expires', '600']]), policy),
    { terms: null },
    'no "timer" support: no session timer',
  );
  t.same(
    negotiateSession(
      req([
        ['Supported', '100rel, timer'],
        ['Session-Expires', '600;refresher=uas'],
      ]),
      policy,
    ),
    { terms: { interval: 600, refresher: 'uas' } },
  );
  t.same(
    negotiateSession(
      req([
        ['k', 'timer'],
        ['x', '600'],
      ]),
      policy,
    ),
    { terms: { interval: 600, refresher: 'uac' } },
    'compact forms',
  );
  t.same(
    negotiateSession(req([['Supported', 'timer']]), policy),
    { terms: { interval: 1800, refresher: 'uac' } },
    'our default when none proposed',
  );
  t.same(
    negotiateSession(
      req([
        ['Supported', 'timer'],
        ['Min-SE', '3600'],
      ]),
      policy,
    ),
    { terms: { interval: 3600, refresher: 'uac' } },
    "never below the caller's Min-SE",
  );
  t.same(
    negotiateSession(
      req([
        ['Supported', 'timer'],
        ['Session-Expires', '60'],
      ]),
      policy,
    ),
    { reject: { minSe: 90 } },
    'below our Min-SE: 422',
  );
  t.same(
    negotiateSession(req([['Supported', 'timer']]), policy, { interval: 300, refresher: 'uac' }),
    { terms: { interval: 300, refresher: 'uac' } },
    'a refresh without Session-Expires keeps the interval',
  );
});

t.test('timing and refresh detection', async (t) => {
  t.equal(expiryMs(1800), 1_768_000, 'less 32 s for long intervals');
  t.equal(expiryMs(90), 60_000, 'less a third for short ones');
  t.equal(refreshMs(1800), 900_000);
  t.equal(isRefresh(sdp(1), Buffer.alloc(0)), true, 'no offer');
  t.equal(isRefresh(sdp(1), sdp(1, 'a=ptime:20\r\n')), true, 'same o= version: same offer');
  t.equal(isRefresh(sdp(1), sdp(2, 'a=sendonly\r\n')), false, 'a new version changes media');
  t.equal(isRefresh(Buffer.alloc(0), sdp(1)), false, 'a first offer after a late-offer INVITE');
});

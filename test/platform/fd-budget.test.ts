import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { connectionCaps, openFileLimit } from '../../src/platform/fd-budget.js';

const config = (over: Record<string, Record<string, unknown>> = {}) => loadConfig({ overrides: over });

t.test('caps as configured when the open-file limit holds them all', async (t) => {
  const c = connectionCaps(config(), 1_000_000);
  t.match(c, { http: 8192, sipTcp: 4096, sipTcpPerSource: 64, smpp: 1024, smppPerSource: 16, lowered: false });
});

t.test(
  'a small open-file limit lowers SIP and SMPP, never the API budget, and keeps the sum inside the limit',
  async (t) => {
    const cfg = config({ http: { max_connections: 1000 } });
    const c = connectionCaps(cfg, 4096);
    t.equal(c.http, 1000, 'HTTPS keeps its budget');
    t.ok(c.lowered);
    t.ok(c.sipTcp + c.smpp + c.http + cfg.database.pool_max <= 4096, 'everything fits under the limit');
    t.ok(c.sipTcp > c.smpp, 'lowered in proportion');
    t.ok(c.sipTcpPerSource <= c.sipTcp && c.smppPerSource <= c.smpp);
  },
);

t.test('a limit too small for the API cap alone gives the API half', async (t) => {
  const c = connectionCaps(config(), 2048);
  t.ok(c.lowered);
  t.ok(c.http < 8192 && c.http >= c.sipTcp + c.smpp, 'the API keeps at least what SIP and SMPP get together');
});

t.test('the limit is read from the process where the platform tells it', async (t) => {
  const limit = openFileLimit();
  if (process.platform === 'linux') t.ok(limit !== null && limit > 0, `open-file limit ${limit}`);
  else t.pass('not readable on this platform');
});

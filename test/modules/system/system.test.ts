import { readFileSync } from 'node:fs';
import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';

t.test('version, server time and capabilities over HTTPS', async (t) => {
  const d = await startTestDaemon(t);
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  const v = await d.https('GET', '/system/version');
  t.equal(v.status, 200);
  t.match(v.json.data, {
    name: 'svc-exchange',
    version: pkg.version,
    apiVersion: 'v1',
    runtime: `node ${process.version}`,
  });
  t.ok(v.json.data.schemaVersion >= 244, 'names the newest migration applied');
  t.ok(v.json.data.uptimeSeconds >= 0);

  const before = Date.now();
  const time = await d.https('GET', '/system/time');
  t.equal(time.headers['cache-control'], 'no-store');
  t.ok(time.json.data.unixMs >= before - 1000 && time.json.data.unixMs <= Date.now() + 1000);
  t.equal(time.json.data.now, new Date(time.json.data.unixMs).toISOString());
  t.equal(time.json.data.timezone, 'UTC');

  const caps = await d.https('GET', '/system/capabilities');
  t.equal(caps.status, 200);
  const gb = caps.json.data.countries.find((c: { code: string }) => c.code === 'GB');
  t.same(gb, { code: 'GB', name: 'United Kingdom', callingCode: '+44' });
  t.ok(caps.json.data.countries.length > 200);
  t.ok(caps.json.data.api.events.includes('balance.low'));
  t.ok(caps.json.data.api.scopes.includes('webhooks:write'));
  t.same(caps.json.data.currencies, ['USD']);
});

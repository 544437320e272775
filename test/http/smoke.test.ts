import t from 'tap';
import { startTestDaemon } from '../helpers/daemon.js';

t.test('daemon starts, answers over HTTPS with the envelope and a request id', async (t) => {
  const d = await startTestDaemon(t);
  t.ok(d.firstStart, 'first start creates the operator');
  const res = await d.https('GET', '/account', { token: d.firstStart!.testKey });
  t.equal(res.status, 200, res.text);
  t.equal(res.json.success, true);
  t.equal(res.json.data.email, d.firstStart!.email);
  t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/);
  const st = await d.https('GET', '/status');
  t.equal(st.status, 200, st.text);
  t.equal(st.json.data.components.database.ok, true);
});

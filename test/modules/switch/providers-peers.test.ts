import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';
import { startSmtpPeer } from '../../helpers/smtp.js';
import { startPerlSmsc } from '../../messaging/perl-smsc.js';
import { freePort, optionsUas, sipp } from '../../telephony/sip/sipp.js';
import { expectExit } from '../sip-trunks/world.js';

/**
 * Supplier trunks against real peers: the saved SMPP details bound to a Net::SMPP SMSC (nothing
 * sent), the portal invitation through a real SMTP server, and reachability from real SIP OPTIONS
 * answered by sipp (and a silent port).
 */
t.test('supplier trunks against real SMSC, SMTP and SIP peers', async (t) => {
  const smtp = await startSmtpPeer(t);
  const smsc = await startPerlSmsc('sup9', 'pw9');
  t.teardown(() => smsc.stop());
  const d = await startTestDaemon(t, {
    mail: {
      smtp_host: '127.0.0.1',
      smtp_port: smtp.port,
      from: 'Exchange <no-reply@exchange.test>',
      link_base_url: 'https://dash.exchange.test/',
    },
  });
  const accounts = d.modules.services.accounts;
  await accounts.createAccount({ email: 'switch@example.test', password: 'correct horse battery' });
  const { accessToken: token } = await accounts.login('switch@example.test', 'correct horse battery', {});
  const [row] = await d.sql<{ id: string }[]>`select id from accounts where email = 'switch@example.test'`;
  await d.modules.services.switchSubscriptions.grant(row!.id, 'plan', null);
  const api = (method: string, path: string, body?: unknown) =>
    d.https(method, path, { token, ...(body === undefined ? {} : { body: body as Record<string, unknown> }) });

  const provider = await api('POST', '/switch/providers', { name: 'Peer Co', portalEmail: 'portal@peer.example' });
  t.equal(provider.status, 201, provider.text);
  const trunk = await api('POST', '/switch/suppliers', {
    supplierId: provider.json.data.id,
    label: 'Peer SMPP',
    smsDeliveryMethod: 'smpp',
    smppHost: '127.0.0.1',
    smppPort: smsc.port,
    smppSystemId: 'sup9',
    smppPassword: 'pw9',
  });
  t.equal(trunk.status, 201, trunk.text);
  const id = trunk.json.data.id as string;

  await t.test('test-sms: a real bind with the stored password, nothing sent', async (t) => {
    const r = await api('POST', `/switch/suppliers/${id}/test-sms`);
    t.equal(r.status, 200, r.text);
    t.match(r.json.data, { pass: true, via: 'smpp' });
    t.same(
      r.json.data.checks.map((c: { label: string; ok: boolean }) => [c.label, c.ok]),
      [
        ['connect', true],
        ['bind', true],
        ['unbind', true],
      ],
    );
    t.equal(smsc.lines.filter((l) => l.startsWith('SUBMIT')).length, 0, 'no submit_sm');
    t.notOk(r.text.includes('pw9'));
    const v = await api('PATCH', `/switch/suppliers/${id}`, { version: 1, smppPassword: 'wrong' });
    t.equal(v.status, 200, v.text);
    const bad = await api('POST', `/switch/suppliers/${id}/test-sms`);
    t.match(bad.json.data, {
      pass: false,
      checks: [
        { label: 'connect', ok: true },
        { label: 'bind', ok: false },
      ],
    });
  });

  await t.test("portal invite: a real e-mail to the provider's portal address", async (t) => {
    const r = await api('POST', `/switch/suppliers/${id}/portal-invite`);
    t.equal(r.status, 200, r.text);
    t.same(r.json.data, { sent: true, to: 'portal@peer.example' });
    const mail = await smtp.next('portal@peer.example', /supplier-portal/);
    t.match(mail.subject, /Peer SMPP/);
    const token = /token=(svc_sp_\w+)/.exec(mail.text)![1]!;
    const [kept] = await d.sql<{ n: number }[]>`
      select count(*)::int as n from switch_portal_invites where trunk_id = ${id} and token_hash = encode(sha256(${token}::bytea), 'hex')`;
    t.equal(kept!.n, 1, 'only the hash is kept');
  });

  await t.test('reachability: real OPTIONS to the enabled endpoints', async (t) => {
    const peer = await sipp(t, optionsUas(200), [], { calls: 1 });
    const silent = await freePort();
    const up = await api('POST', `/switch/suppliers/${id}/endpoints`, { host: '127.0.0.1', port: peer.port });
    t.equal(up.status, 201, up.text);
    const dead = await api('POST', `/switch/suppliers/${id}/endpoints`, {
      host: '127.0.0.1',
      port: silent,
      role: 'backup',
    });
    t.equal(dead.status, 201, dead.text);
    const r = await api('POST', `/switch/suppliers/${id}/reachability`);
    t.equal(r.status, 200, r.text);
    t.equal(r.json.data.reachable, true);
    const by = Object.fromEntries(
      r.json.data.endpoints.map((e: { id: string; reachable: boolean; status: number | null }) => [
        e.id,
        [e.reachable, e.status],
      ]),
    );
    t.same(by[up.json.data.id], [true, 200]);
    t.same(by[dead.json.data.id], [false, null]);
    await expectExit(t, peer, 'the endpoint got one OPTIONS');
    const got = await api('GET', `/switch/suppliers/${id}`);
    t.match(got.json.data, { reachable: true, reachCheckedAt: /^\d{4}-/ });
    const readiness = await api('GET', `/switch/suppliers/${id}/readiness`);
    t.match(
      readiness.json.data.checks.find((c: { id: string }) => c.id === 'reachability'),
      { status: 'pass' },
    );
  });
});

import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startTestDaemon } from '../../helpers/daemon.js';
import { signIn } from '../../helpers/sessions.js';

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(32, 1)]);

t.test('tickets, messages, attachments, operator replies and their notification', async (t) => {
  const d = await startTestDaemon(t, {
    support: { max_attachment_bytes: 2048, max_attachments_per_message: 2, open_tickets_per_account: 2 },
  });
  const user = await signIn(d, 'cust@example.test');
  const op = await signIn(d, 'ops@example.test', 'admin');
  const stranger = await signIn(d, 'stranger@example.test');

  const badType = await d.https('POST', '/support/tickets', {
    token: user.token,
    body: {
      subject: 'Calls drop',
      category: 'technical',
      message: 'x',
      attachments: [{ fileName: 'a.exe', contentBase64: b64(Buffer.from([0x4d, 0x5a, 0, 1, 2])) }],
    },
  });
  t.match(badType.json.error, { code: 'VALIDATION_ERROR', details: [{ path: 'attachments/0/contentBase64' }] });
  const tooBig = await d.https('POST', '/support/tickets', {
    token: user.token,
    body: {
      subject: 'Calls drop',
      category: 'technical',
      message: 'x',
      attachments: [{ fileName: 'log.txt', contentBase64: b64('a'.repeat(3000)) }],
    },
  });
  t.match(tooBig.json.error.details[0].message, /2048 bytes/);

  const opened = await d.https('POST', '/support/tickets', {
    token: user.token,
    body: {
      subject: 'Calls drop after 30 s',
      category: 'technical',
      priority: 'high',
      message: 'Calls to UK mobiles drop at 30 seconds.',
      attachments: [
        { fileName: 'trace.txt', contentBase64: b64('INVITE sip:447700900000@x SIP/2.0\r\n') },
        { fileName: 'screen.png', contentBase64: png.toString('base64') },
      ],
    },
  });
  t.equal(opened.status, 201, opened.text);
  const ticket = opened.json.data;
  t.match(ticket, {
    subject: 'Calls drop after 30 s',
    category: 'technical',
    priority: 'high',
    status: 'open',
    accountId: user.accountId,
  });
  t.equal(ticket.messages.length, 1);
  t.same(
    ticket.messages[0].attachments.map((a: { contentType: string }) => a.contentType),
    ['text/plain', 'image/png'],
  );
  t.equal(
    readdirSync(join(d.config.paths.state, 'support', user.accountId)).length,
    2,
    'files under <state>/support/<account>/',
  );

  const att = ticket.messages[0].attachments[0];
  const dl = await d.https('GET', `/support/tickets/${ticket.id}/attachments/${att.id}`, { token: user.token });
  t.equal(dl.status, 200);
  t.match(dl.headers['content-type'], /^text\/plain/);
  t.equal(dl.text, 'INVITE sip:447700900000@x SIP/2.0\r\n');
  t.equal((await d.https('GET', `/support/tickets/${ticket.id}`, { token: stranger.token })).status, 404);
  t.equal(
    (await d.https('GET', `/support/tickets/${ticket.id}/attachments/${att.id}`, { token: stranger.token })).status,
    404,
  );

  // The operator sees every account's tickets and replies.
  const queue = await d.https('GET', '/support/tickets?all=true&status=open', { token: op.token });
  t.equal(queue.json.data.length, 1);
  t.match(queue.json.data[0], { id: ticket.id, messageCount: 1 });
  t.equal(
    (await d.https('GET', '/support/tickets?all=true', { token: stranger.token })).json.data.length,
    0,
    'all=true is for operators',
  );
  const reply = await d.https('POST', `/support/tickets/${ticket.id}/messages`, {
    token: op.token,
    body: {
      body: 'Your SIP session timer is 30 s; raise it.',
      attachments: [{ fileName: 'howto.txt', contentBase64: b64('Session-Expires: 1800') }],
    },
  });
  t.equal(reply.status, 200, reply.text);
  t.equal(reply.json.data.status, 'answered');
  t.match(reply.json.data.messages[1], { fromOperator: true, attachments: [{ fileName: 'howto.txt' }] });
  t.equal(
    (
      await d.https(
        'GET',
        `/support/tickets/${ticket.id}/attachments/${reply.json.data.messages[1].attachments[0].id}`,
        { token: user.token },
      )
    ).text,
    'Session-Expires: 1800',
  );

  // The reply reaches the customer's notification feed through the outbox.
  await d.modules.services.notifications.pump();
  const feed = await d.https('GET', '/notifications', { token: user.token });
  t.match(feed.json.data[0], { kind: 'support_ticket.replied', body: /Calls drop after 30 s/ });

  const customerReply = await d.https('POST', `/support/tickets/${ticket.id}/messages`, {
    token: user.token,
    body: { body: 'Thanks, trying.' },
  });
  t.equal(customerReply.json.data.status, 'open', 'the customer reply reopens it for support');
  const closed = await d.https('POST', `/support/tickets/${ticket.id}/messages`, {
    token: user.token,
    body: { status: 'closed' },
  });
  t.match(closed.json.data, { status: 'closed', closedAt: String });
  t.equal(
    (await d.https('POST', `/support/tickets/${ticket.id}/messages`, { token: user.token, body: { status: 'closed' } }))
      .json.error.code,
    'CONFLICT',
  );
  t.equal(
    (await d.https('POST', `/support/tickets/${ticket.id}/messages`, { token: user.token, body: {} })).json.error.code,
    'VALIDATION_ERROR',
  );
  const reopened = await d.https('POST', `/support/tickets/${ticket.id}/messages`, {
    token: user.token,
    body: { status: 'open' },
  });
  t.match(reopened.json.data, { status: 'open', closedAt: null });

  // Open-ticket limit and paging.
  t.equal(
    (
      await d.https('POST', '/support/tickets', {
        token: user.token,
        body: { subject: 'Second', category: 'billing', message: 'm' },
      })
    ).status,
    201,
  );
  const third = await d.https('POST', '/support/tickets', {
    token: user.token,
    body: { subject: 'Third', category: 'billing', message: 'm' },
  });
  t.match(third.json.error, { code: 'VALIDATION_ERROR', message: /At most 2 open tickets/ });
  const page = await d.https('GET', '/support/tickets?limit=1', { token: user.token });
  t.equal(page.json.hasMore, true);
  t.equal(
    (await d.https('GET', `/support/tickets?limit=1&cursor=${page.json.nextCursor}`, { token: user.token })).json
      .data[0].id,
    ticket.id,
  );

  const readOnly = await d.modules.services.keys.create(user.accountId, { mode: 'live', scopes: ['account:read'] });
  t.equal((await d.https('GET', '/support/tickets', { token: readOnly.secret })).status, 200);
  t.equal(
    (
      await d.https('POST', '/support/tickets', {
        token: readOnly.secret,
        body: { subject: 'Via key', category: 'other', message: 'm' },
      })
    ).status,
    403,
  );
});

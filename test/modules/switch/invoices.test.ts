import { inflateSync } from 'node:zlib';
import t from 'tap';
import { buildCdr } from '../../../src/modules/cdrs/service.js';
import { bearer, buildTestApp, type TestApp } from '../../helpers/app.js';
import { startSmtpPeer } from '../../helpers/smtp.js';

/**
 * Switch invoicing (spec "Switch" Invoicing): a sub-account's CDRs written through the real
 * settlement path (ledger hold, cdrs settle with the operator's markup, CDR insert), previewed,
 * issued under gap-free numbers with every CDR claimed once, sent through a real SMTP server with
 * the PDF attached, settled, voided and reissued.
 */

const DAY = 86_400_000;

interface Usage {
  kind: 'voice' | 'sms';
  to: string;
  at: Date;
  /** null: the leg was never priced (no settlement; the hold is released). */
  billed: { total: string; seller: string; fee: string; markup: string; rate: string; seconds?: number } | null;
  durationSeconds?: number;
  segments?: number;
}

/** Settles one call leg or message of `payer` (a sub-account of `operatorId`) and writes its CDR, as the planes do. */
async function settleUsage(h: TestApp, payer: string, operatorId: string, sellerId: string, u: Usage) {
  const { ledger, cdrs } = h.services;
  const key = `test:${Math.random().toString(36).slice(2)}`;
  const hold = await ledger.hold({ postingKey: `${key}:hold`, accountId: payer, amount: '1.000000', ttlSeconds: 60 });
  const row = buildCdr({
    accountId: payer,
    operatorId,
    sellerId,
    callUuid: null,
    callGroupId: null,
    kind: u.kind,
    source: 'api',
    routeId: null,
    fromNumber: '15550000001',
    toNumber: u.to,
    cli: null,
    status: u.kind === 'sms' ? 'sent' : 'completed',
    sipCode: u.kind === 'voice' ? 200 : null,
    hangupCause: null,
    durationSeconds: u.kind === 'voice' ? (u.durationSeconds ?? u.billed?.seconds ?? 0) : null,
    segments: u.kind === 'sms' ? (u.segments ?? 1) : null,
    pddMs: null,
    mediaMode: null,
    billed: u.billed && {
      total: u.billed.total,
      seller: u.billed.seller,
      ratePerUnit: u.billed.rate,
      billableSeconds: u.kind === 'voice' ? (u.billed.seconds ?? 0) : null,
    },
    answeredAt: u.kind === 'voice' ? u.at : null,
    endedAt: u.at,
    createdAt: u.at,
  });
  await h.sql.begin(async (tx) => {
    await cdrs.settle(tx, {
      key,
      holdId: hold.holdId,
      payer,
      operatorId,
      sellerId,
      charge: u.billed && {
        total: u.billed.total,
        seller: u.billed.seller,
        fee: u.billed.fee,
        markup: u.billed.markup,
        ...(u.kind === 'voice' ? { billableSeconds: u.billed.seconds ?? 0 } : {}),
      },
      context: { reference: 'test usage', relatedEntityType: 'test', relatedEntityId: row.id },
    });
    await cdrs.insertCdrs(tx, [row]);
  });
  return row.id;
}

/** The text a pdfkit document draws: its Flate streams inflated, the hex strings of each TJ joined. */
function pdfText(pdf: Buffer): string {
  const raw = pdf.toString('latin1');
  let text = '';
  for (const m of raw.matchAll(/stream\r?\n/g)) {
    const start = m.index + m[0].length;
    const end = raw.indexOf('endstream', start);
    try {
      const body = inflateSync(pdf.subarray(start, end)).toString('latin1');
      for (const tj of body.matchAll(/\[(.*?)\] TJ/g))
        text +=
          [...tj[1]!.matchAll(/<([0-9a-f]*)>/g)].map((h) => Buffer.from(h[1]!, 'hex').toString('latin1')).join('') +
          '\n';
    } catch {
      // not a Flate stream (fonts are built in; nothing else is expected)
    }
  }
  return text;
}

t.test(
  'Switch invoicing: preview, issue, concurrent issue, stale tokens, unrated usage, send, settle, void and reissue',
  async (t) => {
    const smtp = await startSmtpPeer(t);
    const h = await buildTestApp(t, {
      overrides: {
        mail: { smtp_host: '127.0.0.1', smtp_port: smtp.port },
        billing: { require_route_for_sub_accounts: false },
      },
    });
    const { services: svc, sql } = h;
    const op = await h.signUp();
    const other = await h.signUp();
    const seller = await h.signUp();
    await svc.ledger.topup({ accountId: op.accountId, amount: '100.000000', source: 'card', postingKey: 'op-top' });
    const acme = await svc.application.create(op.accountId, { label: 'Acme Telecom', markupPct: '10' });
    const beta = await svc.application.create(op.accountId, { label: 'Beta Mobile' });
    const stranger = await svc.application.create(other.accountId, { label: 'Not yours' });
    for (const s of [acme, beta])
      await svc.application.credit(op.accountId, s.id, { amount: '20.000000' }, `fund-${s.id}`);

    const req = async (method: 'GET' | 'POST', url: string, token: string, payload?: object) => {
      const r = await h.app.inject({
        method,
        url: `/api/v1${url}`,
        headers: bearer(token),
        ...(payload ? { payload } : {}),
      });
      return { status: r.statusCode, body: r.json() };
    };
    const now = Date.now();
    const period = {
      periodStart: new Date(now - 10 * DAY).toISOString(),
      periodEnd: new Date(now - DAY).toISOString(),
    };
    const inPeriod = (d: number) => new Date(now - d * DAY);

    // Acme's usage: two calls to London at one rate, one to New York, one 2-part SMS to Germany.
    const usage = (u: Usage) => settleUsage(h, acme.id, op.accountId, seller.accountId, u);
    await usage({
      kind: 'voice',
      to: '442071234567',
      at: inPeriod(9),
      billed: {
        total: '0.024691',
        seller: '0.020000',
        fee: '0.002447',
        markup: '0.002244',
        rate: '0.012345',
        seconds: 120,
      },
    });
    await usage({
      kind: 'voice',
      to: '442079876543',
      at: inPeriod(8),
      billed: {
        total: '0.012551',
        seller: '0.010000',
        fee: '0.001300',
        markup: '0.001251',
        rate: '0.012345',
        seconds: 61,
      },
    });
    await usage({
      kind: 'voice',
      to: '12125550123',
      at: inPeriod(7),
      billed: {
        total: '0.003333',
        seller: '0.002500',
        fee: '0.000500',
        markup: '0.000333',
        rate: '0.003333',
        seconds: 60,
      },
    });
    await usage({
      kind: 'sms',
      to: '4915112345678',
      at: inPeriod(6),
      segments: 2,
      billed: { total: '0.142468', seller: '0.120000', fee: '0.012000', markup: '0.010468', rate: '0.071234' },
    });
    // Not billed: an unanswered call (nothing to bill), a call before the period, another customer's call.
    await usage({ kind: 'voice', to: '442071234567', at: inPeriod(5), billed: null, durationSeconds: 0 });
    await usage({
      kind: 'voice',
      to: '442071234567',
      at: inPeriod(12),
      billed: {
        total: '1.000000',
        seller: '0.900000',
        fee: '0.050000',
        markup: '0.050000',
        rate: '0.500000',
        seconds: 120,
      },
    });
    await settleUsage(h, beta.id, op.accountId, seller.accountId, {
      kind: 'sms',
      to: '33612345678',
      at: inPeriod(4),
      billed: { total: '0.050000', seller: '0.040000', fee: '0.005000', markup: '0.005000', rate: '0.050000' },
    });
    const acmeBody = { customerId: acme.id, ...period, notes: 'November traffic' };

    t.test('without a Switch plan every invoicing route answers 402', async (t) => {
      t.equal((await req('GET', '/switch/invoices', op.session)).status, 402);
      const r = await req('POST', '/switch/invoices/preview', op.session, acmeBody);
      t.equal(r.status, 402);
      t.equal(r.body.error.code, 'SWITCH_SUBSCRIPTION_REQUIRED');
      await svc.switchSubscriptions.grant(op.accountId, 'plan', null);
      await svc.switchSubscriptions.grant(other.accountId, 'plan', null);
    });

    t.test('a customer is a sub-account of the caller: any other id is 404; bad periods are 400', async (t) => {
      for (const customerId of [stranger.id, op.accountId, other.accountId]) {
        const r = await req('POST', '/switch/invoices/preview', op.session, { ...acmeBody, customerId });
        t.equal(r.status, 404, customerId);
      }
      const back = await req('POST', '/switch/invoices/preview', op.session, {
        ...acmeBody,
        periodStart: period.periodEnd,
        periodEnd: period.periodStart,
      });
      t.equal(back.status, 400);
      t.same(back.body.error.details, [{ path: 'periodEnd', message: 'must be after periodStart' }]);
      const long = await req('POST', '/switch/invoices/preview', op.session, {
        ...acmeBody,
        periodStart: '2026-01-01',
        periodEnd: '2026-06-01',
      });
      t.equal(long.status, 400);
      t.equal(long.body.error.details[0].path, 'periodEnd');
    });

    let token = '';
    t.test('preview prices the rated usage at what the customer was charged, to the sixth decimal', async (t) => {
      const r = await req('POST', '/switch/invoices/preview', op.session, acmeBody);
      t.equal(r.status, 200, JSON.stringify(r.body));
      const p = r.body.data;
      t.equal(p.subtotal, '0.183043');
      t.equal(p.totalAmount, '0.183043');
      t.equal(p.total, 0.183043);
      t.equal(p.tax, '0.000000');
      t.match(p.usage, {
        records: 4,
        voice: { calls: 3, billedSeconds: 241, amount: '0.040575' },
        sms: { messages: 1, segments: 2, amount: '0.142468' },
      });
      t.same(
        p.lines.map((l: Record<string, unknown>) => [l.kind, l.countryCode, l.ratePerUnit, l.records, l.amount]),
        [
          ['sms', 'DE', '0.071234', 1, '0.142468'],
          ['voice', 'GB', '0.012345', 2, '0.037242'],
          ['voice', 'US', '0.003333', 1, '0.003333'],
        ],
      );
      t.equal(p.lines[1].billedSeconds, 181);
      t.match(p.unrated, { records: 0, excluded: false });
      t.match(p.customer, { id: acme.id, label: 'Acme Telecom', source: 'sub_account' });
      t.match(p.reviewToken, /^rt1\.-\.[A-Za-z0-9_-]{43}$/);
      const again = await req('POST', '/switch/invoices/preview', op.session, acmeBody);
      t.equal(again.body.data.reviewToken, p.reviewToken, 'the same data gives the same token');
      const [claims] = await sql<{ n: number }[]>`select count(*)::int as n from switch_invoice_claims`;
      t.equal(claims!.n, 0, 'a preview claims nothing');
      const [counters] = await sql<{ n: number }[]>`select count(*)::int as n from switch_invoice_counters`;
      t.equal(counters!.n, 0, 'and allocates no number');
      token = p.reviewToken;
    });

    t.test('a forged or stale token is refused with INVOICE_REVIEW_STALE', async (t) => {
      const forged = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
      const r = await req('POST', '/switch/invoices', op.session, { ...acmeBody, reviewToken: forged });
      t.equal(r.status, 409);
      t.equal(r.body.error.code, 'INVOICE_REVIEW_STALE');
      const malformed = await req('POST', '/switch/invoices', op.session, { ...acmeBody, reviewToken: 'nope' });
      t.equal(malformed.status, 400);
      t.equal(malformed.body.error.details[0].path, 'reviewToken');
      const otherOptions = await req('POST', '/switch/invoices', op.session, {
        ...acmeBody,
        notes: 'changed',
        reviewToken: token,
      });
      t.equal(otherOptions.body.error.code, 'INVOICE_REVIEW_STALE', 'options are bound by the token');
      // A record arrives in the period after the preview.
      await usage({
        kind: 'voice',
        to: '12125550123',
        at: inPeriod(3),
        billed: {
          total: '0.001667',
          seller: '0.001250',
          fee: '0.000250',
          markup: '0.000167',
          rate: '0.003333',
          seconds: 30,
        },
      });
      const stale = await req('POST', '/switch/invoices', op.session, { ...acmeBody, reviewToken: token });
      t.equal(stale.status, 409);
      t.equal(stale.body.error.code, 'INVOICE_REVIEW_STALE');
      const fresh = await req('POST', '/switch/invoices/preview', op.session, acmeBody);
      t.equal(fresh.body.data.subtotal, '0.184710');
      t.not(fresh.body.data.reviewToken, token);
      token = fresh.body.data.reviewToken;
    });

    t.test('test keys may preview but not issue; a key without switch:manage gets nothing', async (t) => {
      const test = await svc.keys.create(op.accountId, { name: 't', mode: 'test' });
      t.equal((await req('POST', '/switch/invoices/preview', test.secret, acmeBody)).status, 200);
      const issue = await req('POST', '/switch/invoices', test.secret, { ...acmeBody, reviewToken: token });
      t.equal(issue.status, 403);
      t.equal(issue.body.error.code, 'TEST_KEY_NOT_ALLOWED');
      const narrow = await svc.keys.create(op.accountId, { name: 'n', scopes: ['account:read'] });
      t.equal((await req('GET', '/switch/invoices', narrow.secret)).status, 403);
    });

    let acmeInvoice: Record<string, unknown> & { id: string } = { id: '' };
    t.test('two concurrent issues of one preview: one invoice, every record claimed once', async (t) => {
      const body = { ...acmeBody, reviewToken: token };
      const [a, b] = await Promise.all([
        req('POST', '/switch/invoices', op.session, body),
        req('POST', '/switch/invoices', op.session, body),
      ]);
      t.same([a.status, b.status].sort(), [201, 409], JSON.stringify([a.body, b.body]));
      const won = a.status === 201 ? a : b;
      const lost = a.status === 201 ? b : a;
      t.equal(lost.body.error.code, 'INVOICE_REVIEW_STALE');
      t.match(won.body.data, {
        invoiceNumber: 'SW-000001',
        customerId: acme.id,
        status: 'open',
        subtotal: '0.184710',
        total: '0.184710',
        amountPaid: '0.000000',
        claimedRecords: 5,
        notes: 'November traffic',
        identityFrozen: true,
        reviewDigest: /^[0-9a-f]{64}$/,
        preview: { subtotal: '0.184710', reviewToken: token },
      });
      t.equal(won.body.data.reviewDigest, won.body.data.preview.provenance.digest);
      const [claims] = await sql<{ n: number; d: number }[]>`
      select count(*)::int as n, count(distinct cdr_id)::int as d from switch_invoice_claims`;
      t.same(claims, { n: 5, d: 5 });
      const [counter] = await sql<{ n: string }[]>`select last_number::text as n from switch_invoice_counters`;
      t.equal(counter!.n, '1', 'the losing issue took no number');
      acmeInvoice = won.body.data;
      const after = await req('POST', '/switch/invoices/preview', op.session, acmeBody);
      t.equal(after.body.data.usage.records, 0, 'claimed usage is not offered again');
      const empty = await req('POST', '/switch/invoices', op.session, {
        ...acmeBody,
        reviewToken: after.body.data.reviewToken,
      });
      t.equal(empty.status, 400, 'nothing left to invoice');
    });

    t.test('send: a real e-mail to the customer with the PDF attached', async (t) => {
      const none = await req('POST', `/switch/invoices/${acmeInvoice.id}/send`, op.session, {});
      t.equal(none.status, 400, 'no address known');
      t.equal(none.body.error.details[0].path, 'to');
      // The sub-account's portal e-mail (no route sets it yet: set as the customers area will).
      await sql`update sub_accounts set portal_email = 'billing@acme.example' where account_id = ${acme.id}`;
      const r = await req('POST', `/switch/invoices/${acmeInvoice.id}/send`, op.session, {});
      t.equal(r.status, 200, JSON.stringify(r.body));
      t.match(r.body.data, { status: 'open', sendCount: 1, delivery: { via: 'smtp' } });
      t.ok(r.body.data.sentAt);
      const mail = await smtp.next('billing@acme.example', /SW-000001/);
      t.match(mail.subject, /Invoice SW-000001/);
      const part = /Content-Type: application\/pdf;?[^]*?\r?\n\r?\n([A-Za-z0-9+/=\r\n]+)/i.exec(mail.raw);
      t.ok(part, 'a PDF part');
      t.match(mail.raw, /filename=SW-000001\.pdf|filename="SW-000001\.pdf"/);
      const pdf = Buffer.from(part![1]!.replace(/\s+/g, ''), 'base64');
      t.equal(pdf.subarray(0, 5).toString(), '%PDF-');
      const text = pdfText(pdf);
      t.match(text, /SW-000001/);
      t.match(text, /Acme Telecom/);
      t.match(text, /SMS to Germany/);
      t.match(text, /Voice to United Kingdom: 2 calls, 3m 1s at 0\.012345 per minute/);
      t.match(text, /0\.184710/);
      const again = await req('POST', `/switch/invoices/${acmeInvoice.id}/send`, op.session, { to: 'ap@acme.example' });
      t.equal(again.body.data.sendCount, 2);
      await smtp.next('ap@acme.example', /SW-000001/);
    });

    t.test('settle records payments without moving money; overpayment is credit for the next invoice', async (t) => {
      const before = await Promise.all([svc.ledger.balanceOf(acme.id), svc.ledger.balanceOf(op.accountId)]);
      const url = `/switch/invoices/${acmeInvoice.id}/settle`;
      const bad = await req('POST', url, op.session, { amount: '0.0000001', method: 'wire' });
      t.equal(bad.status, 400);
      t.equal(bad.body.error.details[0].path, 'amount');
      const part = await req('POST', url, op.session, { amount: '0.100000', method: 'wire', reference: 'W-1' });
      t.match(part.body.data, { status: 'partial', amountPaid: '0.100000' });
      const full = await req('POST', url, op.session, { amount: '0.100000', method: 'card' });
      t.match(full.body.data, { status: 'paid', amountPaid: '0.200000' });
      t.same(
        full.body.data.payments.map((p: { amount: string; method: string }) => [p.amount, p.method]),
        [
          ['0.100000', 'wire'],
          ['0.100000', 'card'],
        ],
      );
      t.equal((await req('POST', url, op.session, { amount: '1.000000', method: 'wire' })).status, 400, 'paid already');
      const after = await Promise.all([svc.ledger.balanceOf(acme.id), svc.ledger.balanceOf(op.accountId)]);
      t.same(after, before, 'no ledger movement');
      t.equal(
        (await req('POST', `/switch/invoices/${acmeInvoice.id}/void`, op.session, {})).status,
        400,
        'paid: no void',
      );

      // The next period's usage, with the 0.015290 overpaid applied as credit.
      await usage({
        kind: 'voice',
        to: '442071234567',
        at: new Date(now - DAY / 2),
        billed: {
          total: '0.024691',
          seller: '0.020000',
          fee: '0.002447',
          markup: '0.002244',
          rate: '0.012345',
          seconds: 120,
        },
      });
      const next = { customerId: acme.id, periodStart: period.periodEnd, periodEnd: new Date(now).toISOString() };
      const p = await req('POST', '/switch/invoices/preview', op.session, { ...next, applyCredits: true });
      t.match(p.body.data.credits, { applied: true, available: '0.015290', amount: '0.015290' });
      t.equal(p.body.data.totalAmount, '0.009401');
    });

    t.test('unrated usage blocks issue unless excluded with a reason by a holder of billing:write', async (t) => {
      const unratedId = await settleUsage(h, beta.id, op.accountId, seller.accountId, {
        kind: 'voice',
        to: '33612345678',
        at: inPeriod(3),
        billed: null,
        durationSeconds: 42,
      });
      const body = { customerId: beta.id, ...period };
      const p = await req('POST', '/switch/invoices/preview', op.session, body);
      t.match(p.body.data.unrated, { records: 1, voiceCalls: 1, voiceSeconds: 42, excluded: false });
      t.equal(p.body.data.subtotal, '0.050000');
      const blocked = await req('POST', '/switch/invoices', op.session, {
        ...body,
        reviewToken: p.body.data.reviewToken,
      });
      t.equal(blocked.status, 422);
      t.equal(blocked.body.error.code, 'INVOICE_UNRATED_USAGE');
      const excludeUnrated = { reason: 'supplier rate missing; billed next month' };
      const switchOnly = await svc.keys.create(op.accountId, { name: 's', scopes: ['switch:manage'] });
      const denied = await req('POST', '/switch/invoices/preview', switchOnly.secret, { ...body, excludeUnrated });
      t.equal(denied.status, 403, 'an adjustment needs billing:write');
      const adjuster = await svc.keys.create(op.accountId, { name: 'b', scopes: ['switch:manage', 'billing:write'] });
      const ex = await req('POST', '/switch/invoices/preview', adjuster.secret, { ...body, excludeUnrated });
      t.match(ex.body.data.unrated, { records: 1, excluded: true, reason: excludeUnrated.reason });
      const issued = await req('POST', '/switch/invoices', adjuster.secret, {
        ...body,
        excludeUnrated,
        reviewToken: ex.body.data.reviewToken,
      });
      t.equal(issued.status, 201, JSON.stringify(issued.body));
      t.match(issued.body.data, {
        invoiceNumber: 'SW-000002',
        total: '0.050000',
        claimedRecords: 1,
        exclusions: { unrated: { reason: excludeUnrated.reason, records: 1, cdrIds: [unratedId] } },
      });
      const [claimed] = await sql`select 1 from switch_invoice_claims where cdr_id = ${unratedId}`;
      t.notOk(claimed, 'the excluded record stays unclaimed');

      t.test('void releases the claims and keeps the number; a reissue replaces it', async (t) => {
        const id = issued.body.data.id as string;
        const v = await req('POST', `/switch/invoices/${id}/void`, op.session, { reason: 'wrong period' });
        t.match(v.body.data, {
          status: 'void',
          invoiceNumber: 'SW-000002',
          claimedRecords: 0,
          releasedRecords: 1,
          voidReason: 'wrong period',
        });
        t.equal((await req('POST', `/switch/invoices/${id}/void`, op.session, {})).status, 400, 'void once');
        t.equal((await req('POST', `/switch/invoices/${id}/send`, op.session, { to: 'x@y.example' })).status, 400);
        const wrong = await req('POST', '/switch/invoices/preview', op.session, {
          ...acmeBody,
          releaseInvoiceId: id,
        });
        t.equal(wrong.status, 400, "another customer's void invoice");
        const re = await req('POST', '/switch/invoices/preview', adjuster.secret, {
          ...body,
          excludeUnrated,
          releaseInvoiceId: id,
        });
        t.equal(re.body.data.usage.records, 1, 'the released usage is billable again');
        t.match(re.body.data.reviewToken, new RegExp(`^rt1\\.${id}\\.`));
        const reissued = await req('POST', '/switch/invoices', adjuster.secret, {
          ...body,
          excludeUnrated,
          reviewToken: re.body.data.reviewToken,
        });
        t.equal(reissued.status, 201, JSON.stringify(reissued.body));
        t.match(reissued.body.data, {
          invoiceNumber: 'SW-000003',
          replacesInvoiceId: id,
          replaces: { id, invoiceNumber: 'SW-000002', status: 'void' },
          total: '0.050000',
        });
        const old = await req('GET', `/switch/invoices/${id}`, op.session);
        t.match(old.body.data.replacedBy, { id: reissued.body.data.id, invoiceNumber: 'SW-000003' });
        const twice = await req('POST', '/switch/invoices/preview', op.session, { ...body, releaseInvoiceId: id });
        t.equal(twice.status, 400, 'a void invoice is reissued once');
      });
    });

    t.test('lists: numbers gap-free per operator, filters, and no other operator sees them', async (t) => {
      const all = await req('GET', '/switch/invoices', op.session);
      t.equal(all.body.data.total, 3);
      t.same(
        all.body.data.rows.map((r: { invoiceNumber: string; status: string }) => [r.invoiceNumber, r.status]),
        [
          ['SW-000003', 'open'],
          ['SW-000002', 'void'],
          ['SW-000001', 'paid'],
        ],
      );
      const byCustomer = await req('GET', `/switch/invoices?customerId=${beta.id}&status=void`, op.session);
      t.same(
        byCustomer.body.data.rows.map((r: { invoiceNumber: string }) => r.invoiceNumber),
        ['SW-000002'],
      );
      const page = await req('GET', '/switch/invoices?limit=1&offset=1', op.session);
      t.match(page.body.data, { total: 3, limit: 1, offset: 1, rows: [{ invoiceNumber: 'SW-000002' }] });
      t.equal((await req('GET', '/switch/invoices?limit=501', op.session)).status, 400);
      t.equal((await req('GET', '/switch/invoices', other.session)).body.data.total, 0);
      t.equal((await req('GET', `/switch/invoices/${acmeInvoice.id}`, other.session)).status, 404);
      const pdf = await h.app.inject({
        method: 'GET',
        url: `/api/v1/switch/invoices/${acmeInvoice.id}/pdf`,
        headers: bearer(op.session),
      });
      t.equal(pdf.statusCode, 200);
      t.match(pdfText(pdf.rawPayload), /Paid 0\.100000 on \S+\s+by wire \(W-1\)/);
    });
  },
);

import { parse } from 'csv-parse/sync';
import t from 'tap';
import { csvCellText } from '../../src/http/csv.js';
import { newId } from '../../src/platform/ids.js';
import { startTestDaemon } from '../helpers/daemon.js';

const ATTACKS = ['=2+5', '+1', '-1', '@x', '\tcmd', '\r=1', '=HYPERLINK("http://x","y")'];

t.test('a cell that a spreadsheet would run as a formula gets a leading apostrophe', async (t) => {
  for (const a of ATTACKS) t.equal(csvCellText(a, false).text, `'${a}`, JSON.stringify(a));
  t.equal(csvCellText('-1.500000', true).text, '-1.500000', 'a number formatted by the exchange stays a number');
  t.equal(csvCellText('-1+cmd', true).text, "'-1+cmd", 'a numeric column escapes anything but a plain number');
  t.equal(csvCellText('ACME wire', false).text, 'ACME wire');
});

t.test('CDR and transaction CSV exports escape formula cells over HTTPS', async (t) => {
  const d = await startTestDaemon(t);
  const { accounts, keys, topups } = d.modules.services;
  const acct = await accounts.createAccount({ email: 'csv@example.com', password: 'correct horse battery' });
  const key = (await keys.create(acct.id, { mode: 'live' })).secret;

  for (const [i, a] of ATTACKS.entries()) {
    await topups.topup({ accountId: acct.id, amount: '100', source: 'wire', reference: a, postingKey: `csv-${i}` });
    // What a trunk call with a crafted From header and an SMS from a crafted sender leave behind.
    await d.sql`
      insert into cdrs (id, account_id, kind, from_number, to_number, cli, status, hangup_cause, buyer_cost)
      values (${newId()}, ${acct.id}, 'voice', ${a}, '441234567890', ${a}, 'completed', ${a}, '-0.500000')`;
  }

  const tx = await d.https('GET', '/billing/transactions?format=csv', { token: key });
  t.equal(tx.status, 200);
  const txRows = parse(tx.text, { columns: true }) as Record<string, string>[];
  t.same(txRows.map((r) => r['reference']).sort(), ATTACKS.map((a) => `'${a}`).sort(), 'every reference escaped');
  t.ok(
    txRows.every((r) => r['amount'] === '100.000000'),
    'money cells untouched',
  );

  const cdr = await d.https('GET', '/billing/cdrs?format=csv', { token: key });
  t.equal(cdr.status, 200);
  const cdrRows = parse(cdr.text, { columns: true }) as Record<string, string>[];
  t.equal(cdrRows.length, ATTACKS.length);
  for (const col of ['fromNumber', 'cli', 'hangupCause']) {
    t.same(cdrRows.map((r) => r[col]).sort(), ATTACKS.map((a) => `'${a}`).sort(), `${col} escaped`);
  }
  t.ok(
    cdrRows.every((r) => r['buyerCost'] === '-0.500000'),
    'a negative money cell stays a number',
  );
  t.ok(cdrRows.every((r) => r['toNumber'] === '441234567890'));
});

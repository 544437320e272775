import t from 'tap';
import {
  buildReceiptText,
  normaliseSupplierMessageId,
  parseReceiptText,
  sameSupplierMessageId,
  supplierIdKeys,
} from '../../src/messaging/receipt-text.js';

t.test('build and parse round trip', async (t) => {
  const text = buildReceiptText({
    id: 'abc123',
    sub: 1,
    dlvrd: 1,
    submitDate: new Date('2026-11-22T04:05:00Z'),
    doneDate: new Date('2026-11-22T04:06:00Z'),
    stat: 'DELIVRD',
    err: '0',
    text: 'Hello there, this is longer than twenty',
  });
  t.equal(
    text,
    'id:abc123 sub:001 dlvrd:001 submit date:2611220405 done date:2611220406 stat:DELIVRD err:000 text:Hello there, this is',
  );
  const p = parseReceiptText(text);
  t.match(p, { id: 'abc123', sub: 1, dlvrd: 1, stat: 'DELIVRD', err: '000', text: 'Hello there, this is' });
  t.equal(p?.submitDate?.toISOString(), '2026-11-22T04:05:00.000Z');
  t.equal(p?.doneDate?.toISOString(), '2026-11-22T04:06:00.000Z');
});

t.test('parse tolerant forms', async (t) => {
  t.match(
    parseReceiptText(
      'id:0012AB sub:001 dlvrd:000 submit date:2611220405 done date:261122040633 stat:UNDELIV err:034 Text:id:x stat:DELIVRD',
    ),
    {
      id: '0012AB',
      stat: 'UNDELIV',
      err: '034',
      text: 'id:x stat:DELIVRD',
    },
  );
  t.match(parseReceiptText('ID:77 STAT:EXPIRED ERR:001'), { id: '77', stat: 'EXPIRED', dlvrd: 0 });
  t.match(parseReceiptText('id:5 submit_date:2611220405 done_date:2611220406 stat:REJECTD err:0 text:'), {
    stat: 'REJECTD',
    text: '',
  });
  t.equal(parseReceiptText('hello world'), null);
  t.equal(parseReceiptText('id:1 stat:BOGUS'), null);
});

t.test('supplier message id normalisation', async (t) => {
  t.equal(normaliseSupplierMessageId('00ab12\u0000\u0000'), '00ab12', 'NULs trimmed, leading zeros kept');
  t.equal(normaliseSupplierMessageId(Buffer.from([0x20, 0x31, 0x32, 0x0a, 0x00])), '12');
  t.ok(sameSupplierMessageId('1A2B', '6699'), 'hex resp matches decimal receipt');
  t.ok(sameSupplierMessageId('6699', '1a2b'));
  t.ok(sameSupplierMessageId('000123', '000123'));
  t.ok(sameSupplierMessageId('DEADBEEF', 'deadbeef'));
  t.notOk(sameSupplierMessageId('abc', 'abd'));
  t.notOk(sameSupplierMessageId('msg-1', 'msg-2'));
  t.same(supplierIdKeys('msg-1'), ['s:msg-1']);
});

import t from 'tap';
import { isE164, isE164Digits } from '../../src/platform/e164.js';

/** One E.164 rule for the API, SMS and the SIP trunk: 7 to 15 digits, no leading 0; '+' only where the API takes it. */
t.test('the API form takes an optional +, the trunk form digits only', async (t) => {
  t.ok(isE164('+447700900123'));
  t.ok(isE164('447700900123'));
  t.ok(isE164Digits('447700900123'));
  t.notOk(isE164Digits('+447700900123'), 'trunk numbers travel without +');
  t.notOk(isE164('++447700900123'));
});

t.test('length: 7 to 15 digits', async (t) => {
  t.ok(isE164Digits('1234567'));
  t.notOk(isE164Digits('123456'), 'six digits is too short on every plane');
  t.ok(isE164Digits('123456789012345'));
  t.notOk(isE164Digits('1234567890123456'), 'sixteen digits is over the E.164 cap');
  t.notOk(isE164('+1234567890123456'));
});

t.test('no leading zero, digits only', async (t) => {
  t.notOk(isE164Digits('0447700900123'));
  t.notOk(isE164('+0447700900123'));
  t.notOk(isE164Digits('44770090012a'));
  t.notOk(isE164(''));
});

import { randomUUID } from 'node:crypto';
import t from 'tap';
import { createManualClock } from '../../../src/platform/clock.js';
import { createDncService } from '../../../src/modules/dnc/service.js';
import { createTestDatabase } from '../../helpers/db.js';

/**
 * The batch check the dialer and the numbers import ask (`blockedAmong`) against the per-number
 * reading of the list (`isBlocked`, and a plain reading of the entries): whole numbers, prefixes of
 * several lengths (one digit, and as long as a number), another account's entries, and the forms a
 * number may be given in.
 */
t.test('blockedAmong answers what the list says, number by number', async (t) => {
  const { sql } = await createTestDatabase(t);
  const dnc = createDncService({ sql, clock: createManualClock() });
  const [account, other] = [randomUUID(), randomUUID()];
  for (const id of [account, other]) await sql`insert into accounts (id, email) values (${id}, ${`${id}@dnc.test`})`;

  const listed = ['447700900123', '33612345678', '12025550100'];
  const prefixes = ['7', '4420', '3361999', '447911123456789'];
  await dnc.add(account, { numbers: listed.map((n) => `+${n}`), prefixes });
  // Another account's entries block nothing here.
  await dnc.add(other, { numbers: ['447700900999'], prefixes: ['49', '1202'] });

  const underPrefix = (n: string) => prefixes.some((p) => n.startsWith(p));
  const given = [
    '+447700900123', // listed
    '447700900124', // next to a listed one
    '+33612345678', // listed
    '+33619990000', // under 3361999
    '+33619980000', // one digit off that prefix
    '+79161234567', // under the one-digit 7
    '+442079460000', // under 4420
    '+442179460000',
    '+447911123456789', // a 15-digit prefix, equal to the whole number
    '+44791112345678', // shorter than that prefix
    '+447700900999', // the other account's
    '+4915112345678', // under the other account's 49
    '+12025550100', // listed
    '+12025550101', // under the other account's 1202 only
    '0033612345678', // listed, given with 00
    '+44 7700 900123', // listed, given with spaces
  ];
  const digits = (n: string) => n.replace(/[\s]/g, '').replace(/^\+|^00/, '');
  const expected = given.filter((n) => listed.includes(digits(n)) || underPrefix(digits(n)));

  const blocked = await dnc.blockedAmong(account, given);
  t.same([...blocked].sort(), [...expected].sort(), 'the numbers blocked, as they were given');
  for (const n of given) {
    t.equal(await dnc.isBlocked(account, n), expected.includes(n), `${n}: the one-number check agrees`);
  }

  t.same([...(await dnc.blockedAmong(account, []))], [], 'an empty batch');
  t.same([...(await dnc.blockedAmong(account, ['+447700900123', '+447700900123']))], ['+447700900123'], 'repeats once');

  // With no prefix listed, only whole numbers block (the prefix-length scan finds none).
  const plain = randomUUID();
  await sql`insert into accounts (id, email) values (${plain}, ${`${plain}@dnc.test`})`;
  await dnc.add(plain, { numbers: ['+447700900123'] });
  t.same([...(await dnc.blockedAmong(plain, ['+447700900123', '+79161234567']))], ['+447700900123']);

  // A larger batch, the plan a scrub or an import gets: every listed or covered number, nothing else.
  const batch = Array.from({ length: 20_000 }, (_, i) => `+336${String(i * 4999).padStart(8, '0')}`.slice(0, 12));
  const want = batch.filter((n) => listed.includes(digits(n)) || underPrefix(digits(n)));
  const got = await dnc.blockedAmong(account, batch);
  t.same([...got].sort(), [...new Set(want)].sort(), `20,000 numbers: the ${want.length} covered`);
  t.ok(want.length > 0, 'the large batch holds covered numbers');
});

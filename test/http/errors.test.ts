import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { fromSqlState, InsufficientBalanceError, isLedgerRefusal, SqlState } from '../../src/http/errors.js';

t.test("SQLSTATEs map to the spec's errors in one place", async (t) => {
  const balance = fromSqlState(
    SqlState.INSUFFICIENT_BALANCE,
    'Insufficient balance: 0.000000 available, 1.000000 needed',
  );
  t.ok(balance instanceof InsufficientBalanceError && balance.reason === 'balance');
  t.match(balance, {
    code: 'VALIDATION_ERROR',
    status: 400,
    message: 'Insufficient balance: 0.000000 available, 1.000000 needed',
  });
  const cap = fromSqlState(
    SqlState.DAILY_CAP,
    'Insufficient balance: the daily spend cap of this account is reached until the next UTC day',
  );
  t.ok(cap instanceof InsufficientBalanceError && cap.reason === 'daily_cap', 'the cap is told apart by its code');
  t.match(cap, { code: 'VALIDATION_ERROR', status: 400 });
  t.match(fromSqlState(SqlState.INVALID_AMOUNT_OR_STATE, 'Invalid amount: x'), {
    code: 'VALIDATION_ERROR',
    message: 'Invalid amount: x',
  });
  t.match(fromSqlState(SqlState.UNKNOWN_ACCOUNT_OR_HOLD, 'Unknown hold h'), {
    code: 'VALIDATION_ERROR',
    message: 'Unknown hold h',
  });
  t.match(fromSqlState('23505', 'duplicate key value violates unique constraint "x"'), {
    code: 'CONFLICT',
    status: 409,
  });
  t.match(fromSqlState('40P01', 'deadlock detected'), { code: 'CONFLICT' });
  t.match(fromSqlState('22003', 'numeric field overflow'), {
    code: 'INVALID_INPUT',
    message: 'A value cannot be stored (out of range or malformed)',
  });
  t.equal(fromSqlState('42P01', 'relation "x" does not exist'), null, 'anything else stays internal');
  t.ok(isLedgerRefusal({ code: 'SVC04' }));
  t.notOk(isLedgerRefusal({ code: '23505' }));
});

// Errors are recognised by code (SQLSTATE or the registry's), never by the words of their message:
// a reworded message must not change which refusal a caller sees.
t.test("no source file branches on an error message's text", async (t) => {
  const root = fileURLToPath(new URL('../../src/', import.meta.url));
  const files = (readdirSync(root, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts'));
  const pattern = /\.message\.(includes|startsWith|endsWith|match)\(|\.test\([^)]*\.message\b|\.message\s*===/;
  const hits = files.flatMap((f) =>
    readFileSync(join(root, f), 'utf8')
      .split('\n')
      .map((line, i) => (pattern.test(line) ? `${f}:${i + 1}: ${line.trim()}` : null))
      .filter((x): x is string => x !== null),
  );
  t.ok(files.length > 50, `${files.length} files read`);
  t.same(hits, []);
});

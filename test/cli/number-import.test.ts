import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { runSvcctl } from '../../src/cli/svcctl.js';
import { TEST_SCRYPT_COST } from '../helpers/daemon.js';
import { createTestDatabase } from '../helpers/db.js';

const HEADER = 'number,country_code,country,country_prefix,type,city,area_prefix,channels,setup_price,monthly_price';

t.test('svcctl number import: every bad line named, then the stock listed', async (t) => {
  const db = await createTestDatabase(t);
  const config = loadConfig({ overrides: { database: { url: db.url }, auth: { scrypt_cost: TEST_SCRYPT_COST } } });
  const run = async (args: string[]) => {
    let stdout = '';
    let stderr = '';
    const status = await runSvcctl(args, {
      config,
      env: { SVCCTL_LOG: 'silent' },
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
    });
    return { status, stdout, stderr };
  };
  const dir = mkdtempSync(join(tmpdir(), 'svc-number-import-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const account = await run(['account', 'create', '--email', 'stock@example.test', '--password', 'a long password']);
  t.equal(account.status, 0, account.stderr);

  const bad = join(dir, 'bad.csv');
  writeFileSync(
    bad,
    [HEADER, '4930123456,DE,Germany,49,local,Berlin,30,1,0.5,1.0', '4930,DE,Germany,49,local,Berlin,30,1,0.5,x'].join(
      '\n',
    ),
  );
  const refused = await run(['number', 'import', '--email', 'stock@example.test', '--file', bad]);
  t.equal(refused.status, 2);
  t.match(refused.stderr, /1 row\(s\) refused/);
  t.match(refused.stderr, /line 3\.number: /);
  t.match(refused.stderr, /line 3\.monthlyPrice: /);
  t.notMatch(refused.stderr, /line 2/);

  const good = join(dir, 'good.csv');
  writeFileSync(
    good,
    [
      HEADER,
      '4930123456,DE,Germany,49,local,Berlin,30,1,0.5,1.0',
      '4930123457,DE,Germany,49,local,Berlin,30,1,0.5,1.0',
    ].join('\n'),
  );
  const ok = await run(['number', 'import', '--email', 'stock@example.test', '--file', good, '--json']);
  t.equal(ok.status, 0, ok.stderr);
  t.match(JSON.parse(ok.stdout), {
    imported: 2,
    groups: [{ typeId: 'local', city: 'Berlin', areaPrefix: '30', numbers: 2 }],
  });
  const rows = await db.sql<
    { number: string; localPart: string }[]
  >`select number, local_part from did_numbers order by number`;
  t.same(
    rows.map((r) => [r.number, r.localPart]),
    [
      ['4930123456', '123456'],
      ['4930123457', '123457'],
    ],
  );
});

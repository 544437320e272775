import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { runSvcctl } from '../../src/cli/svcctl.js';
import { TEST_SCRYPT_COST } from '../helpers/daemon.js';
import { createTestDatabase } from '../helpers/db.js';

/** svcctl test-line and handset commands, in process, on a migrated database. */
t.test('svcctl test-line and handset add, list, remove', async (t) => {
  const db = await createTestDatabase(t);
  const config = loadConfig({ overrides: { database: { url: db.url }, auth: { scrypt_cost: TEST_SCRYPT_COST } } });
  const run = async (args: string[]) => {
    let stdout = '';
    let stderr = '';
    const status = await runSvcctl([...args, '--json'], {
      config,
      env: { SVCCTL_LOG: 'silent' },
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
    });
    return { status, json: stdout ? JSON.parse(stdout) : null, stderr };
  };

  const added = await run([
    'test-line',
    'add',
    '--number',
    '+44 7700 900001',
    '--country',
    'gb',
    '--line-type',
    'mobile',
  ]);
  t.equal(added.status, 0, added.stderr);
  t.match(added.json, { ok: true, number: '+447700900001', country: 'GB', lineType: 'mobile' });
  const dup = await run(['test-line', 'add', '--number', '+447700900001', '--country', 'GB', '--line-type', 'mobile']);
  t.not(dup.status, 0, 'the same number twice is refused');
  const bad = await run([
    'test-line',
    'add',
    '--number',
    '+447700900002',
    '--country',
    'GB',
    '--line-type',
    'landline',
  ]);
  t.not(bad.status, 0, 'line type fixed or mobile');
  t.same(
    (await run(['test-line', 'list'])).json.lines.map((l: { number: string }) => l.number),
    ['+447700900001'],
  );
  t.equal((await run(['test-line', 'remove', '--line', '+447700900001'])).status, 0);
  t.same((await run(['test-line', 'list'])).json.lines, []);

  const h = await run(['handset', 'add', '--number', '+33612345678', '--country', 'FR', '--label', 'lab phone']);
  t.match(h.json, { ok: true, number: '+33612345678', country: 'FR', label: 'lab phone' });
  t.equal((await run(['handset', 'list'])).json.handsets.length, 1);
  t.equal((await run(['handset', 'remove', '--handset', h.json.id])).status, 0);
  t.not((await run(['handset', 'remove', '--handset', h.json.id])).status, 0, 'already removed');
});

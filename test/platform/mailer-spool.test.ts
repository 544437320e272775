import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import t from 'tap';
import { loadConfig } from '../../src/config/load.js';
import { systemClock } from '../../src/platform/clock.js';
import { createMailer } from '../../src/platform/mailer.js';

/**
 * A reader of the spool directory (an operator's script, a test) lists the .eml files and reads
 * them: one listed must already be the whole message, never an empty or half-written file. The
 * reader here looks between every step of the mailer's writes (it runs on the same event loop).
 */
t.test('a spooled .eml appears whole: a reader never sees a partial message', async (t) => {
  const state = mkdtempSync(join(tmpdir(), 'svc-mail-spool-'));
  t.teardown(() => rmSync(state, { recursive: true, force: true }));
  const config = loadConfig({ overrides: { paths: { state }, log: { level: 'silent' } } });
  const mailer = await createMailer({ config, log: pino({ level: 'silent' }), clock: systemClock });
  t.teardown(() => mailer.close());
  // Large enough to take several writes.
  const content = Buffer.alloc(4 << 20, 'a');
  const dir = join(state, 'mail');
  const partial: string[] = [];
  let reads = 0;
  let sending = true;
  const look = () => {
    let files: string[] = [];
    try {
      files = readdirSync(dir);
    } catch {
      // not made yet
    }
    for (const f of files.filter((f) => f.endsWith('.eml'))) {
      reads += 1;
      const eml = readFileSync(join(dir, f), 'utf8');
      if (!/^Subject: Hello \d+$/m.test(eml) || !eml.trimEnd().endsWith('--'))
        partial.push(`${f}: ${eml.length} bytes`);
    }
    if (sending) setImmediate(look);
  };
  setImmediate(look);
  const sent = await Promise.all(
    Array.from({ length: 4 }, (_, i) =>
      mailer.send({
        to: `reader${i}@example.test`,
        subject: `Hello ${i}`,
        text: 'body',
        attachments: [{ filename: 'big.txt', content, contentType: 'text/plain' }],
      }),
    ),
  );
  sending = false;
  t.ok(reads > 0, 'the reader saw the spooled files');
  t.same(partial, [], 'every .eml listed was complete when read');
  t.same(
    readdirSync(dir).sort(),
    sent.map((s) => s.path!.slice(dir.length + 1)).sort(),
    'only the four messages are left in the directory',
  );
});

import { Writable } from 'node:stream';
import pino from 'pino';
import t from 'tap';
import { createLogger, REDACT } from '../../src/platform/logger.js';

/** Lines a logger writes, with the time taken out (two loggers never log in the same millisecond). */
function capture(): { stream: pino.DestinationStream; lines: () => string[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk.toString('utf8'));
      done();
    },
  });
  return {
    stream: stream as unknown as pino.DestinationStream,
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => l.replace(/"time":\d+,/, '')),
  };
}

const secretError = Object.assign(new Error('refused'), { password: 'hunter2', code: 'E_X' });
const objects: Array<Record<string, unknown>> = [
  // A trunk call's end line: scalars only, now stringified without the redactor.
  {
    callId: 'a84b4c76e66710@pc33',
    callGroupId: 'g1',
    to: '12025*****',
    routeId: null,
    hangupCause: 'caller-bye',
    sipCode: 200,
    durationMs: 1234.5,
    attempts: 1,
    ok: true,
    quoted: 'say "hi"\\\n\u2028',
  },
  { password: 'p1', secret: 's1', apiKey: 'k1', token: 't1', authorization: 'Digest x', refreshToken: 'r1' },
  // `*.password` reaches one level down only: the array's element keeps its field, in both.
  { body: { password: 'p2', sipPassword: 'p3', user: 'u' }, list: [{ password: 'p4' }], n: Number.NaN },
  { req: { headers: { authorization: 'Bearer abc', host: 'h' }, token: 't2' }, headers: { authorization: 'b' } },
  { err: secretError },
  { big: 12n, nothing: undefined, fn: () => 1 },
];

t.test('redaction writes what pino with the same paths writes, secrets censored', async (t) => {
  const ours = capture();
  const reference = capture();
  const a = createLogger('info', ours.stream);
  // pino as configured before: its own redactor for every value.
  const b = pino(
    { level: 'info', redact: { paths: REDACT, censor: '[redacted]' }, base: { svc: 'svc-exchanged' } },
    reference.stream,
  );
  for (const o of objects) {
    a.info(o, 'line');
    b.info(o, 'line');
  }
  const bindings = { callId: 'c1', dialog: { secret: 's3', id: 7 }, token: 't3' };
  a.child(bindings).warn({ sipCode: 503, body: { password: 'p5' } }, 'child line');
  b.child(bindings).warn({ sipCode: 503, body: { password: 'p5' } }, 'child line');
  t.same(ours.lines(), reference.lines());
  const text = ours.lines().join('\n');
  t.equal(ours.lines().length, objects.length + 1);
  for (const secret of [
    'p1',
    's1',
    'k1',
    't1',
    'Digest x',
    'r1',
    'p2',
    'p3',
    'Bearer abc',
    'hunter2',
    's3',
    't3',
    'p5',
  ])
    t.notMatch(text, `"${secret}"`, `${secret} is censored`);
  t.match(text, '"callId":"a84b4c76e66710@pc33"');
  t.match(text, '"durationMs":1234.5');
  // The objects logged are left as they were.
  t.equal((objects[2]?.['body'] as { password: string }).password, 'p2');
});

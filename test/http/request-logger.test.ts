import { Writable } from 'node:stream';
import Fastify, { LogController } from 'fastify';
import pino from 'pino';
import t from 'tap';
import { lazyRequestLogger } from '../../src/http/lazy-request-logger.js';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const log = pino({ level }, stream);
  let children = 0;
  const child = log.child.bind(log);
  log.child = ((...a: Parameters<typeof child>) => {
    children += 1;
    return child(...a);
  }) as typeof log.child;
  return { log, lines, children: () => children };
}

const quietApp = (log: pino.Logger) =>
  Fastify({
    loggerInstance: log,
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyRequestLogger,
  });

t.test("a request's lines carry its id; a request that logs nothing makes no child logger", async (t) => {
  const c = capture('info');
  const app = quietApp(c.log);
  app.get('/quiet', async (req) => {
    req.log.debug('below the level');
    return { ok: true };
  });
  app.get('/loud', async (req) => {
    req.log.warn({ detail: 1 }, 'something to say');
    req.log.info('and more');
    return { ok: true };
  });
  t.teardown(() => app.close());
  await app.ready();
  const atStart = c.children();
  const quiet = await app.inject({ method: 'GET', url: '/quiet' });
  t.equal(quiet.statusCode, 200);
  t.equal(c.children() - atStart, 0, 'no child for a request whose lines are all below the level');
  const loud = await app.inject({ method: 'GET', url: '/loud' });
  t.equal(loud.statusCode, 200);
  t.equal(c.children() - atStart, 1, 'one child, made on the first line and reused');
  const mine = c.lines.filter((l) => l['msg'] === 'something to say' || l['msg'] === 'and more');
  t.equal(mine.length, 2);
  t.ok(
    mine.every((l) => typeof l['reqId'] === 'string' && l['reqId'] === mine[0]!['reqId']),
    'both bound to the request id',
  );
  t.same(mine[0]!['detail'], 1, 'the line keeps its own fields');
});

t.test("a route's own log level gets its child at once", async (t) => {
  const c = capture('warn');
  const app = quietApp(c.log);
  app.get('/chatty', { logLevel: 'debug' }, async (req) => {
    req.log.debug('route-level debug');
    return { ok: true };
  });
  t.teardown(() => app.close());
  t.equal((await app.inject({ method: 'GET', url: '/chatty' })).statusCode, 200);
  t.ok(
    c.lines.some((l) => l['msg'] === 'route-level debug'),
    'the route level applies',
  );
});

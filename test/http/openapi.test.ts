import { Validator } from '@seriousme/openapi-schema-validator';
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';

// Both subtests only read the description: one app serves them.
const h = await buildTestApp(t);

t.test('the OpenAPI description is valid and lists every route with its access', async (t) => {
  const res = await h.app.inject({ method: 'GET', url: '/api/v1/docs/json' });
  t.equal(res.statusCode, 200);
  const doc = res.json();
  const result = await new Validator().validate(doc);
  t.ok(result.valid, `valid OpenAPI: ${JSON.stringify(result.errors ?? '').slice(0, 2000)}`);

  const documented = new Set<string>();
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, { 'x-access'?: unknown }>>)) {
    for (const [method, op] of Object.entries(ops)) {
      documented.add(`${method.toUpperCase()} ${path}`);
      t.ok(op['x-access'], `${method.toUpperCase()} ${path} declares its access`);
    }
  }
  const missing = h.app.apiRoutes.filter((r) => r !== 'GET /docs/json' && !documented.has(r));
  t.same(missing, [], 'every registered route appears in the description');
  t.ok(h.app.apiRoutes.length >= 10);
});

t.test('error codes the registry knows are documented in the description', async (t) => {
  const doc = (await h.app.inject({ method: 'GET', url: '/api/v1/docs/json' })).json();
  t.match(doc.info.description, /X-Idempotency-Key/);
  const { ErrorCodes } = await import('../../src/http/errors.js');
  for (const code of Object.keys(ErrorCodes)) t.match(doc.info.description, `\`${code}\``, `${code} is documented`);
  t.ok(doc.components.schemas, 'shared schemas present');
});

import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
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

/**
 * The spec's operation groups, in its order: "Groups of the platform API with their operation
 * counts" in the Endpoints part of spec/exchange-api-v1.md (kept beside the repository as
 * ../shared/spec/exchange-api-v1.md), plus Switch, which has its own part and no count there.
 * Clients and the coverage tool group operations by these exact names.
 */
const SPEC_GROUPS = [
  'Authentication',
  'Account',
  'API keys',
  'API usage',
  'Webhooks',
  'Marketplace routes',
  'Route checks',
  'Rate sheets',
  'Route blends',
  'Purchases',
  'Offers',
  'Route access',
  'Route messages',
  'Route reports',
  'Markets',
  'Voice and SMS',
  'Verify',
  'Number lookup',
  'Phone numbers',
  'Billing',
  'Top-ups',
  'Payouts',
  'Dialer',
  'AI voice agents',
  'CLI tests',
  'Do not call',
  'Interconnections',
  'Connections',
  'Application Manager',
  'Revenue share numbers',
  'Notifications',
  'Support',
  'Compliance',
  'Onboarding',
  'Status',
  'System',
  'Switch',
] as const;

t.test('every served operation carries exactly one tag, a spec group name', async (t) => {
  const h = await buildTestApp(t);
  const doc = (await h.app.inject({ method: 'GET', url: '/api/v1/docs/json' })).json();
  const groups = new Set<string>(SPEC_GROUPS);
  const off: string[] = [];
  let n = 0;
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, { tags?: unknown }>>)) {
    for (const [method, op] of Object.entries(ops)) {
      n++;
      const tags = op.tags;
      if (!Array.isArray(tags) || tags.length !== 1 || !groups.has(String(tags[0])))
        off.push(`${method.toUpperCase()} ${path} ${JSON.stringify(tags)}`);
    }
  }
  t.ok(n >= 10, `${n} operations checked`);
  t.same(off, [], 'no operation without a tag, with several, or with a name the spec does not group by');
});

// From the checkout's root (the tests' working directory), not this file: make test runs a copy under var/.
const specFile = resolve('../shared/spec/exchange-api-v1.md');
t.test(
  "the group list is the spec's",
  { skip: existsSync(specFile) ? false : `the spec is not beside this checkout (${specFile})` },
  async (t) => {
    const line = readFileSync(specFile, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Groups of the platform API with their operation counts:'));
    t.ok(line, 'the spec states its groups');
    const listed = line!
      .slice(line!.indexOf(':') + 1)
      .split('. Only')[0]!
      .split(',')
      .map((g) => g.trim().replace(/ \d+$/, ''));
    t.same(
      [...SPEC_GROUPS].filter((g) => g !== 'Switch'),
      listed,
    );
  },
);

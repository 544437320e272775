import t from 'tap';
import { Type } from 'typebox';
import type { ApiModule, App } from '../../src/http/app.js';
import { ok } from '../../src/http/envelope.js';
import { bearer, buildTestApp } from '../helpers/app.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const probe: ApiModule = {
  routes(app: App) {
    app.post(
      '/probe/items/:id',
      {
        config: { access: { auth: 'required' } },
        schema: {
          params: Type.Object({ id: Type.String({ format: 'uuid' }) }),
          querystring: Type.Object({ n: Type.Optional(Type.Integer({ minimum: 1, maximum: 5 })) }),
          body: Type.Object(
            { name: Type.String({ minLength: 1, maxLength: 5 }), count: Type.Integer({ minimum: 0 }) },
            { additionalProperties: false },
          ),
        },
      },
      async (req) => ok({ id: req.params.id, name: req.body.name }),
    );
    app.get('/probe/boom', { config: { access: { auth: 'public' } } }, async () => {
      throw new Error('secret internal detail');
    });
  },
};

t.test('envelope, request id and error codes on every kind of response', async (t) => {
  const h = await buildTestApp(t, { extra: [probe] });
  const u = await h.signUp();
  const id = '0190a4b2-0000-7000-8000-000000000001';
  const call = (o: { url?: string; payload?: string; headers?: Record<string, string> }) =>
    h.app.inject({
      method: 'POST',
      url: o.url ?? `/api/v1/probe/items/${id}`,
      headers: { ...bearer(u.session), 'content-type': 'application/json', ...(o.headers ?? {}) },
      ...(o.payload !== undefined ? { payload: o.payload } : {}),
    });

  const good = await call({ payload: JSON.stringify({ name: 'abc', count: 1 }) });
  t.equal(good.statusCode, 200);
  t.same(good.json(), { success: true, data: { id, name: 'abc' } });
  t.match(good.headers['x-request-id'], UUID);

  const details = await call({ payload: JSON.stringify({ name: 'toolongname', count: -1, extra: true }) });
  t.equal(details.statusCode, 400);
  const err = details.json().error;
  t.equal(err.code, 'VALIDATION_ERROR');
  const paths = err.details.map((d: { path: string }) => d.path).sort();
  t.same(paths, ['count', 'extra', 'name'], 'one detail per failing field');
  t.match(details.headers['x-request-id'], UUID);

  const missing = await call({ payload: JSON.stringify({ name: 'a' }) });
  t.same(missing.json().error.details, [{ path: 'count', message: "must have required property 'count'" }]);

  const badId = await call({ url: '/api/v1/probe/items/not-a-uuid', payload: JSON.stringify({ name: 'a', count: 1 }) });
  t.equal(badId.statusCode, 400);
  t.equal(badId.json().error.code, 'INVALID_INPUT');

  const nul = await call({ payload: '{"name":"a\\u0000b","count":1}' });
  t.equal(nul.statusCode, 400);
  t.equal(nul.json().error.code, 'INVALID_INPUT');

  const badJson = await call({ payload: '{"name": ' });
  t.equal(badJson.statusCode, 400);
  t.equal(badJson.json().error.code, 'BAD_REQUEST');
  t.match(badJson.headers['x-request-id'], UUID);

  const badType = await call({ payload: 'name=a', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  t.equal(badType.statusCode, 400);
  t.equal(badType.json().error.code, 'BAD_REQUEST');

  const noAuth = await h.app.inject({ method: 'GET', url: '/api/v1/account' });
  t.equal(noAuth.statusCode, 401);
  t.equal(noAuth.json().error.code, 'UNAUTHORIZED');
  t.match(noAuth.headers['x-request-id'], UUID);

  const badAuth = await h.app.inject({ method: 'GET', url: '/api/v1/account', headers: bearer('svc_live_sk_nope') });
  t.equal(badAuth.statusCode, 401);

  const unknown = await h.app.inject({ method: 'GET', url: '/api/v1/no/such/path' });
  t.equal(unknown.statusCode, 404);
  t.same(unknown.json().error.code, 'NOT_FOUND');
  t.match(unknown.headers['x-request-id'], UUID);

  // A body refused on an unknown path: the parser answers before the not-found handler.
  const unknownBadJson = await call({ url: '/api/v1/no/such/path', payload: '{"name": ' });
  t.equal(unknownBadJson.statusCode, 400);
  t.match(unknownBadJson.headers['x-request-id'], UUID);

  // Refused by the router before any hook runs.
  const badUrl = await call({ url: '/api/v1/probe/items/%zz' });
  t.equal(badUrl.statusCode, 400);
  t.equal(badUrl.json().error.code, 'BAD_REQUEST');
  t.match(badUrl.headers['x-request-id'], UUID);

  const boom = await h.app.inject({ method: 'GET', url: '/api/v1/probe/boom' });
  t.equal(boom.statusCode, 500);
  t.equal(boom.json().error.code, 'INTERNAL_ERROR');
  t.notMatch(boom.body, /secret internal detail/, 'internals never leak');
  t.match(boom.json().error.message, boom.headers['x-request-id'] as string, 'the message quotes the request id');
});

t.test('rate limit: 429 RATE_LIMITED with Retry-After, per credential, in process', async (t) => {
  const h = await buildTestApp(t, { overrides: { limits: { default_per_second: 3 } } });
  const a = await h.signUp();
  const b = await h.signUp();
  const codes: number[] = [];
  let last;
  for (let i = 0; i < 5; i++) {
    last = await h.app.inject({ method: 'GET', url: '/api/v1/account', headers: bearer(a.session) });
    codes.push(last.statusCode);
  }
  t.same(codes.slice(0, 3), [200, 200, 200]);
  t.equal(codes[4], 429);
  t.equal(last!.json().error.code, 'RATE_LIMITED');
  t.match(last!.headers['retry-after'], /^\d+$/);
  t.match(last!.headers['x-request-id'], UUID);
  const other = await h.app.inject({ method: 'GET', url: '/api/v1/account', headers: bearer(b.session) });
  t.equal(other.statusCode, 200, 'each credential has its own window');
});

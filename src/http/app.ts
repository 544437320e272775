import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Server as HttpsServer } from 'node:https';
import AjvCompiler from '@fastify/ajv-compiler';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type onRequestHookHandler,
} from 'fastify';
import type { Logger } from 'pino';
import postgres from 'postgres';
import type { Config } from '../config/schema.js';
import { sha256Hex } from '../platform/ids.js';
import {
  describeAccess,
  hasScope,
  RoleScopes,
  testKeyPolicy,
  type Access,
  type Principal,
  type TeamRole,
} from './access.js';
import type { Authenticator } from './auth.js';
import { ErrorEnvelope } from './envelope.js';
import { headAsGetServer } from './head-as-get.js';
import { lazyRequestLogger } from './lazy-request-logger.js';
import {
  AppError,
  ErrorCodes,
  badRequest,
  forbidden,
  fromSqlState,
  invalidInput,
  unauthorized,
  type ErrorDetail,
} from './errors.js';
import type { IdempotencyStore } from './idempotency.js';
import type { FailedAuthGuard, RateLimit, RateLimiters } from './rate-limit.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route (required on every /api/v1 route). */
    access?: Access;
    /** A limit of this route on top of the default one, per credential. */
    rateLimit?: RateLimit;
    /** Honour `X-Idempotency-Key` (money-moving POSTs). */
    idempotent?: boolean;
  }
  interface FastifyInstance {
    /** `METHOD /path` of every /api/v1 route, path relative to the prefix, OpenAPI style. */
    apiRoutes: string[];
  }
  interface FastifyRequest {
    principal: Principal | null;
    rawBody: string | undefined;
    idempotency: { accountId: string; key: string } | null;
  }
}

export type App = FastifyInstance<
  HttpServer | HttpsServer,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export interface ApiModule {
  /** Registers the module's routes on the /api/v1 scope. */
  routes?(app: App): void | Promise<void>;
}

export interface AppDeps {
  config: Readonly<Config>;
  log: Logger;
  authenticator: Authenticator;
  limiters: RateLimiters;
  /** Failed authentications per source address; without it they are not limited. */
  failedAuth?: FailedAuthGuard;
  idempotency: IdempotencyStore;
  modules: ApiModule[];
  tls: { key: string | Buffer; cert: string | Buffer } | null;
  /** Extra status probes shown by GET /status. */
  version?: string;
}

export const API_PREFIX = '/api/v1';
const IDEMPOTENCY_HEADER = 'x-idempotency-key';

/** The Fastify app with every convention of the spec; no listening here (CONVENTIONS 3). */
export async function buildApp(deps: AppDeps): Promise<App> {
  const { config } = deps;
  const proxies = config.http.trusted_proxies;
  const app = Fastify({
    ...(deps.tls ? { https: { key: deps.tls.key, cert: deps.tls.cert } } : {}),
    loggerInstance: deps.log as FastifyBaseLogger,
    // Completion is logged by the onResponse hook below (4xx info, 5xx error).
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    genReqId: () => randomUUID(),
    childLoggerFactory: lazyRequestLogger,
    bodyLimit: config.http.body_limit_bytes,
    trustProxy: proxies.length ? proxies : false,
    return503OnClosing: true,
    // HEAD is answered as GET by the server instead of a HEAD route per GET route (see head-as-get).
    exposeHeadRoutes: false,
    serverFactory: headAsGetServer(deps.tls),
    clientErrorHandler: answerClientError,
    // The router's own refusals (an over-long path value, a malformed URL) in the envelope too.
    // Routed before any hook runs, so the request id header is set here as well.
    frameworkErrors: (err, req, reply) => {
      markRequest(req, reply);
      void sendError(
        err.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? invalidInput('A value in the path is too long')
          : badRequest('Malformed URL'),
        reply,
      );
    },
    schemaController: {
      compilersFactory: {
        buildValidator: validatorsByPart(config.http.schema_compile === 'first_use'),
        buildSerializer: sharedSerializers(config.http.schema_compile === 'first_use'),
      },
    },
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App;

  app.decorate('apiRoutes', [] as string[]);
  app.decorateRequest('principal', null);
  app.decorateRequest('rawBody', undefined);
  app.decorateRequest('idempotency', null);

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'svc-exchange API',
        version: deps.version ?? '1',
        description:
          'Prepaid wholesale voice and SMS exchange. Every response is `{ success, data }` or ' +
          '`{ success: false, error: { code, message, details? } }` and carries `X-Request-Id`. ' +
          'Money is a string with exactly six decimals. Cursor lists return `data` (array), `nextCursor` and `hasMore` ' +
          'beside it; pass `cursor` (the previous `nextCursor`) and `limit`. ' +
          'Idempotent POSTs accept `X-Idempotency-Key`: the key is held per account for 24 hours; a replay returns the ' +
          'first status and body (header `Idempotent-Replayed: true`), even a stored 5xx; the same key with a different ' +
          'method, path or body answers 422 IDEMPOTENCY_KEY_REUSED; a retry while the first is in flight answers 409 ' +
          'CONFLICT; a request that died mid-way frees its key when its lease (120 s by default) runs out. ' +
          'Requests refused by validation are not recorded against the key.\n\n' +
          'Error codes (HTTP status): ' +
          Object.entries(ErrorCodes)
            .map(([code, status]) => `\`${code}\` (${status})`)
            .join(', ') +
          '.',
      },
      servers: [{ url: API_PREFIX }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
    transform: ({ schema, url }) => ({
      schema: schema as never,
      url: url.startsWith(API_PREFIX) ? url.slice(API_PREFIX.length) || '/' : url,
    }),
  });
  app.addSchema(ErrorEnvelope);

  // Only routes that honour X-Idempotency-Key carry its hooks (onRoute below); the route's hooks
  // run after the global ones, so X-Request-Id is set before the answer is stored.
  const claimIdempotencyKey = async (req: FastifyRequest, reply: FastifyReply) => {
    if (!req.principal) return;
    const key = req.headers[IDEMPOTENCY_HEADER];
    if (typeof key !== 'string' || key === '') return;
    if (key.length > 255) throw invalidInput('X-Idempotency-Key is longer than 255 characters');
    const fingerprint = sha256Hex(`${req.method} ${req.url}\n${req.rawBody ?? ''}`);
    const claim = await deps.idempotency.claim(req.principal.accountId, key, fingerprint);
    if (claim.kind === 'replay') {
      reply.header('idempotent-replayed', 'true').code(claim.status).type('application/json; charset=utf-8');
      return reply.send(claim.body);
    }
    req.idempotency = { accountId: req.principal.accountId, key };
  };
  const completeIdempotencyKey = async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    if (req.idempotency && reply.getHeader('idempotent-replayed') === undefined) {
      const claim = req.idempotency;
      req.idempotency = null;
      await deps.idempotency.complete(
        claim.accountId,
        claim.key,
        reply.statusCode,
        typeof payload === 'string' ? payload : String(payload ?? ''),
      );
    }
    return payload;
  };

  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith(API_PREFIX) || route.method === 'HEAD') {
      route.onRequest = [markRequest, ...[route.onRequest ?? []].flat()];
      return;
    }
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const openapiPath = route.url.slice(API_PREFIX.length).replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    for (const m of methods) app.apiRoutes.push(`${m} ${openapiPath}`);
    const access = route.config?.access;
    if (!access) throw new Error(`route ${String(route.method)} ${route.url} does not declare its access`);
    // Before the route's own hooks, as a global hook would run.
    route.onRequest = [admission(access, route.config?.rateLimit, route.url), ...[route.onRequest ?? []].flat()];
    const schema = (route.schema ??= {}) as Record<string, unknown>;
    const notes = [describeAccess(access, methods[0]!)];
    if (route.config?.rateLimit) {
      notes.push(
        `Rate limit: ${route.config.rateLimit.points} per ${route.config.rateLimit.seconds} s per credential.`,
      );
    }
    if (route.config?.idempotent) {
      notes.push('Idempotent with `X-Idempotency-Key`.');
      route.preHandler = [claimIdempotencyKey, ...[route.preHandler ?? []].flat()];
      route.onSend = [completeIdempotencyKey, ...[route.onSend ?? []].flat()];
    }
    schema['description'] = [schema['description'], notes.join(' ')].filter(Boolean).join('\n\n');
    schema['x-access'] = access;
    if (access.auth !== 'public' && access.auth !== 'session')
      schema['x-test-keys'] = testKeyPolicy(access, methods[0]!);
    if (access.auth !== 'public')
      schema['security'] = access.auth === 'optional' ? [{ bearer: [] }, {}] : [{ bearer: [] }];
    const response = (schema['response'] ??= {}) as Record<string, unknown>;
    response['4xx'] ??= { $ref: 'ErrorEnvelope#' };
    response['5xx'] ??= { $ref: 'ErrorEnvelope#' };
  });

  // JSON only; the raw text is kept for idempotency fingerprints and webhook-style signatures.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = body as string;
    req.rawBody = text;
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(badRequest('Request body is not valid JSON'), undefined);
    }
  });

  const authenticate = async (req: FastifyRequest) => {
    const header = req.headers.authorization;
    if (!deps.failedAuth || header === undefined || header === '')
      return deps.authenticator.authenticate(header, req.ip);
    await deps.failedAuth.check(req.ip);
    try {
      return await deps.authenticator.authenticate(header, req.ip);
    } catch (err) {
      if (err instanceof AppError && err.code === 'UNAUTHORIZED') await deps.failedAuth.failed(req.ip);
      throw err;
    }
  };

  const defaultLimit: RateLimit = { points: config.limits.default_per_second, seconds: 1 };
  // The windows are all in process or all in Redis: the first `consumeNow` tells which.
  const limit = (bucket: string, own: RateLimit | undefined, who: string): boolean =>
    deps.limiters.consumeNow('default', defaultLimit, who) && (!own || deps.limiters.consumeNow(bucket, own, who));
  const limitLater = async (bucket: string, own: RateLimit | undefined, who: string) => {
    await deps.limiters.consume('default', defaultLimit, who);
    if (own) await deps.limiters.consume(bucket, own, who);
  };
  const admit = async (req: FastifyRequest, access: Access, bucket: string, own: RateLimit | undefined) => {
    req.principal = await authenticate(req);
    enforceAccess(access, req.principal, req.method);
    await limitLater(bucket, own, req.principal?.credentialId ?? `ip:${req.ip}`);
  };
  /** The principal when it is known at once; undefined when it must be awaited. */
  const principalNow = (req: FastifyRequest): Principal | null | undefined => {
    const header = req.headers.authorization;
    if (header === undefined || header === '') return null;
    if (deps.failedAuth && !deps.failedAuth.checkNow(req.ip)) return undefined;
    try {
      return deps.authenticator.authenticateNow(header);
    } catch (err) {
      if (err instanceof AppError && err.code === 'UNAUTHORIZED') void deps.failedAuth?.failed(req.ip);
      throw err;
    }
  };
  // Callback style with a synchronous path: a cached API key (or no credential) on a daemon whose
  // windows are in process is admitted without a promise or a microtask turn, which on the API's
  // hottest path cost more than the checks themselves. Anything else is awaited as before. One
  // hook per route, made when the route is added, so a request does not look its route's options
  // up (Fastify builds a new options object on every read of `routeOptions`).
  function admission(access: Access, own: RateLimit | undefined, url: string): onRequestHookHandler {
    return (req, reply, done) => {
      markRequest(req, reply);
      try {
        const bucket = own ? `${req.method} ${url}` : '';
        const now = principalNow(req);
        if (now === undefined) {
          admit(req, access, bucket, own).then(() => done(), done);
          return;
        }
        req.principal = now;
        enforceAccess(access, now, req.method);
        const who = now?.credentialId ?? `ip:${req.ip}`;
        if (limit(bucket, own, who)) return done();
        limitLater(bucket, own, who).then(() => done(), done);
      } catch (err) {
        done(err as Error);
      }
    };
  }

  // Behind the TLS proxy every request is checked first, routed or not; its refusal carries the
  // request id like any other answer.
  if (config.http.tls_mode === 'proxy') {
    app.addHook('onRequest', (req, reply, done) => {
      markRequest(req, reply);
      try {
        requireForwardedHttps(req, proxies);
        done();
      } catch (err) {
        done(err as Error);
      }
    });
  }

  // The hooks every request runs are callback style where they have nothing to wait for: an async
  // hook costs a promise and a microtask turn per request on the API's hottest path.
  app.addHook('preValidation', (req, _reply, done) => {
    // JSON escapes NUL as \u0000; PostgreSQL text cannot store it (spec: INVALID_INPUT).
    if (req.rawBody?.includes('\\u0000') || req.url.includes('%00')) {
      done(invalidInput('Text with a NUL character cannot be stored'));
      return;
    }
    done();
  });

  app.addHook('onResponse', (req, reply, done) => {
    const status = reply.statusCode;
    // Most answers are logged at debug, usually off: the entry is not even built then.
    if (status < 400 && !(req.log as Logger).isLevelEnabled('debug')) return done();
    const entry = {
      requestId: req.id,
      method: req.method,
      url: req.routeOptions.url ?? 'unknown',
      status,
      ms: Math.round(reply.elapsedTime),
    };
    if (status >= 500) req.log.error(entry, 'request failed');
    else if (status >= 400) req.log.info(entry, 'request refused');
    else req.log.debug(entry, 'request done');
    done();
  });

  // Unknown paths and failures before a route's first hook (a body the parser refuses on an
  // unknown path) carry the request id too: no global hook sets it.
  app.setNotFoundHandler((req, reply) => {
    markRequest(req, reply);
    void reply.code(404).send({
      success: false,
      error: { code: 'NOT_FOUND', message: `No route ${req.method} ${req.url.split('?')[0]}` },
    });
  });

  app.setErrorHandler((err, req, reply) => {
    markRequest(req, reply);
    return sendError(toAppError(err, req), reply);
  });

  await app.register(
    async (api) => {
      api.get('/docs/json', { config: { access: { auth: 'public' } }, schema: { hide: true } }, async () =>
        app.swagger(),
      );
      for (const m of deps.modules) await m.routes?.(api as App);
    },
    { prefix: API_PREFIX },
  );
  return app;
}

const AJV_OPTIONS = { allErrors: true, useDefaults: true, removeAdditional: false } as const;

// Fastify calls a compiler with the route's schema definition (schema, method, url, httpPart);
// the package's types describe it as taking the bare schema.
type CompileValidator = (route: {
  httpPart?: string;
  schema?: unknown;
}) => ReturnType<ReturnType<AjvCompiler.BuildCompilerFromPool>>;
type CompileSerializer = ReturnType<ReturnType<typeof SerializerSelector>>;

// Kept by the process, not by one app: a compiled validator or serializer is a function of its
// schema, the shared schemas and the options alone, and a daemon builds one app, but a test
// process builds several (daemons, restarts, a second daemon), which compiled the same schemas
// again, each on Ajv instances of their own that first compiled Ajv's meta-schema.
const ajvPool = AjvCompiler();
const builtValidators = new Map<string, ReturnType<CompileValidator>>();
const serializerSelector = SerializerSelector();
const serializerSets = new Map<string, CompileSerializer>();
const builtSerializers = new Map<string, ReturnType<CompileSerializer>>();

/**
 * JSON bodies have types, so a body is validated as sent: "30" is not 30 and a string is not a
 * one-element array. Query strings, path parameters and headers arrive as text, so only they are
 * coerced to the schema's types.
 */
function validatorsByPart(onFirstUse: boolean): AjvCompiler.BuildCompilerFromPool {
  return (externalSchemas) => {
    // Each Ajv instance compiles its meta-schema when made (tens of ms): made when first needed.
    // Compiling on first use, a schema is not checked against the meta-schema: that check costs
    // about 40 ms a process (the meta-schema's own validator, for the two instances), and our
    // schemas are code that compiling at start (the default, and test/http/schema-compile.test.ts
    // over every route) checks whole.
    const validateSchema = !onFirstUse;
    let strict: CompileValidator | undefined;
    let coercing: CompileValidator | undefined;
    const strictCompiler = () =>
      (strict ??= ajvPool(externalSchemas, {
        customOptions: { ...AJV_OPTIONS, coerceTypes: false, validateSchema },
      }) as unknown as CompileValidator);
    const coercingCompiler = () =>
      (coercing ??= ajvPool(externalSchemas, {
        customOptions: { ...AJV_OPTIONS, coerceTypes: 'array', validateSchema },
      }) as unknown as CompileValidator);
    // Many routes take the same parameters or query (an id, a cursor page): Ajv caches by schema
    // object, so equal schemas of different routes would each be compiled. A validator keeps
    // nothing between calls but the last call's `errors`, read right after it.
    let externals: string | undefined;
    const shared: CompileValidator = (route) => {
      const body = route.httpPart === 'body';
      externals ??= JSON.stringify(externalSchemas);
      const key = `${body ? 'body' : 'text'} ${validateSchema} ${externals} ${JSON.stringify(route.schema)}`;
      let validator = builtValidators.get(key);
      if (!validator) {
        validator = body ? strictCompiler()(route) : coercingCompiler()(route);
        builtValidators.set(key, validator);
      }
      return validator;
    };
    // On first use even the key (the schema as JSON, for ~900 parts at start) waits for a call.
    const byPart: CompileValidator = (route) => (onFirstUse ? validatorOnFirstUse(() => shared(route)) : shared(route));
    return byPart as unknown as ReturnType<AjvCompiler.BuildCompilerFromPool>;
  };
}

/**
 * Every route answers its 4xx and 5xx with the same envelope schema, and fast-json-stringify
 * builds (with an Ajv instance of its own) one serializer per route and status: about a thousand
 * identical builds, most of the daemon's start. Identical schemas within one set of shared
 * schemas (the options are fixed per set) share one serializer; on first use, the look-up too
 * (the schema as JSON, for ~2,500 route statuses at start) waits for the first answer.
 */
function sharedSerializers(onFirstUse: boolean): ReturnType<typeof SerializerSelector> {
  return (externalSchemas, options) => {
    let set: string | undefined;
    const shared: CompileSerializer = (route) => {
      set ??= `${JSON.stringify(externalSchemas)} ${JSON.stringify(options)}`;
      const key = `${set} ${JSON.stringify(route.schema)}`;
      let serializer = builtSerializers.get(key);
      if (!serializer) {
        let compile = serializerSets.get(set);
        if (!compile) {
          compile = serializerSelector(externalSchemas, options);
          serializerSets.set(set, compile);
        }
        serializer = compile(route);
        builtSerializers.set(key, serializer);
      }
      return serializer;
    };
    if (!onFirstUse) return shared;
    return (route) => {
      let real: ReturnType<CompileSerializer> | undefined;
      return (doc) => (real ??= shared(route))(doc);
    };
  };
}

/**
 * An Ajv validator compiled when first called (`[http] schema_compile = "first_use"`). Fastify
 * reads `schemaEnv` (whether to pass the parent object, so a root value can be coerced) just
 * before the call and `errors` just after it: both come from the compiled function.
 */
function validatorOnFirstUse<V extends (...args: never[]) => unknown>(compile: () => V): V {
  let real: V | undefined;
  const get = () => (real ??= compile());
  const validate = (...args: Parameters<V>) => get()(...args);
  Object.defineProperty(validate, 'schemaEnv', { get: () => (get() as unknown as { schemaEnv?: unknown }).schemaEnv });
  Object.defineProperty(validate, 'errors', {
    get: () => (real as unknown as { errors?: unknown } | undefined)?.errors,
  });
  return validate as unknown as V;
}

/** Every answer carries its request id (spec "Conventions"), refusals included. */
function markRequest(req: FastifyRequest, reply: FastifyReply, done?: () => void) {
  reply.header('x-request-id', req.id);
  done?.();
}

function requireForwardedHttps(req: FastifyRequest, proxies: readonly string[]) {
  const peer = req.socket.remoteAddress ?? '';
  if (!proxies.includes(peer) && !proxies.includes(peer.replace(/^::ffff:/, ''))) {
    throw forbidden('Plain HTTP is accepted only from the trusted TLS proxy; use HTTPS');
  }
  if (
    String(req.headers['x-forwarded-proto'] ?? '')
      .split(',')[0]
      ?.trim() !== 'https'
  ) {
    throw badRequest('HTTPS is required');
  }
}

/**
 * Errors Node's HTTP parser meets before any request exists (oversized request line or headers,
 * a request that never finished, malformed HTTP): answered in the error envelope and closed.
 */
function answerClientError(err: Error & { code?: string }, socket: Duplex) {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const e =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new AppError('HEADERS_TOO_LARGE', 'The request line or headers are too large; send long values in the body')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new AppError('REQUEST_TIMEOUT', 'The request did not arrive in time')
        : badRequest('Malformed HTTP request');
  const body = JSON.stringify({ success: false, error: { code: e.code, message: e.message } });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${randomUUID()}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

function enforceAccess(access: Access, p: Principal | null, method: string) {
  // A session signed in with a one-time password may only replace it (and sign out).
  if (p?.mustChangePassword && p.kind === 'session' && !access.whilePasswordChangeRequired) {
    throw new AppError(
      'PASSWORD_CHANGE_REQUIRED',
      'This account must change its password first: POST /auth/change-password',
    );
  }
  if (access.auth === 'public' || (access.auth === 'optional' && !p)) return;
  if (!p) throw unauthorized('A session token or API key is required (Authorization: Bearer ...)');
  if (access.auth === 'session' && p.kind !== 'session') {
    throw forbidden('This operation needs a dashboard session; API keys cannot perform it');
  }
  if (p.member) enforceRole(access, p.member.role, method);
  if (access.scope && !hasScope(p, access.scope)) {
    throw forbidden(`This API key lacks the scope "${access.scope}"`);
  }
  const lacking = access.grants?.find((s) => !hasScope(p, s));
  if (lacking) {
    throw forbidden(`This API key lacks the scope "${lacking}" that the credential this operation makes would carry`);
  }
  if (access.fullAccessOnly && p.kind === 'key' && p.scopes !== null) {
    throw forbidden('This operation needs a full-access API key or a session; scoped keys are refused');
  }
  if (p.mode === 'test' && testKeyPolicy(access, method) === 'refused') {
    throw new AppError('TEST_KEY_NOT_ALLOWED', 'Test keys cannot perform this operation');
  }
}

/**
 * A team member's session: the route lists its role, or names a scope the role holds, or is a
 * read whose credential only personalises the answer (catalogues).
 */
function enforceRole(access: Access, role: TeamRole, method: string) {
  if (access.roles) {
    if (access.roles.includes(role)) return;
  } else if (access.scope ? RoleScopes[role].has(access.scope) : access.auth === 'optional' && method === 'GET') return;
  throw forbidden(`A team member with the role "${role}" cannot perform this operation`);
}

interface AjvError {
  instancePath: string;
  schemaPath: string;
  message?: string;
  keyword: string;
  params: Record<string, unknown>;
}

interface FastifyLikeError extends Error {
  code?: string;
  statusCode?: number;
  validation?: AjvError[];
  validationContext?: string;
}

/** Every failure becomes a coded AppError; internals never reach the client. */
export function toAppError(err: unknown, req: FastifyRequest): AppError {
  if (err instanceof AppError) return err;
  const e = err as FastifyLikeError;
  if (e.validation) return fromValidation(e);
  if (err instanceof postgres.PostgresError) {
    const mapped = fromSqlState(err.code, err.message);
    if (mapped) return mapped;
  }
  if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return badRequest('Unsupported Content-Type; send application/json');
  if (e.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return badRequest('Request body is empty');
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    // No limit named: a route's own parser (greeting uploads) has a limit the route options do not show.
    return new AppError('PAYLOAD_TOO_LARGE', 'Request body is too large');
  if (e.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH' || e.code === 'FST_ERR_CTP_INVALID_TYPE')
    return badRequest('Malformed request');
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500)
    return badRequest(e.message || 'Bad request');
  req.log.error({ err, requestId: req.id }, 'unhandled error');
  return new AppError('INTERNAL_ERROR', `Internal error; quote request id ${req.id} to support`);
}

function fromValidation(e: FastifyLikeError): AppError {
  const where = e.validationContext ?? 'body';
  const errors = e.validation ?? [];
  const details = validationDetails(errors, where);
  // A malformed id or number in the path or query string "passed validation but cannot be stored".
  if (
    (where === 'params' || where === 'querystring') &&
    errors.every(
      (v) => v.keyword === 'format' || v.keyword === 'type' || v.keyword === 'minimum' || v.keyword === 'maximum',
    )
  ) {
    if (errors.some((v) => v.keyword === 'format' && v.params['format'] === 'uuid')) {
      return invalidInput('Malformed id: expected a UUID', details);
    }
  }
  return new AppError('VALIDATION_ERROR', 'Request validation failed', details);
}

const UNION_KEYWORDS = new Set(['anyOf', 'oneOf']);

/**
 * One detail per failing field (spec "Errors"). A union (an enum of literals, or alternative
 * object shapes) fails in every alternative: those are folded into one detail at the union's
 * field, naming the allowed values when they are literals.
 */
export function validationDetails(errors: readonly AjvError[], where: string): ErrorDetail[] {
  const unions = errors.filter((v) => UNION_KEYWORDS.has(v.keyword));
  const inside = (v: AjvError, u: AjvError) => v !== u && v.schemaPath.startsWith(`${u.schemaPath}/`);
  const byPath = new Map<string, string>();
  for (const v of errors) {
    if (unions.some((u) => inside(v, u))) continue;
    const base = v.instancePath.replace(/^\//, '').replaceAll('/', '.');
    const missing = v.keyword === 'required' ? String(v.params['missingProperty'] ?? '') : '';
    const extra = v.keyword === 'additionalProperties' ? String(v.params['additionalProperty'] ?? '') : '';
    const path = [base, missing || extra].filter(Boolean).join('.') || where;
    if (byPath.has(path)) continue;
    let message = extra ? 'unknown field' : (v.message ?? 'is invalid');
    if (UNION_KEYWORDS.has(v.keyword)) {
      const branches = errors.filter((b) => inside(b, v));
      const allowed = branches
        .filter((b) => b.keyword === 'const' && b.instancePath === v.instancePath)
        .map((b) => JSON.stringify(b.params['allowedValue']));
      if (allowed.length > 0 && allowed.length === branches.length) {
        message = `must be one of ${allowed.join(', ')}`;
      } else {
        // Alternative forms of one value (a number or a decimal string, or null): name each.
        const forms = [
          ...new Set(
            branches
              .filter((b) => !UNION_KEYWORDS.has(b.keyword) && b.instancePath === v.instancePath)
              .map((b) => b.message ?? ''),
          ),
        ].filter(Boolean);
        message = forms.length > 0 ? forms.join(' or ') : 'matches none of the allowed forms';
      }
    }
    byPath.set(path, message);
  }
  return [...byPath].map(([path, message]) => ({ path, message }));
}

export function sendError(err: AppError, reply: FastifyReply) {
  if (err.headers) for (const [k, v] of Object.entries(err.headers)) void reply.header(k, v);
  const error: Record<string, unknown> = { code: err.code, message: err.message };
  if (err.details !== undefined) error['details'] = err.details;
  return reply.code(err.status).type('application/json; charset=utf-8').send({ success: false, error });
}

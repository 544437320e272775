import { Type, type Static } from 'typebox';
import { validationError, type ErrorDetail } from '../../../http/errors.js';

/** Spec "Switch": at most 20 values in a comma list or a search. */
const MAX_LIST = 20;
export const MAX_LIMIT = 500;

const Flag = (description: string) =>
  Type.Optional(
    Type.Union([Type.Boolean(), Type.Literal('true'), Type.Literal('false')], {
      description: `${description} (\`true\`, \`false\`)`,
    }),
  );

/**
 * The record filters of `GET /switch/cdrs`, taken as they are by `POST /switch/cdrs/exports`
 * (spec "Switch", call records). Query strings are coerced to these types; a JSON body is not.
 */
export const RecordFilterFields = {
  from: Type.Optional(Type.String({ format: 'date-time', description: 'inclusive; default 7 days before `to`' })),
  to: Type.Optional(Type.String({ format: 'date-time', description: 'exclusive; default now' })),
  kind: Type.Optional(Type.Union([Type.Literal('voice'), Type.Literal('sms')])),
  direction: Type.Optional(Type.Union([Type.Literal('outbound'), Type.Literal('inbound')])),
  status: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'the record status, as listed' })),
  subAccountId: Type.Optional(Type.String({ format: 'uuid', description: 'the customer (sub-account)' })),
  customerTrunkId: Type.Optional(
    Type.String({
      format: 'uuid',
      description: "the customer's trunk: a sub-account's SIP credential is its trunk, so this is its id",
    }),
  ),
  vendorTrunkId: Type.Optional(Type.String({ format: 'uuid', description: 'the route the leg went out on' })),
  supplierTrunkMatch: Type.Optional(
    Type.Union([Type.Literal('selected'), Type.Literal('attempted'), Type.Literal('either')], {
      description:
        '`selected` (default): the leg went out on `vendorTrunkId`; `attempted`: some leg of the call tried it (every ' +
        'leg of such calls is listed); `either`: one or the other',
    }),
  ),
  routeGroupId: Type.Optional(
    Type.String({ format: 'uuid', description: 'records keep no route group: matches none' }),
  ),
  countryPrefix: Type.Optional(
    Type.String({ pattern: '^\\+?[0-9]{1,4}$', description: 'calling code of the dialled number' }),
  ),
  destination: Type.Optional(Type.String({ pattern: '^\\+?[0-9]{1,15}$', description: 'dialled number prefix' })),
  destinationName: Type.Optional(
    Type.String({ minLength: 1, maxLength: 100, description: "route name (part of it) or the route's country code" }),
  ),
  answeredOnly: Flag('voice legs that were answered'),
  answeredState: Type.Optional(Type.Union([Type.Literal('answered'), Type.Literal('unanswered')])),
  mediaMode: Type.Optional(Type.Union([Type.Literal('direct'), Type.Literal('proxy')])),
  sipCode: Type.Optional(Type.Integer({ minimum: 100, maximum: 699 })),
  sipCodes: Type.Optional(Type.String({ maxLength: 200, description: `comma list of SIP codes, at most ${MAX_LIST}` })),
  q850Cause: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 127, description: 'records keep no Q.850 cause: matches none' }),
  ),
  q850Causes: Type.Optional(
    Type.String({ maxLength: 200, description: `comma list, at most ${MAX_LIST}; matches none` }),
  ),
  hangupCause: Type.Optional(Type.String({ minLength: 1, maxLength: 60 })),
  durationMin: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400, description: 'seconds' })),
  durationMax: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400, description: 'seconds' })),
  pddMinMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 600_000 })),
  pddMaxMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 600_000 })),
  codec: Type.Optional(
    Type.String({ minLength: 1, maxLength: 40, description: 'records keep no codec: matches none' }),
  ),
  releaseParty: Type.Optional(
    Type.Union([Type.Literal('caller'), Type.Literal('callee'), Type.Literal('system')], {
      description: 'who ended the call, read from the hang-up cause',
    }),
  ),
  ip: Type.Optional(Type.String({ minLength: 2, maxLength: 45, description: 'records keep no address: matches none' })),
  ratingState: Type.Optional(
    Type.Union([Type.Literal('rated'), Type.Literal('unrated')], { description: 'unrated: billed with no rate' }),
  ),
  negativeMarginOnly: Flag('records that earned less than they cost'),
  riskMin: Type.Optional(
    Type.Number({ minimum: 0, maximum: 100, description: 'records keep no risk score: matches none' }),
  ),
  attestation: Type.Optional(
    Type.Union([Type.Literal('A'), Type.Literal('B'), Type.Literal('C')], {
      description: 'records keep no STIR/SHAKEN attestation: matches none',
    }),
  ),
  search: Type.Optional(
    Type.String({ maxLength: 2000, description: `up to ${MAX_LIST} values separated by comma, semicolon or newline` }),
  ),
  searchField: Type.Optional(
    Type.Union(
      [Type.Literal('any'), Type.Literal('from'), Type.Literal('to'), Type.Literal('cli'), Type.Literal('callId')],
      {
        description: '`any` (default): calling number, dialled number, caller ID or call id',
      },
    ),
  ),
  searchMatch: Type.Optional(
    Type.Union([Type.Literal('any'), Type.Literal('all')], { description: '`any` (default): one value matches' }),
  ),
  sortBy: Type.Optional(
    Type.Union(
      [
        Type.Literal('createdAt'),
        Type.Literal('durationSeconds'),
        Type.Literal('pddMs'),
        Type.Literal('revenue'),
        Type.Literal('sipCode'),
      ],
      { description: 'default `createdAt`' },
    ),
  ),
  sortDir: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')], { description: 'default `desc`' })),
  includeProbes: Flag('platform probes (route checks, health calls), hidden by default'),
};

export const RecordQuery = Type.Object(
  {
    ...RecordFilterFields,
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: 50 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 })),
  },
  { additionalProperties: false },
);
export type RecordQuery = Static<typeof RecordQuery>;

export const ExportBody = Type.Object(RecordFilterFields, { additionalProperties: false });
export type ExportBody = Static<typeof ExportBody>;

/** The filters as the repo applies them: validated, parsed, defaults filled. */
export interface RecordFilter {
  from: Date;
  to: Date;
  kind?: 'voice' | 'sms' | undefined;
  direction?: 'outbound' | 'inbound' | undefined;
  status?: string | undefined;
  subAccountId?: string | undefined;
  vendorTrunkId?: string | undefined;
  supplierTrunkMatch: 'selected' | 'attempted' | 'either';
  /** A filter on something records do not keep: nothing matches. */
  noData: string[];
  numberPrefixes: string[];
  destinationName?: string | undefined;
  answered?: boolean | undefined;
  mediaMode?: 'direct' | 'proxy' | undefined;
  sipCodes?: number[] | undefined;
  hangupCause?: string | undefined;
  durationMin?: number | undefined;
  durationMax?: number | undefined;
  pddMinMs?: number | undefined;
  pddMaxMs?: number | undefined;
  releaseParty?: 'caller' | 'callee' | 'system' | undefined;
  ratingState?: 'rated' | 'unrated' | undefined;
  negativeMarginOnly: boolean;
  search: string[];
  searchField: 'any' | 'from' | 'to' | 'cli' | 'callId';
  searchMatch: 'any' | 'all';
  sortBy: 'createdAt' | 'durationSeconds' | 'pddMs' | 'revenue' | 'sipCode';
  sortDir: 'asc' | 'desc';
  includeProbes: boolean;
}

const DEFAULT_DAYS = 7;
const flag = (v: boolean | 'true' | 'false' | undefined): boolean | undefined =>
  v === undefined ? undefined : v === true || v === 'true';

function list(raw: string, path: string, details: ErrorDetail[], max: number): number[] {
  const parts = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (parts.length > MAX_LIST) details.push({ path, message: `at most ${MAX_LIST} values` });
  const out: number[] = [];
  for (const p of parts) {
    const n = Number(p);
    if (!/^\d{1,3}$/.test(p) || n > max) details.push({ path, message: `"${p}" is not a code from 0 to ${max}` });
    else out.push(n);
  }
  return out;
}

/** Checks and parses the filters; VALIDATION_ERROR with every problem at once. */
export function parseFilter(q: ExportBody, now: Date): RecordFilter {
  const details: ErrorDetail[] = [];
  const to = q.to ? new Date(q.to) : now;
  const from = q.from ? new Date(q.from) : new Date(to.getTime() - DEFAULT_DAYS * 86_400_000);
  if (from >= to) details.push({ path: 'from', message: 'must be before "to"' });
  const pair = (min: number | undefined, max: number | undefined, path: string) => {
    if (min !== undefined && max !== undefined && min > max)
      details.push({ path, message: 'must not exceed the minimum' });
  };
  pair(q.durationMin, q.durationMax, 'durationMax');
  pair(q.pddMinMs, q.pddMaxMs, 'pddMaxMs');
  const sipCodes = [
    ...(q.sipCode !== undefined ? [q.sipCode] : []),
    ...(q.sipCodes !== undefined ? list(q.sipCodes, 'sipCodes', details, 699) : []),
  ];
  if (q.q850Causes !== undefined) list(q.q850Causes, 'q850Causes', details, 127);
  const search = (q.search ?? '')
    .split(/[,;\n]/)
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (search.length > MAX_LIST) details.push({ path: 'search', message: `at most ${MAX_LIST} values` });
  if (search.some((s) => s.length > 64))
    details.push({ path: 'search', message: 'a value is longer than 64 characters' });
  const answeredOnly = flag(q.answeredOnly);
  if (answeredOnly && q.answeredState === 'unanswered')
    details.push({ path: 'answeredState', message: 'contradicts answeredOnly' });
  if (details.length) throw validationError(details);

  const noData: string[] = [];
  for (const k of ['routeGroupId', 'q850Cause', 'q850Causes', 'codec', 'ip', 'riskMin', 'attestation'] as const)
    if (q[k] !== undefined) noData.push(k);
  const digits = (s: string | undefined) => (s === undefined ? [] : [s.replace(/^\+/, '')]);
  const answered = answeredOnly ? true : q.answeredState ? q.answeredState === 'answered' : undefined;
  return {
    from,
    to,
    kind: q.kind,
    direction: q.direction,
    status: q.status,
    // A sub-account's SIP credential is its trunk: both name the same account.
    subAccountId: q.subAccountId ?? q.customerTrunkId,
    vendorTrunkId: q.vendorTrunkId,
    supplierTrunkMatch: q.supplierTrunkMatch ?? 'selected',
    noData:
      q.subAccountId && q.customerTrunkId && q.subAccountId !== q.customerTrunkId
        ? [...noData, 'customerTrunkId']
        : noData,
    numberPrefixes: [...digits(q.countryPrefix), ...digits(q.destination)],
    destinationName: q.destinationName,
    answered,
    mediaMode: q.mediaMode,
    sipCodes: sipCodes.length ? sipCodes : undefined,
    hangupCause: q.hangupCause,
    durationMin: q.durationMin,
    durationMax: q.durationMax,
    pddMinMs: q.pddMinMs,
    pddMaxMs: q.pddMaxMs,
    releaseParty: q.releaseParty,
    ratingState: q.ratingState,
    negativeMarginOnly: flag(q.negativeMarginOnly) ?? false,
    search,
    searchField: q.searchField ?? 'any',
    searchMatch: q.searchMatch ?? 'any',
    sortBy: q.sortBy ?? 'createdAt',
    sortDir: q.sortDir ?? 'desc',
    includeProbes: flag(q.includeProbes) ?? false,
  };
}

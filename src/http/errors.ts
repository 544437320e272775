/**
 * The one registry of public error codes (spec "Errors"). Every failure that reaches a
 * client is an AppError built from here; the error handler serialises it into the envelope.
 */
export const ErrorCodes = {
  VALIDATION_ERROR: 400,
  INVALID_INPUT: 400,
  NO_SESSION: 400,
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  MISSING_TOKEN: 401,
  SWITCH_SUBSCRIPTION_REQUIRED: 402,
  FORBIDDEN: 403,
  // A number purchase where the catalogue group needs verified identity, or a payout (spec "Errors").
  KYC_REQUIRED: 403,
  TEST_KEY_NOT_ALLOWED: 403,
  PASSWORD_CHANGE_REQUIRED: 403,
  NOT_FOUND: 404,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  // The spec's table names no code for an oversize body ("the complete code list … not shown"): 413 keeps it
  // apart from malformed input, so a client knows to split or shrink rather than fix the JSON.
  PAYLOAD_TOO_LARGE: 413,
  IDEMPOTENCY_KEY_REUSED: 422,
  RATE_LIMITED: 429,
  TOO_MANY_EXPORTS: 429,
  HEADERS_TOO_LARGE: 431,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  // Switch invoicing (spec names the codes, not their status): what the preview reviewed has changed;
  // the period holds usage no rate priced, and the request did not exclude it.
  INVOICE_REVIEW_STALE: 409,
  INVOICE_UNRATED_USAGE: 422,
  // A write carrying a version older than the record's (spec "Errors" names the code, not its status):
  // 409, as any change clashing with the current state.
  STALE_WRITE: 409,
} as const;

export type ErrorCode = keyof typeof ErrorCodes;

export interface ErrorDetail {
  path: string;
  message: string;
}

export class AppError extends Error {
  override name = 'AppError';
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[] | Record<string, unknown>,
    /** Extra response headers, e.g. Retry-After. */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.status = ErrorCodes[code];
  }
}

export const validationError = (details: ErrorDetail[], message = 'Request validation failed') =>
  new AppError('VALIDATION_ERROR', message, details);
/** A business-rule refusal: 400 VALIDATION_ERROR with only a message (spec "Errors"). */
export const ruleError = (message: string) => new AppError('VALIDATION_ERROR', message);
export const invalidInput = (message: string, details?: ErrorDetail[]) =>
  new AppError('INVALID_INPUT', message, details);
export const badRequest = (message: string) => new AppError('BAD_REQUEST', message);
export const unauthorized = (message = 'Missing or invalid credential') => new AppError('UNAUTHORIZED', message);
export const forbidden = (message: string) => new AppError('FORBIDDEN', message);
export const notFound = (what = 'Resource') => new AppError('NOT_FOUND', `${what} not found`);
export const conflict = (message: string) => new AppError('CONFLICT', message);
/**
 * A refusal for want of money. The spec answers it as 400 VALIDATION_ERROR with a message starting
 * "Insufficient balance"; `reason` lets the SIP and SMPP planes tell a balance too small from a
 * daily cap without reading the message.
 */
export class InsufficientBalanceError extends AppError {
  constructor(
    message: string,
    readonly reason: 'balance' | 'daily_cap',
  ) {
    super('VALIDATION_ERROR', message);
  }
}
export const insufficientBalance = (message = 'Insufficient balance') =>
  new InsufficientBalanceError(message, 'balance');
export const rateLimited = (retryAfterSeconds: number) =>
  new AppError('RATE_LIMITED', `Rate limit exceeded; retry after ${retryAfterSeconds} seconds`, undefined, {
    'retry-after': String(retryAfterSeconds),
  });
export const serviceUnavailable = (message: string) => new AppError('SERVICE_UNAVAILABLE', message);

/**
 * SQLSTATEs recognised by code: the ledger functions' own (raised with `using errcode`,
 * migrations 010 and 115) and the server's that a client may learn about.
 */
export const SqlState = {
  INSUFFICIENT_BALANCE: 'SVC01',
  INVALID_AMOUNT_OR_STATE: 'SVC02',
  UNKNOWN_ACCOUNT_OR_HOLD: 'SVC03',
  DAILY_CAP: 'SVC04',
  UNIQUE_VIOLATION: '23505',
  FOREIGN_KEY_VIOLATION: '23503',
  SERIALIZATION_FAILURE: '40001',
  DEADLOCK_DETECTED: '40P01',
} as const;

// Values that passed validation but cannot be stored (spec: INVALID_INPUT).
const UNSTORABLE = new Set(['22P02', '22003', '22021', '22001', '22008', '22007', '54000']);

/**
 * The public error of a database error, by SQLSTATE alone; null for one the client must not see
 * (the caller logs it and answers INTERNAL_ERROR). The ledger's SVC01 and SVC04 messages start
 * with "Insufficient balance", as the spec words that refusal.
 */
export function fromSqlState(code: string, message: string): AppError | null {
  switch (code) {
    case SqlState.UNIQUE_VIOLATION:
      return conflict('A resource with these values already exists');
    case SqlState.INSUFFICIENT_BALANCE:
      return new InsufficientBalanceError(message, 'balance');
    case SqlState.DAILY_CAP:
      return new InsufficientBalanceError(message, 'daily_cap');
    case SqlState.INVALID_AMOUNT_OR_STATE:
    case SqlState.UNKNOWN_ACCOUNT_OR_HOLD:
      return ruleError(message);
    case SqlState.SERIALIZATION_FAILURE:
    case SqlState.DEADLOCK_DETECTED:
      return conflict('A concurrent request changed the same data; retry');
    default:
      return UNSTORABLE.has(code) ? invalidInput('A value cannot be stored (out of range or malformed)') : null;
  }
}

/** The ledger's own refusals (SVC01 to SVC04), which reach a client as 400 VALIDATION_ERROR. */
export function isLedgerRefusal(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (
    code === SqlState.INSUFFICIENT_BALANCE ||
    code === SqlState.DAILY_CAP ||
    code === SqlState.INVALID_AMOUNT_OR_STATE ||
    code === SqlState.UNKNOWN_ACCOUNT_OR_HOLD
  );
}

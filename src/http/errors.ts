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
  TEST_KEY_NOT_ALLOWED: 403,
  PASSWORD_CHANGE_REQUIRED: 403,
  NOT_FOUND: 404,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  IDEMPOTENCY_KEY_REUSED: 422,
  RATE_LIMITED: 429,
  HEADERS_TOO_LARGE: 431,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
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
export const invalidInput = (message: string, details?: ErrorDetail[]) => new AppError('INVALID_INPUT', message, details);
export const badRequest = (message: string) => new AppError('BAD_REQUEST', message);
export const unauthorized = (message = 'Missing or invalid credential') => new AppError('UNAUTHORIZED', message);
export const forbidden = (message: string) => new AppError('FORBIDDEN', message);
export const notFound = (what = 'Resource') => new AppError('NOT_FOUND', `${what} not found`);
export const conflict = (message: string) => new AppError('CONFLICT', message);
export const insufficientBalance = (message = 'Insufficient balance') => new AppError('VALIDATION_ERROR', message);
export const rateLimited = (retryAfterSeconds: number) =>
  new AppError('RATE_LIMITED', `Rate limit exceeded; retry after ${retryAfterSeconds} seconds`, undefined, {
    'retry-after': String(retryAfterSeconds),
  });
export const serviceUnavailable = (message: string) => new AppError('SERVICE_UNAVAILABLE', message);

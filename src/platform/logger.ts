import pino, { type Logger } from 'pino';

/** Paths never logged: credentials, secrets, passwords and message bodies. */
export const REDACT = [
  'password',
  '*.password',
  'secret',
  '*.secret',
  'apiKey',
  '*.apiKey',
  'token',
  '*.token',
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  '*.authorization',
  'refreshToken',
  '*.refreshToken',
  'sipPassword',
  '*.sipPassword',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACT, censor: '[redacted]' }, base: { svc: 'svc-exchanged' } }, destination);
}

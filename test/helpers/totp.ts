import { Secret, TOTP } from 'otpauth';
import type { Clock } from '../../src/platform/clock.js';

/** The authenticator app's current code for a base32 secret, at the test clock's time (RFC 6238, SHA-1, 6 digits, 30 s). */
export const totpCode = (secret: string, clock: Clock) =>
  TOTP.generate({
    secret: Secret.fromBase32(secret),
    algorithm: 'SHA1',
    digits: 6,
    period: 30,
    timestamp: clock.now().getTime(),
  });

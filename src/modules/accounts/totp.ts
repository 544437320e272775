import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';

const PERIOD = 30;
const DIGITS = 6;

/**
 * TOTP (RFC 6238: SHA-1, 6 digits, 30 s, what every authenticator app reads from an otpauth URI)
 * with the secret sealed at rest under a key derived from the server's signing secret.
 */
export function createTotpKit(serverSecret: Uint8Array, issuer: string) {
  const key = Buffer.from(hkdfSync('sha256', serverSecret, Buffer.alloc(0), 'svc-exchange totp secret seal', 32));

  const totpFor = (secretBase32: string, label: string) =>
    new TOTP({
      issuer,
      label,
      algorithm: 'SHA1',
      digits: DIGITS,
      period: PERIOD,
      secret: Secret.fromBase32(secretBase32),
    });

  return {
    /** A new random secret (160 bits, base32) and the otpauth URI an authenticator app scans. */
    newSecret(label: string): { secret: string; uri: string } {
      const secret = new Secret({ size: 20 }).base32;
      return { secret, uri: totpFor(secret, label).toString() };
    },

    /**
     * The 30-second step a code belongs to, within one step of now either way (clock drift), or
     * null. The caller stores the step so a code is never accepted twice.
     */
    stepOf(secretBase32: string, code: string, now: Date): number | null {
      if (!/^\d{6}$/.test(code)) return null;
      const timestamp = now.getTime();
      const delta = TOTP.validate({
        token: code,
        secret: Secret.fromBase32(secretBase32),
        algorithm: 'SHA1',
        digits: DIGITS,
        period: PERIOD,
        timestamp,
        window: 1,
      });
      return delta === null ? null : Math.floor(timestamp / 1000 / PERIOD) + delta;
    },

    seal(secretBase32: string): string {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([cipher.update(secretBase32, 'utf8'), cipher.final()]);
      return [
        'v1',
        iv.toString('base64url'),
        cipher.getAuthTag().toString('base64url'),
        body.toString('base64url'),
      ].join('.');
    },

    unseal(sealed: string): string {
      const [v, iv, tag, body] = sealed.split('.');
      if (v !== 'v1' || !iv || !tag || !body) throw new Error('unknown sealed TOTP secret format');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}

export type TotpKit = ReturnType<typeof createTotpKit>;

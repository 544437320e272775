import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Supplier trunk passwords (SIP digest, SMPP bind) sealed at rest the way TOTP secrets are
 * (`accounts/totp.ts`): AES-256-GCM under a key derived with HKDF from the server's signing secret,
 * stored as `v1.<iv>.<tag>.<body>` (base64url). A distinct HKDF label keeps the two keys apart.
 */
export function createSecretSealer(loadServerSecret: () => Promise<Uint8Array>) {
  let key: Promise<Buffer> | null = null;
  const keyOf = () =>
    (key ??= loadServerSecret().then((s) =>
      Buffer.from(hkdfSync('sha256', s, Buffer.alloc(0), 'svc-exchange switch trunk secret seal', 32)),
    ));

  return {
    async seal(clear: string): Promise<string> {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', await keyOf(), iv);
      const sealed = Buffer.concat([cipher.update(clear, 'utf8'), cipher.final()]);
      return ['v1', iv, cipher.getAuthTag(), sealed]
        .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
        .join('.');
    },

    async unseal(stored: string): Promise<string> {
      const parts = stored.split('.');
      if (parts.length !== 4 || parts[0] !== 'v1') throw new Error('unknown sealed trunk secret format');
      const [, iv, tag, body] = parts.map((p) => Buffer.from(p, 'base64url'));
      const decipher = createDecipheriv('aes-256-gcm', await keyOf(), iv!);
      decipher.setAuthTag(tag!);
      return Buffer.concat([decipher.update(body!), decipher.final()]).toString('utf8');
    },
  };
}

export type SecretSealer = ReturnType<typeof createSecretSealer>;

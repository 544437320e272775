/**
 * Who is calling: a whitelisted source address, else an RFC 2617 digest over the fixed realm (spec
 * "Authentication", SIP trunk paragraph). Answers the challenge or refusal itself.
 */
import { getHeader, type SipRequest } from '../message.js';
import type { ServerTransaction } from '../transaction.js';
import type { SipPeer } from '../transport.js';
import type { B2buaContext, CallAttribution } from './types.js';

export async function authenticate(
  ctx: B2buaContext,
  req: SipRequest,
  tx: ServerTransaction,
  source: SipPeer,
  tag: string,
): Promise<CallAttribution | undefined> {
  const byIp = await ctx.policy.resolveByIp(source.host);
  if (byIp) return { accountId: byIp.accountId, via: 'ip' };
  const challenge = (c?: { nonce?: string; stale?: boolean }): void => {
    tx.reply(401, 'Unauthorized', {
      toTag: tag,
      headers: [{ name: 'WWW-Authenticate', value: ctx.digest.challenge(c) }],
    });
  };
  const creds = ctx.digest.parseCredentials(getHeader(req, 'authorization') ?? getHeader(req, 'proxy-authorization'));
  if (!creds) return void challenge();
  const username = creds.params['username'] ?? '';
  const user = username ? await ctx.policy.lookupSipUser(username) : null;
  if (!user) {
    tx.reply(403, 'Forbidden', { toTag: tag });
    return undefined;
  }
  const verdict = ctx.digest.check(creds, req.method, user.ha1);
  switch (verdict.result) {
    case 'ok': {
      const a: CallAttribution = { accountId: user.accountId, via: 'digest', username };
      if (user.subAccountId !== undefined) a.subAccountId = user.subAccountId;
      if (user.purchaseId !== undefined) a.purchaseId = user.purchaseId;
      return a;
    }
    case 'wrong-realm':
      return void challenge({ nonce: verdict.nonce });
    case 'stale':
      return void challenge({ stale: true });
    case 'bad-nonce':
      return void challenge();
    case 'bad-response':
      tx.reply(403, 'Forbidden', { toTag: tag });
      return undefined;
  }
}

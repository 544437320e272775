import https from 'node:https';
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import { TargetRefusedError, type TargetGuard } from '../../platform/outbound-guard.js';
import type { EmergencyAddress } from './did-repo.js';

/** What the provider holds for a number: its own ids, kept between attempts. */
export interface ProviderRef {
  phoneNumberId?: string;
  addressId?: string;
  /** The provider answered `provisioning`/`deprovisioning`: the next attempt reads the status instead of asking again. */
  awaiting?: 'enable' | 'disable';
}

/**
 * One attempt's outcome. `retry`: the provider could not be reached or answered 429/5xx (tried
 * again later); `failed`: it refused what was sent (its error kept for the owner).
 */
export type ProvisionOutcome =
  | { status: 'provisioned'; ref: ProviderRef }
  | { status: 'pending'; ref: ProviderRef; note: string }
  | { status: 'retry'; ref: ProviderRef; error: string }
  | { status: 'failed'; ref: ProviderRef; error: string };

/** The provisioning provider's operations (docs/numbers.md "Provisioning"). */
export interface ProvisioningProvider {
  /** Lists `name` as the number's CNAM, or takes the listing off (null). */
  callerName(number: string, name: string | null, ref: ProviderRef): Promise<ProvisionOutcome>;
  /** Registers the address (once, via `addressId`) and enables emergency calling on it; null disables it. */
  emergency(number: string, address: EmergencyAddress | null, ref: ProviderRef): Promise<ProvisionOutcome>;
}

interface Answer {
  status: number;
  json: { data?: unknown; errors?: { code?: string; title?: string; detail?: string }[] } | null;
}

const MAX_BODY = 256 * 1024;

class Transient extends Error {}

/**
 * Telnyx API v2 (https://developers.telnyx.com): a number is found by
 * `GET /phone_numbers?filter[phone_number]=+E164`; CNAM is its voice settings' `cnam_listing`
 * (`PATCH /phone_numbers/{id}/voice`); an emergency address is an `/addresses` record (immutable:
 * an edited address is a new record) enabled with `POST /phone_numbers/{id}/actions/enable_emergency`,
 * whose `emergency_status` is `active`, `provisioning` (polled through `GET /phone_numbers/{id}/voice`),
 * `provisioning-failed`, or `disabled`. Every request goes to the address the outbound guard
 * checked, with the URL's host kept for TLS and `Host`.
 */
export function createTelnyxProvider(opts: {
  url: string;
  apiKey: string;
  guard: TargetGuard;
  ca?: Buffer;
  timeoutMs: number;
  log: Logger;
}): ProvisioningProvider {
  const base = new URL(opts.url.replace(/\/+$/, ''));
  const port = base.port ? Number(base.port) : 443;
  const log = opts.log.child({ provider: base.host });

  async function request(method: string, path: string, body?: unknown): Promise<Answer> {
    try {
      // A literal IP skips `lookup`: checked here; a name is resolved and pinned by the guard's lookup.
      if (isIP(base.hostname.replace(/^\[|\]$/g, '')) !== 0) opts.guard.checkHost(base.hostname, port);
    } catch (err) {
      if (err instanceof TargetRefusedError) throw new Transient('provider address refused by the outbound guard');
      throw err;
    }
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise<Answer>((resolve, reject) => {
      const req = https.request(
        {
          protocol: 'https:',
          hostname: base.hostname.replace(/^\[|\]$/g, ''),
          port,
          path: `${base.pathname === '/' ? '' : base.pathname}${path}`,
          method,
          lookup: opts.guard.netLookup(port),
          ...(opts.ca ? { ca: opts.ca } : {}),
          timeout: opts.timeoutMs,
          headers: {
            authorization: `Bearer ${opts.apiKey}`,
            accept: 'application/json',
            ...(payload === undefined
              ? {}
              : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > MAX_BODY) req.destroy(new Transient('provider answer too large'));
            else chunks.push(c);
          });
          res.on('end', () => {
            let json: Answer['json'];
            try {
              json = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Answer['json']) : null;
            } catch {
              // Not JSON (a proxy's error page): judged by its status alone.
              json = null;
            }
            resolve({ status: res.statusCode ?? 0, json });
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Transient('provider timed out')));
      req.on('error', (err) => {
        if (err instanceof Transient) reject(err);
        else if (err instanceof TargetRefusedError)
          reject(new Transient('provider address refused by the outbound guard'));
        else reject(new Transient(`provider unreachable (${(err as NodeJS.ErrnoException).code ?? err.message})`));
      });
      req.end(payload);
    });
  }

  /** The provider's own words for a refusal: its first error's code, title and detail. */
  const errorOf = (a: Answer) => {
    const e = a.json?.errors?.[0];
    const text = [e?.code, e?.title, e?.detail].filter((x) => x !== undefined && x !== '').join(': ');
    return `HTTP ${a.status}${text ? ` ${text}` : ''}`.slice(0, 1000);
  };
  const transient = (a: Answer) => a.status === 429 || a.status >= 500;

  /** Runs an attempt; transport failures and 429/5xx become `retry`, keeping what was learned so far. */
  async function attempt(ref: ProviderRef, fn: (ref: ProviderRef) => Promise<ProvisionOutcome>) {
    const seen = { ...ref };
    try {
      return await fn(seen);
    } catch (err) {
      if (err instanceof Transient) {
        log.warn({ reason: err.message }, 'provisioning provider not reached');
        return { status: 'retry' as const, ref: seen, error: err.message };
      }
      throw err;
    }
  }

  /** The provider's id of the number (cached in `ref`), or an outcome when it holds no such number. */
  async function numberId(number: string, ref: ProviderRef): Promise<string | ProvisionOutcome> {
    if (ref.phoneNumberId) return ref.phoneNumberId;
    const a = await request(
      'GET',
      `/phone_numbers?filter[phone_number]=${encodeURIComponent(`+${number}`)}&page[size]=1`,
    );
    if (transient(a)) throw new Transient(errorOf(a));
    if (a.status !== 200) return { status: 'failed', ref, error: errorOf(a) };
    const rows = (a.json?.data ?? []) as { id?: string }[];
    const id = rows[0]?.id;
    if (!id) return { status: 'failed', ref, error: 'the provider holds no such phone number on this account' };
    ref.phoneNumberId = String(id);
    return ref.phoneNumberId;
  }

  const emergencyOutcome = (a: Answer, ref: ProviderRef, enabling: boolean): ProvisionOutcome => {
    if (transient(a)) throw new Transient(errorOf(a));
    if (a.status < 200 || a.status > 299) return { status: 'failed', ref, error: errorOf(a) };
    const e = (a.json?.data as { emergency?: { emergency_status?: string } } | undefined)?.emergency;
    const st = e?.emergency_status;
    if (st === 'provisioning' || st === 'deprovisioning')
      return {
        status: 'pending',
        ref: { ...ref, awaiting: enabling ? 'enable' : 'disable' },
        note: `provider status ${st}`,
      };
    delete ref.awaiting;
    if (st === 'provisioning-failed') return { status: 'failed', ref, error: 'provider status provisioning-failed' };
    if ((enabling && st === 'active') || (!enabling && (st === 'disabled' || st === undefined)))
      return { status: 'provisioned', ref };
    return { status: 'failed', ref, error: `provider status ${st ?? 'missing'}` };
  };

  return {
    callerName: (number, name, ref) =>
      attempt(ref, async (r) => {
        const id = await numberId(number, r);
        if (typeof id !== 'string') return id;
        const a = await request('PATCH', `/phone_numbers/${encodeURIComponent(id)}/voice`, {
          cnam_listing:
            name === null
              ? { cnam_listing_enabled: false }
              : { cnam_listing_enabled: true, cnam_listing_details: name },
        });
        if (transient(a)) throw new Transient(errorOf(a));
        if (a.status < 200 || a.status > 299) return { status: 'failed', ref: r, error: errorOf(a) };
        const listed = (a.json?.data as { cnam_listing?: { cnam_listing_details?: string } } | undefined)?.cnam_listing;
        if (name !== null && listed?.cnam_listing_details !== undefined && listed.cnam_listing_details !== name)
          return { status: 'failed', ref: r, error: `the provider listed "${listed.cnam_listing_details}"` };
        return { status: 'provisioned', ref: r };
      }),

    emergency: (number, address, ref) =>
      attempt(ref, async (r) => {
        const id = await numberId(number, r);
        if (typeof id !== 'string') return id;
        const wanted = address === null ? 'disable' : 'enable';
        if (r.awaiting === wanted)
          return emergencyOutcome(
            await request('GET', `/phone_numbers/${encodeURIComponent(id)}/voice`),
            r,
            address !== null,
          );
        delete r.awaiting;
        if (address === null) {
          const off = await request('POST', `/phone_numbers/${encodeURIComponent(id)}/actions/enable_emergency`, {
            emergency_enabled: false,
          });
          return emergencyOutcome(off, r, false);
        }
        if (r.addressId === undefined) {
          const made = await request('POST', '/addresses', {
            business_name: address.name,
            street_address: address.street,
            ...(address.street2 ? { extended_address: address.street2 } : {}),
            locality: address.city,
            ...(address.region ? { administrative_area: address.region } : {}),
            postal_code: address.postalCode,
            country_code: address.countryCode,
          });
          if (transient(made)) throw new Transient(errorOf(made));
          const addressId = (made.json?.data as { id?: string } | undefined)?.id;
          if (made.status < 200 || made.status > 299 || !addressId)
            return { status: 'failed', ref: r, error: errorOf(made) };
          r.addressId = String(addressId);
        }
        const on = await request('POST', `/phone_numbers/${encodeURIComponent(id)}/actions/enable_emergency`, {
          emergency_enabled: true,
          emergency_address_id: r.addressId,
        });
        return emergencyOutcome(on, r, true);
      }),
  };
}

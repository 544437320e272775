import { createHash } from 'node:crypto';
import { Decimal } from 'decimal.js';
import { Money } from '../../../ledger/money.js';
import { countryOf } from '../../cdrs/index.js';
import type { UsageRow } from './repo.js';
import { countryName as englishName } from '../../../platform/country-names.js';

/** One invoice line: a customer's rated usage of one kind to one destination at one rate. */
export interface InvoiceLine {
  kind: 'voice' | 'sms';
  description: string;
  /** ISO 3166 alpha-2 of the dialled number; null when it has none. */
  countryCode: string | null;
  destination: string;
  /** `minute` for voice, `segment` for SMS. */
  unit: 'minute' | 'segment';
  ratePerUnit: string;
  /** Calls or messages. */
  records: number;
  /** Voice: billed seconds; SMS: null. */
  billedSeconds: number | null;
  /** SMS: segments; voice: null. */
  segments: number | null;
  amount: string;
}

export interface CountryRow {
  countryCode: string | null;
  country: string;
  voiceCalls: number;
  voiceSeconds: number;
  smsMessages: number;
  smsSegments: number;
  amount: string;
}

export interface UsageSummary {
  records: number;
  voice: { calls: number; billedSeconds: number; amount: string };
  sms: { messages: number; segments: number; amount: string };
  amount: string;
}

export interface UnratedSummary {
  records: number;
  voiceCalls: number;
  voiceSeconds: number;
  smsMessages: number;
  /** Whether the request excluded them (they stay unclaimed), and why. */
  excluded: boolean;
  reason: string | null;
}

const countryName = (cc: string | null) => (cc === null ? 'Unknown' : (englishName(cc) ?? cc));

/** Lines grouped by kind, destination country and rate, the country breakdown, and the usage totals. */
export function priceUsage(rated: readonly UsageRow[]) {
  const cache = new Map<string, string | null>();
  const lines = new Map<string, InvoiceLine & { sum: Decimal }>();
  const countries = new Map<string, CountryRow & { sum: Decimal }>();
  const usage = {
    voice: { calls: 0, seconds: 0, sum: new Decimal(0) },
    sms: { n: 0, segments: 0, sum: new Decimal(0) },
  };
  for (const r of rated) {
    const cc = countryOf(cache, r.toNumber?.replace(/^\+/, '') ?? null);
    const cost = new Decimal(r.buyerCost);
    const key = `${r.kind}|${cc ?? ''}|${r.ratePerUnit}`;
    let line = lines.get(key);
    if (!line) {
      const destination = countryName(cc);
      line = {
        kind: r.kind,
        description: `${r.kind === 'voice' ? 'Voice' : 'SMS'} to ${destination}`,
        countryCode: cc,
        destination,
        unit: r.kind === 'voice' ? 'minute' : 'segment',
        ratePerUnit: r.ratePerUnit!,
        records: 0,
        billedSeconds: r.kind === 'voice' ? 0 : null,
        segments: r.kind === 'sms' ? 0 : null,
        amount: '',
        sum: new Decimal(0),
      };
      lines.set(key, line);
    }
    let country = countries.get(cc ?? '');
    if (!country) {
      country = {
        countryCode: cc,
        country: countryName(cc),
        voiceCalls: 0,
        voiceSeconds: 0,
        smsMessages: 0,
        smsSegments: 0,
        amount: '',
        sum: new Decimal(0),
      };
      countries.set(cc ?? '', country);
    }
    line.records++;
    line.sum = line.sum.plus(cost);
    country.sum = country.sum.plus(cost);
    if (r.kind === 'voice') {
      const s = r.billedSeconds ?? 0;
      line.billedSeconds! += s;
      country.voiceCalls++;
      country.voiceSeconds += s;
      usage.voice.calls++;
      usage.voice.seconds += s;
      usage.voice.sum = usage.voice.sum.plus(cost);
    } else {
      const n = r.segments ?? 1;
      line.segments! += n;
      country.smsMessages++;
      country.smsSegments += n;
      usage.sms.n++;
      usage.sms.segments += n;
      usage.sms.sum = usage.sms.sum.plus(cost);
    }
  }
  const money = (d: Decimal) => Money.parse(d).toString();
  const byText = (a: { kind: string; destination: string; ratePerUnit: string }, b: typeof a) =>
    a.kind.localeCompare(b.kind) ||
    a.destination.localeCompare(b.destination) ||
    new Decimal(a.ratePerUnit).cmp(b.ratePerUnit);
  const total = usage.voice.sum.plus(usage.sms.sum);
  return {
    lines: [...lines.values()].sort(byText).map(({ sum, ...l }) => ({ ...l, amount: money(sum) })),
    countryBreakdown: [...countries.values()]
      .sort((a, b) => b.sum.cmp(a.sum) || a.country.localeCompare(b.country))
      .map(({ sum, ...c }) => ({ ...c, amount: money(sum) })),
    usage: {
      records: rated.length,
      voice: { calls: usage.voice.calls, billedSeconds: usage.voice.seconds, amount: money(usage.voice.sum) },
      sms: { messages: usage.sms.n, segments: usage.sms.segments, amount: money(usage.sms.sum) },
      amount: money(total),
    } satisfies UsageSummary,
    subtotal: money(total),
  };
}

export function summariseUnrated(rows: readonly UsageRow[], reason: string | null): UnratedSummary {
  const voice = rows.filter((r) => r.kind === 'voice');
  return {
    records: rows.length,
    voiceCalls: voice.length,
    voiceSeconds: voice.reduce((a, r) => a + (r.durationSeconds ?? 0), 0),
    smsMessages: rows.length - voice.length,
    excluded: reason !== null,
    reason,
  };
}

/**
 * The review digest: SHA-256 over everything an issue must find unchanged, in a fixed order
 * (customer, period, options, the exact usage set with each record's figures, the amounts).
 */
export function reviewDigest(p: {
  operatorId: string;
  customerId: string;
  periodStart: Date;
  periodEnd: Date;
  options: Record<string, unknown>;
  rated: readonly UsageRow[];
  unrated: readonly UsageRow[];
  broughtForward: readonly { id: string; outstanding: string }[];
  credits: string;
  subtotal: string;
  total: string;
}): string {
  const h = createHash('sha256');
  h.update(
    JSON.stringify([
      'switch-invoice-v1',
      p.operatorId,
      p.customerId,
      p.periodStart.toISOString(),
      p.periodEnd.toISOString(),
      p.options,
      p.subtotal,
      p.broughtForward.map((b) => [b.id, b.outstanding]),
      p.credits,
      p.total,
    ]),
  );
  for (const r of p.rated) h.update(`\nR${r.id}|${r.buyerCost}|${r.billedSeconds ?? ''}|${r.segments ?? ''}`);
  for (const r of p.unrated) h.update(`\nU${r.id}`);
  return h.digest('hex');
}

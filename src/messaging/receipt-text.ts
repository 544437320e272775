/** Final and intermediate states a receipt can carry (SMPP 3.4 Appendix B, message_state §5.3.2.35). */
export const RECEIPT_STATES = {
  ENROUTE: 1,
  DELIVRD: 2,
  EXPIRED: 3,
  DELETED: 4,
  UNDELIV: 5,
  ACCEPTD: 6,
  UNKNOWN: 7,
  REJECTD: 8,
} as const;

export type ReceiptStat = keyof typeof RECEIPT_STATES;

export interface ReceiptText {
  id: string;
  sub: number;
  dlvrd: number;
  submitDate: Date | null;
  doneDate: Date | null;
  stat: ReceiptStat;
  err: string;
  text: string;
}

export function messageStateFor(stat: ReceiptStat): number {
  return RECEIPT_STATES[stat];
}

export function statForMessageState(state: number): ReceiptStat | null {
  for (const [k, v] of Object.entries(RECEIPT_STATES)) if (v === state) return k as ReceiptStat;
  return null;
}

/** True when the state is final and means the handset got the message. */
export function isDelivered(stat: ReceiptStat): boolean {
  return stat === 'DELIVRD';
}

/** True when the state is final and means the message will not be delivered. */
export function isFailed(stat: ReceiptStat): boolean {
  return stat === 'UNDELIV' || stat === 'EXPIRED' || stat === 'REJECTD' || stat === 'DELETED' || stat === 'UNKNOWN';
}

const pad2 = (n: number) => String(n).padStart(2, '0');
const pad3 = (n: number) => String(Math.max(0, Math.min(999, n))).padStart(3, '0');

/** YYMMDDhhmm in UTC, as the receipt format has it. */
export function formatReceiptDate(d: Date): string {
  return (
    pad2(d.getUTCFullYear() % 100) +
    pad2(d.getUTCMonth() + 1) +
    pad2(d.getUTCDate()) +
    pad2(d.getUTCHours()) +
    pad2(d.getUTCMinutes())
  );
}

/** Read YYMMDDhhmm[ss] as UTC (two-digit years are 20YY). */
export function parseReceiptDate(s: string): Date | null {
  const m = /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})?$/.exec(s);
  if (!m) return null;
  const [, yy, mo, dd, hh, mi, ss] = m;
  const d = new Date(Date.UTC(2000 + Number(yy), Number(mo) - 1, Number(dd), Number(hh), Number(mi), Number(ss ?? 0)));
  return Number.isNaN(d.getTime()) ? null : d;
}

/** Build the de-facto receipt text (SMPP 3.4 Appendix B); text is cut to its first 20 characters. */
export function buildReceiptText(r: ReceiptText): string {
  return (
    `id:${r.id} sub:${pad3(r.sub)} dlvrd:${pad3(r.dlvrd)} ` +
    `submit date:${r.submitDate ? formatReceiptDate(r.submitDate) : '0000000000'} ` +
    `done date:${r.doneDate ? formatReceiptDate(r.doneDate) : '0000000000'} ` +
    `stat:${r.stat} err:${r.err.padStart(3, '0').slice(-3)} text:${r.text.slice(0, 20)}`
  );
}

const FIELD = /(id|sub|dlvrd|submit[ _]date|done[ _]date|stat|err|text)\s*:/gi;

/** Parse a receipt text; fields may come in any order and case; null when id or stat is missing. */
export function parseReceiptText(input: string): ReceiptText | null {
  const found: Array<{ key: string; start: number; valueStart: number }> = [];
  for (const m of input.matchAll(FIELD)) {
    const key = (m[1] as string).toLowerCase().replace('_', ' ');
    // text runs to the end; anything after text: is its content, not a field
    if (found.some((f) => f.key === 'text')) break;
    if (m.index > 0 && !/\s/.test(input[m.index - 1] as string)) continue;
    found.push({ key, start: m.index, valueStart: m.index + m[0].length });
  }
  const values = new Map<string, string>();
  found.forEach((f, i) => {
    const end = i + 1 < found.length ? (found[i + 1] as { start: number }).start : input.length;
    const raw = input.slice(f.valueStart, end);
    values.set(f.key, f.key === 'text' ? raw : raw.trim());
  });
  const id = values.get('id');
  const statRaw = values.get('stat')?.toUpperCase();
  if (!id || !statRaw) return null;
  const stat = normaliseStat(statRaw);
  if (!stat) return null;
  return {
    id: normaliseSupplierMessageId(id),
    sub: Number.parseInt(values.get('sub') ?? '0', 10) || 0,
    dlvrd: Number.parseInt(values.get('dlvrd') ?? '0', 10) || 0,
    submitDate: parseReceiptDate(values.get('submit date') ?? ''),
    doneDate: parseReceiptDate(values.get('done date') ?? ''),
    stat,
    err: values.get('err') ?? '000',
    text: values.get('text') ?? '',
  };
}

function normaliseStat(s: string): ReceiptStat | null {
  if (s in RECEIPT_STATES) return s as ReceiptStat;
  // Long forms some SMSCs send.
  const long: Record<string, ReceiptStat> = {
    DELIVERED: 'DELIVRD',
    UNDELIVERABLE: 'UNDELIV',
    REJECTED: 'REJECTD',
    ACCEPTED: 'ACCEPTD',
  };
  return long[s] ?? null;
}

// eslint-disable-next-line no-control-regex
const CONTROL_OR_SPACE = /[\x00-\x20\x7f-\xa0]+/g;

/**
 * A supplier message id as we store it: trimmed of NULs, whitespace and other stray control bytes,
 * otherwise exactly as given (case and leading zeros kept).
 */
export function normaliseSupplierMessageId(raw: string | Uint8Array): string {
  const s = typeof raw === 'string' ? raw : Buffer.from(raw).toString('latin1');
  return s.replace(CONTROL_OR_SPACE, ' ').trim().split(' ')[0] ?? '';
}

/**
 * Keys under which an id is matched: the id itself (case-folded), and its numeric value read as
 * decimal and as hex, because suppliers answer submit_sm_resp in one form and receipts in the other.
 */
export function supplierIdKeys(id: string): string[] {
  const n = normaliseSupplierMessageId(id);
  if (!n) return [];
  const keys = [`s:${n.toLowerCase()}`];
  if (/^\d{1,30}$/.test(n)) keys.push(`n:${BigInt(n).toString()}`);
  if (/^[0-9a-f]{1,24}$/i.test(n)) keys.push(`n:${BigInt(`0x${n}`).toString()}`);
  return [...new Set(keys)];
}

/** True when two supplier ids name the same message under the hex/decimal rule. */
export function sameSupplierMessageId(a: string, b: string): boolean {
  const kb = new Set(supplierIdKeys(b));
  return supplierIdKeys(a).some((k) => kb.has(k));
}

import type { Db, Sql } from '../../../db/connection.js';

/** One CDR of a customer's period that no live invoice has claimed, as an invoice prices it. */
export interface UsageRow {
  id: string;
  kind: 'voice' | 'sms';
  toNumber: string | null;
  billedSeconds: number | null;
  durationSeconds: number | null;
  segments: number | null;
  /** null: the record was never priced. */
  ratePerUnit: string | null;
  buyerCost: string;
  /** `rated`: billed at a rate; `unrated`: usage (an answered call, a sent message) with no rate. */
  rating: 'rated' | 'unrated';
}

export interface InvoiceRow {
  id: string;
  operatorId: string;
  customerId: string;
  invoiceNumber: string;
  periodStart: Date;
  periodEnd: Date;
  issueDate: string;
  dueDate: string;
  paymentTermsDays: number;
  currency: string;
  subtotal: string;
  broughtForward: string;
  creditsApplied: string;
  tax: string;
  total: string;
  amountPaid: string;
  status: 'draft' | 'open' | 'partial' | 'paid' | 'void';
  /** Due date passed with money still owed (worked out by the query, on today's UTC date). */
  overdue: boolean;
  notes: string | null;
  customerLabel: string;
  billingProfile: Record<string, unknown>;
  lines: unknown[];
  countryBreakdown: unknown[];
  exclusions: Record<string, unknown> | null;
  preview: Record<string, unknown>;
  reviewDigest: string;
  replacesInvoiceId: string | null;
  carriedIntoId: string | null;
  sentAt: Date | null;
  sendCount: number;
  voidReason: string | null;
  voidedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A new invoice: what issue computed; payments, sends and void come later. */
export type InvoiceInsert = Omit<
  InvoiceRow,
  'status' | 'overdue' | 'amountPaid' | 'carriedIntoId' | 'sentAt' | 'sendCount' | 'voidReason' | 'voidedAt'
> & { status: 'open' };

export interface PaymentRow {
  id: string;
  amount: string;
  method: string;
  reference: string | null;
  paidAt: Date;
  createdAt: Date;
}

export interface ListFilter {
  customerId?: string | undefined;
  status?: 'draft' | 'open' | 'partial' | 'paid' | 'overdue' | 'void' | undefined;
  limit: number;
  offset: number;
}

export function createInvoicesRepo(sql: Sql) {
  const columns = (db: Db) => db`
    i.id, i.operator_id, i.customer_id, i.invoice_number::text, i.period_start, i.period_end,
    to_char(i.issue_date, 'YYYY-MM-DD') as issue_date, to_char(i.due_date, 'YYYY-MM-DD') as due_date,
    i.payment_terms_days, i.currency, i.subtotal::numeric(20,6)::text as subtotal,
    i.brought_forward::numeric(20,6)::text as brought_forward, i.credits_applied::numeric(20,6)::text as credits_applied,
    i.tax::numeric(20,6)::text as tax, i.total::numeric(20,6)::text as total,
    i.amount_paid::numeric(20,6)::text as amount_paid, i.status,
    (i.status in ('open', 'partial') and i.due_date < (now() at time zone 'UTC')::date) as overdue,
    i.notes, i.customer_label, i.billing_profile, i.lines, i.country_breakdown, i.exclusions, i.preview,
    i.review_digest, i.replaces_invoice_id, i.carried_into_id, i.sent_at, i.send_count, i.void_reason,
    i.voided_at, i.created_at, i.updated_at`;

  const statusFilter = (db: Db, status: ListFilter['status']) => {
    if (status === undefined) return db``;
    const late = db`i.due_date < (now() at time zone 'UTC')::date`;
    if (status === 'overdue') return db`and i.status in ('open', 'partial') and ${late}`;
    if (status === 'open' || status === 'partial') return db`and i.status = ${status} and not ${late}`;
    return db`and i.status = ${status}`;
  };

  return {
    /** The customer's CDRs of [start, end) that no live invoice claims: rated usage and unrated usage. */
    usage: (db: Db, customerId: string, start: Date, end: Date) =>
      db<UsageRow[]>`
        select c.id, c.kind, c.to_number, c.billed_seconds, c.duration_seconds, c.segments,
               c.rate_per_unit::numeric(20,6)::text as rate_per_unit,
               coalesce(c.buyer_cost, 0)::numeric(20,6)::text as buyer_cost,
               case when c.rate_per_unit is null then 'unrated' else 'rated' end as rating
        from cdrs c
        where c.account_id = ${customerId} and not c.is_probe and not c.simulated
          and c.created_at >= ${start} and c.created_at < ${end}
          and (
            (c.rate_per_unit is not null and (c.kind = 'sms' or coalesce(c.billed_seconds, 0) > 0))
            or (c.rate_per_unit is null and (c.kind = 'sms' or coalesce(c.duration_seconds, 0) > 0))
          )
          and not exists (select 1 from switch_invoice_claims k where k.cdr_id = c.id and k.released_at is null)
        order by c.id`,

    /** Earlier invoices of the customer still owed and not yet carried into another invoice. */
    outstanding: (db: Db, customerId: string, before: Date) =>
      db<{ id: string; invoiceNumber: string; outstanding: string }[]>`
        select id, invoice_number::text, (total - amount_paid)::numeric(20,6)::text as outstanding
        from switch_invoices
        where customer_id = ${customerId} and status in ('open', 'partial') and carried_into_id is null
          and period_end <= ${before} and total > amount_paid
        order by invoice_number`,

    /** The customer's credit not yet used: overpayments on its live invoices less the credit they applied. */
    async creditAvailable(db: Db, customerId: string): Promise<string> {
      const [row] = await db<{ credit: string }[]>`
        select greatest(coalesce(sum(greatest(amount_paid - total, 0.0)) - sum(credits_applied), 0.0), 0.0)
                 ::numeric(20,6)::text as credit
        from switch_invoices where customer_id = ${customerId} and status <> 'void'`;
      return row!.credit;
    },

    /** Locks the operator's number counter (made on first use) until the transaction ends. */
    async lockCounter(tx: Db, operatorId: string): Promise<void> {
      await tx`insert into switch_invoice_counters (operator_id, last_number) values (${operatorId}, 0)
               on conflict (operator_id) do nothing`;
      await tx`select last_number from switch_invoice_counters where operator_id = ${operatorId} for update`;
    },

    /** The next number, in the transaction holding the counter: a rollback gives it back. */
    async nextNumber(tx: Db, operatorId: string): Promise<string> {
      const [row] = await tx<{ n: string }[]>`
        update switch_invoice_counters set last_number = last_number + 1 where operator_id = ${operatorId}
        returning last_number::text as n`;
      return row!.n;
    },

    async insert(tx: Db, r: InvoiceInsert): Promise<void> {
      await tx`insert into switch_invoices ${tx(
        {
          ...r,
          billingProfile: tx.json(r.billingProfile as never),
          lines: tx.json(r.lines as never),
          countryBreakdown: tx.json(r.countryBreakdown as never),
          exclusions: r.exclusions === null ? null : tx.json(r.exclusions as never),
          preview: tx.json(r.preview as never),
        } as unknown as Record<string, unknown>,
        'id',
        'operatorId',
        'customerId',
        'invoiceNumber',
        'periodStart',
        'periodEnd',
        'issueDate',
        'dueDate',
        'paymentTermsDays',
        'currency',
        'subtotal',
        'broughtForward',
        'creditsApplied',
        'tax',
        'total',
        'status',
        'notes',
        'customerLabel',
        'billingProfile',
        'lines',
        'countryBreakdown',
        'exclusions',
        'preview',
        'reviewDigest',
        'replacesInvoiceId',
        'createdAt',
        'updatedAt',
      )}`;
    },

    /** Claims the CDRs for the invoice; a CDR a live invoice holds already fails with 23505. */
    async claim(tx: Db, invoiceId: string, cdrIds: readonly string[]): Promise<void> {
      if (cdrIds.length === 0) return;
      await tx`
        insert into switch_invoice_claims (invoice_id, cdr_id)
        select ${invoiceId}, x from unnest(${tx.array(cdrIds as string[])}::uuid[]) as x`;
    },

    /** Marks the invoices whose outstanding amounts `intoId` brought forward; false when one changed meanwhile. */
    async carry(tx: Db, ids: readonly string[], intoId: string): Promise<boolean> {
      if (ids.length === 0) return true;
      const rows = await tx`
        update switch_invoices set carried_into_id = ${intoId}
        where id = any(${tx.array(ids as string[])}::uuid[]) and carried_into_id is null
          and status in ('open', 'partial')`;
      return rows.count === ids.length;
    },

    async list(operatorId: string, f: ListFilter): Promise<{ rows: InvoiceRow[]; total: number }> {
      const where = sql`
        i.operator_id = ${operatorId}
        ${f.customerId ? sql`and i.customer_id = ${f.customerId}` : sql``}
        ${statusFilter(sql, f.status)}`;
      const [rows, [count]] = await Promise.all([
        sql<InvoiceRow[]>`select ${columns(sql)} from switch_invoices i where ${where}
                          order by i.invoice_number desc limit ${f.limit} offset ${f.offset}`,
        sql<{ n: number }[]>`select count(*)::int as n from switch_invoices i where ${where}`,
      ]);
      return { rows, total: count!.n };
    },

    /** One invoice of the operator; `lock` takes its row lock in `db`'s transaction. */
    async get(db: Db, operatorId: string, id: string, lock = false): Promise<InvoiceRow | null> {
      const [row] = await db<InvoiceRow[]>`
        select ${columns(db)} from switch_invoices i where i.id = ${id} and i.operator_id = ${operatorId}
        ${lock ? db`for update` : db``}`;
      return row ?? null;
    },

    /** `{ id, invoiceNumber, status }` of the invoice that replaced `id`, if any. */
    async replacedBy(db: Db, id: string) {
      const [row] = await db<{ id: string; invoiceNumber: string; status: string }[]>`
        select id, invoice_number::text, status from switch_invoices where replaces_invoice_id = ${id}`;
      return row ?? null;
    },

    async brief(db: Db, id: string) {
      const [row] = await db<{ id: string; invoiceNumber: string; status: string }[]>`
        select id, invoice_number::text, status from switch_invoices where id = ${id}`;
      return row ?? null;
    },

    payments: (db: Db, invoiceId: string) =>
      db<PaymentRow[]>`
        select id, amount::numeric(20,6)::text as amount, method, reference, paid_at, created_at
        from switch_invoice_payments where invoice_id = ${invoiceId} order by paid_at, created_at`,

    claimCount: async (db: Db, invoiceId: string) => {
      const [row] = await db<{ live: number; released: number }[]>`
        select count(*) filter (where released_at is null)::int as live,
               count(*) filter (where released_at is not null)::int as released
        from switch_invoice_claims where invoice_id = ${invoiceId}`;
      return row!;
    },

    /** Voids the invoice: its claims released, the invoices it carried owed again. Its number stays. */
    async void(tx: Db, id: string, reason: string | null, now: Date): Promise<void> {
      await tx`update switch_invoices set status = 'void', void_reason = ${reason}, voided_at = ${now}, updated_at = ${now}
               where id = ${id}`;
      await tx`update switch_invoice_claims set released_at = ${now} where invoice_id = ${id} and released_at is null`;
      await tx`update switch_invoices set carried_into_id = null where carried_into_id = ${id}`;
    },

    async addPayment(
      tx: Db,
      p: { id: string; invoiceId: string; amount: string; method: string; reference: string | null; paidAt: Date },
      status: 'partial' | 'paid',
      now: Date,
    ): Promise<void> {
      await tx`insert into switch_invoice_payments (id, invoice_id, amount, method, reference, paid_at, created_at)
               values (${p.id}, ${p.invoiceId}, ${p.amount}, ${p.method}, ${p.reference}, ${p.paidAt}, ${now})`;
      await tx`update switch_invoices set amount_paid = amount_paid + ${p.amount}::numeric, status = ${status},
               updated_at = ${now} where id = ${p.invoiceId}`;
    },

    async markSent(id: string, now: Date): Promise<void> {
      await sql`update switch_invoices set sent_at = ${now}, send_count = send_count + 1, updated_at = ${now}
                where id = ${id}`;
    },
  };
}

export type InvoicesRepo = ReturnType<typeof createInvoicesRepo>;

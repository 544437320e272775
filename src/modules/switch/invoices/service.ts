import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import type { Db, Sql } from '../../../db/connection.js';
import { loadServerSecret } from '../../../db/server-secret.js';
import { hasScope, type Principal } from '../../../http/access.js';
import { AppError, forbidden, notFound, ruleError, SqlState, validationError } from '../../../http/errors.js';
import { Money } from '../../../ledger/money.js';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import type { Mailer } from '../../../platform/mailer.js';
import { priceUsage, reviewDigest, summariseUnrated } from './compute.js';
import { switchInvoicePdf } from './pdf.js';
import { createInvoicesRepo, type InvoiceRow, type ListFilter } from './repo.js';

/** Days from the issue date to the due date: no customer payment terms are stored yet. */
export const PAYMENT_TERMS_DAYS = 30;
/** The longest period one invoice covers (spec "Limits": a customer usage window is at most 92 days). */
const MAX_PERIOD_DAYS = 92;
const DAY_MS = 86_400_000;
const TOKEN = /^rt1\.([0-9a-f-]{36}|-)\.([A-Za-z0-9_-]{43})$/;

/** A Switch customer as invoicing needs it: a sub-account of the Switch account. */
export interface SwitchCustomer {
  id: string;
  label: string;
  externalRef: string | null;
  currency: string;
  portalEmail: string | null;
}

export interface PreviewInput {
  customerId: string;
  periodStart: string;
  periodEnd: string;
  notes?: string | undefined;
  includeBroughtForward?: boolean | undefined;
  applyCredits?: boolean | undefined;
  excludeUnrated?: { reason: string } | undefined;
  releaseInvoiceId?: string | undefined;
}

export interface IssueInput extends Omit<PreviewInput, 'releaseInvoiceId'> {
  reviewToken: string;
}

export interface SettleInput {
  amount: string;
  method: string;
  reference?: string | undefined;
  paidAt?: string | undefined;
}

/** A date (`YYYY-MM-DD`, midnight UTC) or a timestamp. */
function parseInstant(text: string, path: string): Date {
  const d = new Date(/^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : text);
  if (Number.isNaN(d.getTime())) throw validationError([{ path, message: 'must be an ISO date or timestamp' }]);
  return d;
}

function parsePeriod(i: PreviewInput) {
  const start = parseInstant(i.periodStart, 'periodStart');
  const end = parseInstant(i.periodEnd, 'periodEnd');
  if (end <= start) throw validationError([{ path: 'periodEnd', message: 'must be after periodStart' }]);
  if (end.getTime() - start.getTime() > MAX_PERIOD_DAYS * DAY_MS)
    throw validationError([{ path: 'periodEnd', message: `a period covers at most ${MAX_PERIOD_DAYS} days` }]);
  return { start, end };
}

const dateOf = (d: Date) => d.toISOString().slice(0, 10);
const periodLabel = (start: Date, end: Date) => `${dateOf(start)} to ${dateOf(new Date(end.getTime() - 1))}`;
export const invoiceNumberText = (n: string) => `SW-${n.padStart(6, '0')}`;

/**
 * Switch invoicing (spec "Switch" Invoicing; docs/switch.md "Invoicing"): a customer's rated usage of a
 * period, previewed with a signed review token, issued under the next gap-free number with every CDR
 * claimed once, then sent, settled or voided.
 */
export function createSwitchInvoices(deps: {
  sql: Sql;
  clock: Clock;
  log: Logger;
  mailer: Mailer;
  /** The sub-account `id` of the operator (404 for any other id). */
  customer(operatorId: string, id: string): Promise<SwitchCustomer>;
  /** The operator's billing identity, as its invoices name it. */
  issuer(operatorId: string): Promise<Record<string, unknown>>;
}) {
  const { sql, clock, log } = deps;
  const repo = createInvoicesRepo(sql);
  let secret: Promise<string> | undefined;
  // One key per database, shared by every daemon, made on first use.
  const key = () => (secret ??= loadServerSecret(sql, 'switch-invoice-review'));

  async function customerOf(operatorId: string, id: string): Promise<SwitchCustomer> {
    if (id === operatorId) throw notFound('Customer');
    try {
      return await deps.customer(operatorId, id);
    } catch (err) {
      if (err instanceof AppError && err.code === 'NOT_FOUND') throw notFound('Customer');
      throw err;
    }
  }

  function requireAdjustment(p: Principal, i: PreviewInput) {
    // Leaving usage off an invoice is a billing adjustment: it needs billing:write beside switch:manage.
    if (i.excludeUnrated && !hasScope(p, 'billing:write'))
      throw forbidden('Excluding unrated usage needs the billing adjustment permission (billing:write)');
  }

  /** The void invoice a preview reissues: the operator's, the same customer's, not yet replaced. */
  async function releasable(db: Db, operatorId: string, customerId: string, id: string) {
    const inv = await repo.get(db, operatorId, id);
    const bad = (message: string) => validationError([{ path: 'releaseInvoiceId', message }]);
    if (!inv) throw bad('no such invoice');
    if (inv.status !== 'void') throw bad('only a void invoice can be reissued');
    if (inv.customerId !== customerId) throw bad('the invoice is for another customer');
    if (await repo.replacedBy(db, id)) throw bad('the invoice has been reissued already');
    return inv;
  }

  /** Everything an invoice of these options would hold, read in `db` (the issuing transaction or the pool). */
  async function compute(db: Db, operatorId: string, i: PreviewInput) {
    const { start, end } = parsePeriod(i);
    const customer = await customerOf(operatorId, i.customerId);
    const release = i.releaseInvoiceId ? await releasable(db, operatorId, customer.id, i.releaseInvoiceId) : null;
    const rows = await repo.usage(db, customer.id, start, end);
    const rated = rows.filter((r) => r.rating === 'rated');
    const unrated = rows.filter((r) => r.rating === 'unrated');
    const priced = priceUsage(rated);
    const carried = i.includeBroughtForward ? await repo.outstanding(db, customer.id, start) : [];
    const broughtForward = carried.reduce((a, b) => a.plus(b.outstanding), Money.zero);
    const due = Money.parse(priced.subtotal).plus(broughtForward);
    const available = i.applyCredits ? Money.parse(await repo.creditAvailable(db, customer.id)) : Money.zero;
    const credits = available.cmp(due) > 0 ? due : available;
    const tax = Money.zero;
    const total = due.minus(credits).plus(tax);
    const options = {
      notes: i.notes ?? null,
      includeBroughtForward: i.includeBroughtForward ?? false,
      applyCredits: i.applyCredits ?? false,
      excludeUnrated: i.excludeUnrated?.reason ?? null,
      releaseInvoiceId: release?.id ?? null,
    };
    const digest = reviewDigest({
      operatorId,
      customerId: customer.id,
      periodStart: start,
      periodEnd: end,
      options,
      rated,
      unrated,
      broughtForward: carried,
      credits: credits.toString(),
      subtotal: priced.subtotal,
      total: total.toString(),
    });
    const token = `rt1.${release?.id ?? '-'}.${createHmac('sha256', await key())
      .update(digest)
      .digest('base64url')}`;
    const issueDate = dateOf(clock.now());
    const preview = {
      customer: { id: customer.id, label: customer.label, source: 'sub_account' as const, currency: customer.currency },
      period: { start: start.toISOString(), end: end.toISOString(), timezone: 'UTC', label: periodLabel(start, end) },
      issueDate,
      dueDate: dateOf(new Date(Date.parse(`${issueDate}T00:00:00Z`) + PAYMENT_TERMS_DAYS * DAY_MS)),
      paymentTermsDays: PAYMENT_TERMS_DAYS,
      currency: customer.currency,
      usage: priced.usage,
      broughtForward: {
        included: options.includeBroughtForward,
        amount: broughtForward.toString(),
        invoices: carried.map((c) => ({
          id: c.id,
          invoiceNumber: invoiceNumberText(c.invoiceNumber),
          outstanding: c.outstanding,
        })),
      },
      unrated: summariseUnrated(unrated, options.excludeUnrated),
      lines: priced.lines,
      countryBreakdown: priced.countryBreakdown,
      subtotal: priced.subtotal,
      charges: Money.parse(priced.subtotal).toDisplayNumber(),
      credits: { applied: options.applyCredits, available: available.toString(), amount: credits.toString() },
      tax: tax.toString(),
      total: total.toDisplayNumber(),
      totalAmount: total.toString(),
      notes: options.notes,
      releaseInvoiceId: options.releaseInvoiceId,
      provenance: {
        source: 'cdrs',
        ratedRecords: rated.length,
        unratedRecords: unrated.length,
        computedAt: clock.now().toISOString(),
        digest,
      },
      reviewToken: token,
    };
    return { customer, start, end, rated, unrated, carried, broughtForward, credits, tax, total, preview, release };
  }

  async function detail(db: Db, inv: InvoiceRow) {
    const [payments, replaces, replacedBy, claims] = await Promise.all([
      repo.payments(db, inv.id),
      inv.replacesInvoiceId ? repo.brief(db, inv.replacesInvoiceId) : null,
      repo.replacedBy(db, inv.id),
      repo.claimCount(db, inv.id),
    ]);
    const brief = (b: { id: string; invoiceNumber: string; status: string } | null) =>
      b && { id: b.id, invoiceNumber: invoiceNumberText(b.invoiceNumber), status: b.status };
    return {
      ...summary(inv),
      lines: inv.lines,
      payments: payments.map((p) => ({ ...p, paidAt: p.paidAt.toISOString(), createdAt: p.createdAt.toISOString() })),
      customer: {
        id: inv.customerId,
        label: inv.customerLabel,
        source: 'sub_account' as const,
        currency: inv.currency,
      },
      countryBreakdown: inv.countryBreakdown,
      billingProfile: inv.billingProfile,
      identityFrozen: true as const,
      exclusions: inv.exclusions,
      broughtForward: inv.broughtForward,
      creditsApplied: inv.creditsApplied,
      carriedIntoId: inv.carriedIntoId,
      claimedRecords: claims.live,
      releasedRecords: claims.released,
      voidReason: inv.voidReason,
      voidedAt: inv.voidedAt?.toISOString() ?? null,
      replaces: brief(replaces),
      replacedBy: brief(replacedBy),
    };
  }

  function summary(inv: InvoiceRow) {
    return {
      id: inv.id,
      customerId: inv.customerId,
      invoiceNumber: invoiceNumberText(inv.invoiceNumber),
      periodStart: inv.periodStart.toISOString(),
      periodEnd: inv.periodEnd.toISOString(),
      issueDate: inv.issueDate,
      dueDate: inv.dueDate,
      currency: inv.currency,
      subtotal: inv.subtotal,
      tax: inv.tax,
      total: inv.total,
      amountPaid: inv.amountPaid,
      status: inv.overdue ? ('overdue' as const) : inv.status,
      overdue: inv.overdue,
      notes: inv.notes,
      replacesInvoiceId: inv.replacesInvoiceId,
      sentAt: inv.sentAt?.toISOString() ?? null,
      sendCount: inv.sendCount,
      customerLabel: inv.customerLabel,
      createdAt: inv.createdAt.toISOString(),
    };
  }

  async function own(db: Db, operatorId: string, id: string, lock = false) {
    const inv = await repo.get(db, operatorId, id, lock);
    if (!inv) throw notFound('Invoice');
    return inv;
  }

  function checkToken(token: string, expected: string) {
    const a = Buffer.from(token);
    const b = Buffer.from(expected);
    if (a.length !== b.length || !timingSafeEqual(a, b))
      throw new AppError(
        'INVOICE_REVIEW_STALE',
        'The usage, amounts or options changed since the preview: preview again and review the new figures',
      );
  }

  return {
    async list(operatorId: string, f: ListFilter) {
      if (f.customerId) await customerOf(operatorId, f.customerId);
      const { rows, total } = await repo.list(operatorId, f);
      return { rows: rows.map(summary), total, limit: f.limit, offset: f.offset };
    },

    async get(operatorId: string, id: string) {
      return detail(sql, await own(sql, operatorId, id));
    },

    /** Computes an invoice; allocates no number and claims nothing. */
    async preview(p: Principal, i: PreviewInput) {
      requireAdjustment(p, i);
      return (await compute(sql, p.accountId, i)).preview;
    },

    /**
     * Issues what the preview showed, recomputed in one transaction holding the operator's number
     * counter: 422 INVOICE_UNRATED_USAGE, 409 INVOICE_REVIEW_STALE, else the next number and every
     * included CDR claimed (a CDR another issue claimed first fails the unique claim: stale as well).
     */
    async issue(p: Principal, i: IssueInput) {
      requireAdjustment(p, i);
      const m = TOKEN.exec(i.reviewToken);
      if (!m) throw validationError([{ path: 'reviewToken', message: 'not a review token from a preview' }]);
      const releaseInvoiceId = m[1] === '-' ? undefined : m[1];
      const operatorId = p.accountId;
      try {
        const id = await sql.begin(async (tx) => {
          await repo.lockCounter(tx, operatorId);
          const c = await compute(tx, operatorId, { ...i, releaseInvoiceId });
          if (c.unrated.length > 0 && !i.excludeUnrated)
            throw new AppError(
              'INVOICE_UNRATED_USAGE',
              `${c.unrated.length} usage record(s) of the period could not be priced: rate them, or issue with ` +
                'excludeUnrated and a reason',
              { unrated: c.preview.unrated },
            );
          checkToken(i.reviewToken, c.preview.reviewToken);
          if (c.rated.length === 0 && c.broughtForward.isZero())
            throw ruleError('Nothing to invoice: the period has no unbilled rated usage');
          const now = clock.now();
          const number = await repo.nextNumber(tx, operatorId);
          const invoiceId = newId();
          await repo.insert(tx, {
            id: invoiceId,
            operatorId,
            customerId: c.customer.id,
            invoiceNumber: number,
            periodStart: c.start,
            periodEnd: c.end,
            issueDate: c.preview.issueDate,
            dueDate: c.preview.dueDate,
            paymentTermsDays: c.preview.paymentTermsDays,
            currency: c.customer.currency,
            subtotal: c.preview.subtotal,
            broughtForward: c.broughtForward.toString(),
            creditsApplied: c.credits.toString(),
            tax: c.tax.toString(),
            total: c.total.toString(),
            status: 'open',
            notes: i.notes ?? null,
            customerLabel: c.customer.label,
            billingProfile: {
              issuer: await deps.issuer(operatorId),
              billedTo: {
                label: c.customer.label,
                externalRef: c.customer.externalRef,
                email: c.customer.portalEmail,
              },
            },
            lines: c.preview.lines,
            countryBreakdown: c.preview.countryBreakdown,
            exclusions: i.excludeUnrated
              ? {
                  unrated: {
                    reason: i.excludeUnrated.reason,
                    records: c.unrated.length,
                    cdrIds: c.unrated.map((r) => r.id),
                  },
                }
              : null,
            preview: c.preview,
            reviewDigest: c.preview.provenance.digest,
            replacesInvoiceId: c.release?.id ?? null,
            createdAt: now,
            updatedAt: now,
          });
          await repo.claim(
            tx,
            invoiceId,
            c.rated.map((r) => r.id),
          );
          if (
            !(await repo.carry(
              tx,
              c.carried.map((x) => x.id),
              invoiceId,
            ))
          )
            throw new AppError('INVOICE_REVIEW_STALE', 'A brought-forward invoice changed since the preview');
          log.info({ operatorId, invoiceId, invoiceNumber: number, records: c.rated.length }, 'switch invoice issued');
          return invoiceId;
        });
        const inv = await own(sql, operatorId, id);
        return { ...(await detail(sql, inv)), reviewDigest: inv.reviewDigest, preview: inv.preview };
      } catch (err) {
        // The unique claim (or the number) taken by a concurrent issue that committed first.
        if ((err as { code?: unknown }).code === SqlState.UNIQUE_VIOLATION)
          throw new AppError('INVOICE_REVIEW_STALE', 'Another invoice claimed this usage since the preview');
        throw err;
      }
    },

    /** Voids an open invoice with no payment: claims released (the usage can be invoiced again), number kept. */
    async void(p: Principal, id: string, reason: string | null) {
      const now = clock.now();
      await sql.begin(async (tx) => {
        const inv = await own(tx, p.accountId, id, true);
        if (inv.status === 'void') throw ruleError('The invoice is void already');
        if (inv.status !== 'open' || Money.parse(inv.amountPaid).isPositive())
          throw ruleError('An invoice with a recorded payment cannot be voided');
        if (inv.carriedIntoId) throw ruleError('The invoice was brought forward into another invoice: void that one');
        await repo.void(tx, id, reason, now);
      });
      log.info({ operatorId: p.accountId, invoiceId: id }, 'switch invoice voided');
      return this.get(p.accountId, id);
    },

    /** E-mails the invoice with its PDF to `to` or the customer's portal e-mail; counts the send. */
    async send(p: Principal, id: string, to: string | undefined) {
      const inv = await own(sql, p.accountId, id);
      if (inv.status === 'void') throw ruleError('A void invoice cannot be sent');
      const customer = await customerOf(p.accountId, inv.customerId);
      const address = to ?? customer.portalEmail;
      if (!address) throw validationError([{ path: 'to', message: 'the customer has no e-mail address: give one' }]);
      const d = await detail(sql, inv);
      const pdf = await switchInvoicePdf(d);
      const mail = await deps.mailer.send({
        to: address,
        subject: `Invoice ${d.invoiceNumber} for ${d.periodStart.slice(0, 10)} to ${d.periodEnd.slice(0, 10)}`,
        text:
          `Invoice ${d.invoiceNumber} of ${d.issueDate} for ${d.customerLabel}: total ${d.total} ${d.currency}, ` +
          `due ${d.dueDate}. The invoice is attached as a PDF.\n`,
        attachments: [{ filename: `${d.invoiceNumber}.pdf`, content: pdf, contentType: 'application/pdf' }],
      });
      await repo.markSent(id, clock.now());
      return { ...(await this.get(p.accountId, id)), delivery: { via: mail.via, messageId: mail.messageId } };
    },

    /**
     * Records a payment against the invoice: `partial` until the total is covered, then `paid`; an
     * excess becomes credit for the customer's later invoices (`applyCredits`). Moves no money: the
     * usage was already paid from the customer's prepaid balance when each record settled.
     */
    async settle(p: Principal, id: string, s: SettleInput) {
      let amount: Money;
      try {
        amount = Money.parse(s.amount);
      } catch {
        throw validationError([{ path: 'amount', message: 'must be a money amount with at most 6 decimals' }]);
      }
      if (!amount.isPositive()) throw validationError([{ path: 'amount', message: 'must be more than 0' }]);
      const paidAt = s.paidAt ? parseInstant(s.paidAt, 'paidAt') : clock.now();
      const now = clock.now();
      await sql.begin(async (tx) => {
        const inv = await own(tx, p.accountId, id, true);
        if (inv.status === 'void') throw ruleError('A void invoice cannot be settled');
        if (inv.status === 'paid') throw ruleError('The invoice is paid already');
        const paid = amount.plus(inv.amountPaid);
        await repo.addPayment(
          tx,
          {
            id: newId(),
            invoiceId: id,
            amount: amount.toString(),
            method: s.method,
            reference: s.reference ?? null,
            paidAt,
          },
          paid.cmp(inv.total) >= 0 ? 'paid' : 'partial',
          now,
        );
      });
      log.info({ operatorId: p.accountId, invoiceId: id }, 'switch invoice payment recorded');
      return this.get(p.accountId, id);
    },

    /** The invoice as PDF, as it is sent. */
    async pdf(operatorId: string, id: string) {
      const d = await this.get(operatorId, id);
      return { invoiceNumber: d.invoiceNumber, pdf: await switchInvoicePdf(d) };
    },
  };
}

export type SwitchInvoices = ReturnType<typeof createSwitchInvoices>;
export type SwitchInvoiceDetail = Awaited<ReturnType<SwitchInvoices['get']>>;

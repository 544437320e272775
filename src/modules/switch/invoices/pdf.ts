import { identity, render, row } from '../../billing/pdf.js';

/** What the PDF prints of a Switch invoice (its detail). */
export interface InvoiceForPdf {
  invoiceNumber: string;
  issueDate: string;
  dueDate: string;
  periodStart: string;
  periodEnd: string;
  status: string;
  currency: string;
  subtotal: string;
  tax: string;
  total: string;
  amountPaid: string;
  broughtForward: string;
  creditsApplied: string;
  notes: string | null;
  billingProfile: Record<string, unknown>;
  lines: unknown[];
  payments: { amount: string; method: string; reference: string | null; paidAt: string }[];
}

interface PdfLine {
  description: string;
  unit: string;
  ratePerUnit: string;
  records: number;
  billedSeconds: number | null;
  segments: number | null;
  amount: string;
}

const asRecord = (v: unknown): Record<string, unknown> =>
  v !== null && typeof v === 'object' ? (v as Record<string, unknown>) : {};

/** The quantity column: minutes and seconds of voice, segments of SMS. */
const quantity = (l: PdfLine) =>
  l.unit === 'minute'
    ? `${l.records} calls, ${Math.floor((l.billedSeconds ?? 0) / 60)}m ${(l.billedSeconds ?? 0) % 60}s`
    : `${l.records} messages, ${l.segments ?? 0} segments`;

/** A Switch invoice as PDF, drawn with the billing module's renderer (pdfkit, built-in Helvetica). */
export function switchInvoicePdf(inv: InvoiceForPdf): Promise<Buffer> {
  return render(inv.invoiceNumber, (doc) => {
    const profile = inv.billingProfile;
    doc.fontSize(20).text('Invoice', { align: 'right' });
    doc.fontSize(10).text(inv.invoiceNumber, { align: 'right' });
    doc.moveDown();
    doc.fontSize(11);
    for (const line of identity(asRecord(profile['issuer']))) doc.text(line);
    doc.moveDown();
    doc.fontSize(9).text('Billed to');
    doc.fontSize(11);
    for (const line of identity(asRecord(profile['billedTo']))) doc.text(line);
    doc.moveDown();
    row(doc, `Issue date: ${inv.issueDate}`, `Status: ${inv.status.toUpperCase()}`);
    row(doc, `Period: ${inv.periodStart} to ${inv.periodEnd}`, `Due: ${inv.dueDate}`);
    doc.moveDown();
    doc.fontSize(10);
    row(doc, 'Description', `Amount (${inv.currency})`);
    doc.moveTo(50, doc.y).lineTo(545, doc.y).stroke();
    for (const l of inv.lines as PdfLine[])
      row(doc, `${l.description}: ${quantity(l)} at ${l.ratePerUnit} per ${l.unit}`, l.amount);
    doc.moveDown();
    row(doc, 'Usage', inv.subtotal);
    if (inv.broughtForward !== '0.000000') row(doc, 'Brought forward', inv.broughtForward);
    if (inv.creditsApplied !== '0.000000') row(doc, 'Credits applied', `-${inv.creditsApplied}`);
    row(doc, 'Tax', inv.tax);
    row(doc, 'Total', inv.total);
    row(doc, 'Paid', inv.amountPaid);
    if (inv.payments.length > 0) {
      doc.moveDown();
      doc.fontSize(8);
      for (const p of inv.payments)
        doc.text(`Paid ${p.amount} on ${p.paidAt} by ${p.method}${p.reference ? ` (${p.reference})` : ''}.`);
    }
    if (inv.notes) {
      doc.moveDown();
      doc.fontSize(9).text(inv.notes);
    }
  });
}

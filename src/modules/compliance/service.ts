import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { AppError, conflict, notFound, ruleError, validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { cleanFileName, decodeBase64, sniffType, type FileStore } from '../../platform/file-store.js';
import { newId } from '../../platform/ids.js';
import { emit } from '../../webhooks/emit.js';
import {
  createComplianceRepo,
  type DocumentKind,
  type KycDetails,
  type KycDocumentRow,
  type KycRow,
  type KycStatus,
} from './repo.js';

const documentOut = (d: KycDocumentRow) => ({
  id: d.id,
  kind: d.kind,
  fileName: d.fileName,
  contentType: d.contentType,
  sizeBytes: d.sizeBytes,
  sha256: d.sha256,
  createdAt: d.createdAt.toISOString(),
});

const recordOut = (accountId: string, r: KycRow | undefined, docs: KycDocumentRow[]) => ({
  accountId,
  status: r?.status ?? ('unverified' as KycStatus),
  subjectType: r?.subjectType ?? null,
  legalName: r?.legalName ?? null,
  countryCode: r?.countryCode ?? null,
  address: r?.address ?? null,
  dateOfBirth: r?.dateOfBirth ?? null,
  registrationNumber: r?.registrationNumber ?? null,
  submittedAt: r?.submittedAt?.toISOString() ?? null,
  reviewedAt: r?.reviewedAt?.toISOString() ?? null,
  rejectionReason: r?.rejectionReason ?? null,
  documents: docs.map(documentOut),
});

/**
 * Identity verification (KYC): an account fills in who it is, uploads documents (kept under
 * `<state>/kyc/`), submits, and an operator approves or rejects. `isVerified` and
 * `requireVerified` are the gate number purchases and payouts ask (KYC_REQUIRED).
 */
export function createComplianceService(deps: {
  sql: Sql;
  config: Readonly<Config>;
  clock: Clock;
  log: Logger;
  files: FileStore;
  /** The account's parent: a sub-account is verified through its reseller. */
  parentOf: (accountId: string) => Promise<string | null>;
}) {
  const { sql, config, clock, log, files } = deps;
  const repo = createComplianceRepo(sql);

  async function own(accountId: string) {
    return recordOut(accountId, await repo.record(accountId), await repo.documents(accountId));
  }

  const service = {
    /** Whether the account (or, for a sub-account, its reseller) passed identity verification. */
    async isVerified(accountId: string): Promise<boolean> {
      const holder = (await deps.parentOf(accountId)) ?? accountId;
      return (await repo.record(holder))?.status === 'verified';
    },

    /** 403 KYC_REQUIRED when `[compliance] enforce_kyc` is on and the account is not verified. */
    async requireVerified(accountId: string): Promise<void> {
      if (!config.compliance.enforce_kyc || (await service.isVerified(accountId))) return;
      throw new AppError(
        'KYC_REQUIRED',
        'Identity verification is required first: submit it with PUT /compliance/kyc and wait for the review',
      );
    },

    get: own,

    /** Changes the details; `submit` sends the record for review (it needs at least one document). */
    async update(accountId: string, details: KycDetails, submit: boolean) {
      const now = clock.now();
      await sql.begin(async (tx) => {
        const rec = await repo.lockRecord(accountId, now, tx);
        if (rec.status === 'pending')
          throw conflict('The verification is under review; it cannot change until the decision');
        if (rec.status === 'verified')
          throw conflict('The account is verified; contact support to change its identity');
        await repo.updateDetails(accountId, details, now, tx);
        if (!submit) return;
        const merged = (await repo.record(accountId, tx))!;
        const missing: { path: string; message: string }[] = [];
        for (const f of ['subjectType', 'legalName', 'countryCode', 'address'] as const)
          if (!merged[f]) missing.push({ path: f, message: 'is required to submit' });
        if (merged.subjectType === 'individual' && !merged.dateOfBirth)
          missing.push({ path: 'dateOfBirth', message: 'is required to submit for an individual' });
        if (merged.subjectType === 'business' && !merged.registrationNumber)
          missing.push({ path: 'registrationNumber', message: 'is required to submit for a business' });
        if (missing.length) throw validationError(missing, 'The verification is incomplete');
        if ((await repo.documents(accountId, tx)).length === 0)
          throw ruleError('Upload at least one identity document before submitting');
        await repo.setStatus(accountId, { status: 'pending', now, submitted: true }, tx);
      });
      if (submit) log.info({ accountId }, 'identity verification submitted');
      return own(accountId);
    },

    /** Stores one document after checking its size and, by its bytes, its type. */
    async addDocument(accountId: string, input: { kind: DocumentKind; fileName: string; contentBase64: string }) {
      const bytes = decodeBase64(input.contentBase64);
      if (!bytes || bytes.length === 0)
        throw validationError([{ path: 'contentBase64', message: 'must be non-empty standard base64' }]);
      if (bytes.length > config.compliance.max_document_bytes)
        throw validationError([
          { path: 'contentBase64', message: `must decode to at most ${config.compliance.max_document_bytes} bytes` },
        ]);
      const type = sniffType(bytes);
      if (type !== 'application/pdf' && type !== 'image/png' && type !== 'image/jpeg' && type !== 'image/webp')
        throw validationError([{ path: 'contentBase64', message: 'must be a PDF, PNG, JPEG or WebP file' }]);
      const id = newId();
      const now = clock.now();
      const stored = await files.save(accountId, id, bytes);
      try {
        await sql.begin(async (tx) => {
          const rec = await repo.lockRecord(accountId, now, tx);
          if (rec.status === 'pending' || rec.status === 'verified')
            throw conflict(`Documents cannot be added while the verification is ${rec.status}`);
          if ((await repo.documents(accountId, tx)).length >= config.compliance.max_documents)
            throw ruleError(`At most ${config.compliance.max_documents} documents per account`);
          await repo.insertDocument(
            {
              id,
              accountId,
              kind: input.kind,
              fileName: cleanFileName(input.fileName),
              contentType: type,
              sizeBytes: bytes.length,
              sha256: stored.sha256,
              storageKey: stored.key,
              now,
            },
            tx,
          );
        });
      } catch (err) {
        await files.remove(stored.key);
        throw err;
      }
      return documentOut((await repo.document(id))!);
    },

    /** A document's bytes for its owner or an operator. */
    async readDocument(id: string, viewer: { accountId: string; operator: boolean }) {
      const doc = await repo.document(id);
      if (!doc || (!viewer.operator && doc.accountId !== viewer.accountId)) throw notFound('Document');
      return { doc: documentOut(doc), bytes: await files.read(doc.storageKey) };
    },

    async queue(q: { status: KycStatus; cursor?: string | undefined; limit: number }) {
      const rows = await repo.queue(q);
      return Promise.all(
        rows.map(async (r) => ({
          ...recordOut(r.accountId, r, await repo.documents(r.accountId)),
          id: r.id,
          email: r.email,
        })),
      );
    },

    /** An operator's decision on a submitted verification; the account hears of it through its event. */
    async review(accountId: string, reviewerId: string, decision: 'approve' | 'reject', reason: string | null) {
      if (decision === 'reject' && !reason)
        throw validationError([{ path: 'reason', message: 'is required to reject' }]);
      const now = clock.now();
      await sql.begin(async (tx) => {
        const current = await repo.lockExisting(accountId, tx);
        if (!current) throw notFound('Verification');
        if (current.status !== 'pending') throw conflict(`The verification is ${current.status}, not pending review`);
        const status = decision === 'approve' ? 'verified' : 'rejected';
        await repo.setStatus(accountId, { status, now, reviewerId, reason }, tx);
        await repo.insertReview({ id: newId(), accountId, decision, reason, reviewerId, now }, tx);
        await emit(tx, {
          accountId,
          event: decision === 'approve' ? 'kyc.verified' : 'kyc.rejected',
          data: { accountId, status, reason, reviewedAt: now.toISOString() },
          at: now,
        });
      });
      log.info({ accountId, reviewerId, decision }, 'identity verification reviewed');
      return own(accountId);
    },
  };
  return service;
}

export type ComplianceService = ReturnType<typeof createComplianceService>;

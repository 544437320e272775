import { Type } from 'typebox';
import type { Access, Principal } from '../../http/access.js';
import type { App } from '../../http/app.js';
import { DateTime, Money, Nullable, Ok, ok, Uuid } from '../../http/envelope.js';
import type { AuditActor } from '../account-profile/audit.js';
import type { DataExports } from './data-export.js';
import type { AccountDeletion } from './deletion.js';
import type { Devices } from './devices.js';

const tags = ['Account'];
// The account holder's own session: the password confirms, the login's devices are its own.
const holder: { access: Access } = { access: { auth: 'session' } };
// The whole account's data leaves: the holder or an owner member.
const owners: { access: Access } = { access: { auth: 'session', roles: ['owner'] } };
const IdParams = Type.Object({ id: Uuid() });
const actor = (p: Principal, ip: string): AuditActor => ({
  actorId: p.member?.id ?? p.accountId,
  credential: 'session',
  ip,
});

const Refusal = Type.Object({ code: Type.String(), message: Type.String() });
const Preview = Type.Object({
  deletable: Type.Boolean(),
  refusals: Type.Array(Refusal),
  balance: Money('own balance (holds excluded) at this moment'),
  forfeited: Money('what the closing entry would take to platform revenue'),
  testCreditLost: Money(),
  numbersReleased: Type.Integer(),
  purchasesCancelled: Type.Integer(),
  graceDays: Type.Integer(),
});
const Deletion = Type.Object({
  id: Uuid(),
  state: Type.Union([Type.Literal('scheduled'), Type.Literal('cancelled'), Type.Literal('completed')]),
  forfeitBalance: Type.Boolean(),
  reason: Nullable(Type.String()),
  requestedAt: DateTime(),
  scheduledFor: DateTime(),
  cancelledAt: Nullable(DateTime()),
  completedAt: Nullable(DateTime()),
  blockedReason: Nullable(Type.String({ description: 'why the sweep at `scheduledFor` could not go ahead yet' })),
  outcome: Nullable(Type.Object({}, { additionalProperties: true })),
});
const Export = Type.Object({
  id: Uuid(),
  state: Type.Union([Type.Literal('running'), Type.Literal('completed'), Type.Literal('failed')]),
  sizeBytes: Nullable(Type.Integer()),
  sha256: Nullable(Type.String()),
  files: Nullable(Type.Record(Type.String(), Type.Integer(), { description: 'rows in each file of the archive' })),
  error: Nullable(Type.String()),
  createdAt: DateTime(),
  completedAt: Nullable(DateTime()),
  expiresAt: DateTime(),
  downloadUrl: Nullable(Type.String()),
});
const Device = Type.Object({
  id: Uuid(),
  name: Type.String(),
  userAgent: Nullable(Type.String()),
  trusted: Type.Boolean(),
  trustedAt: Nullable(DateTime()),
  lastIp: Nullable(Type.String()),
  lastSeenAt: DateTime(),
  firstSeenAt: DateTime(),
  sessions: Type.Integer(),
  current: Type.Boolean({ description: 'the device of the session making this request' }),
});

export function accountLifecycleRoutes(s: { deletion: AccountDeletion; exports: DataExports; devices: Devices }) {
  return (app: App) => {
    app.get(
      '/account/deletion/preview',
      {
        config: holder,
        schema: {
          tags,
          summary: 'What deleting the account would do now, and what stops it',
          description:
            'Read live: refusals (negative balance, live calls, a pending payout, open sub-accounts, unpaid seller ' +
            'earnings, a positive balance not given up) and what happens to the money, numbers and purchases.',
          response: { 200: Ok(Preview) },
        },
      },
      async (req) => ok(await s.deletion.preview(req.principal!.accountId)),
    );

    app.post(
      '/account/deletion',
      {
        config: { ...holder, rateLimit: { points: 5, seconds: 3600 } },
        schema: {
          tags,
          summary: 'Schedule the deletion of the account (the holder, with the password)',
          description:
            'Carried out after `[account] deletion_grace_days` (7) unless cancelled: purchases cancelled, numbers ' +
            'released, the remaining balance forfeited to the platform by a closing ledger entry (only with ' +
            '`forfeitBalance: true`), memberships ended, the login closed and its address freed. Refused (409, each ' +
            'reason in `details`) while the preview shows refusals; checked again when it is carried out.',
          body: Type.Object(
            {
              password: Type.String({ minLength: 1, maxLength: 200 }),
              forfeitBalance: Type.Optional(Type.Boolean()),
              reason: Type.Optional(Type.String({ maxLength: 1000 })),
            },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Type.Object({ ...Deletion.properties, preview: Preview })) },
        },
      },
      async (req, reply) => {
        reply.code(201);
        return ok(await s.deletion.schedule(req.principal!.accountId, actor(req.principal!, req.ip), req.body));
      },
    );

    app.get(
      '/account/deletion',
      {
        config: holder,
        schema: { tags, summary: 'The scheduled (or latest) deletion', response: { 200: Ok(Deletion) } },
      },
      async (req) => ok(await s.deletion.get(req.principal!.accountId)),
    );

    app.delete(
      '/account/deletion',
      {
        config: holder,
        schema: { tags, summary: 'Cancel the scheduled deletion', response: { 200: Ok(Deletion) } },
      },
      async (req) => ok(await s.deletion.cancel(req.principal!.accountId, actor(req.principal!, req.ip))),
    );

    app.post(
      '/account/exports',
      {
        config: { ...owners, rateLimit: { points: 5, seconds: 3600 } },
        schema: {
          tags,
          summary: "Export the account's data (a ZIP of JSON files)",
          description:
            '202 with the job; when it completes, `account.export_completed` is emitted and the archive can be ' +
            'downloaded until `expiresAt` (`[account] export_keep_days`). One export runs at a time (409).',
          response: { 202: Ok(Export) },
        },
      },
      async (req, reply) => {
        const p = req.principal!;
        return reply.code(202).send(ok(await s.exports.create(p.accountId, p.member?.id ?? p.accountId)));
      },
    );

    app.get(
      '/account/exports',
      {
        config: owners,
        schema: { tags, summary: 'Data exports, newest first (25)', response: { 200: Ok(Type.Array(Export)) } },
      },
      async (req) => ok(await s.exports.list(req.principal!.accountId)),
    );

    app.get(
      '/account/exports/:id',
      { config: owners, schema: { tags, summary: 'One data export', params: IdParams, response: { 200: Ok(Export) } } },
      async (req) => ok(await s.exports.get(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/account/exports/:id/download',
      {
        config: owners,
        schema: {
          tags,
          summary: 'Download a completed export (application/zip); 409 until completed',
          params: IdParams,
          produces: ['application/zip'],
        },
      },
      async (req, reply) => {
        const f = await s.exports.download(req.principal!.accountId, req.params.id);
        return reply
          .type('application/zip')
          .header('content-disposition', `attachment; filename="${f.name}"`)
          .header('cache-control', 'no-store')
          .header('x-content-type-options', 'nosniff')
          .send(f.stream);
      },
    );

    app.delete(
      '/account/exports/:id',
      {
        config: owners,
        schema: {
          tags,
          summary: 'Delete an export and its archive before it expires',
          params: IdParams,
          response: { 200: Ok(Type.Object({ id: Uuid(), deleted: Type.Boolean() })) },
        },
      },
      async (req) => ok(await s.exports.remove(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/account/devices',
      {
        config: holder,
        schema: {
          tags,
          summary: "The login's devices: its live sessions grouped by user agent",
          response: { 200: Ok(Type.Array(Device)) },
        },
      },
      async (req) => ok(await s.devices.list(req.principal!.accountId, req.principal!.credentialId)),
    );

    app.patch(
      '/account/devices/:id',
      {
        config: holder,
        schema: {
          tags,
          summary: 'Name a device or mark it trusted',
          params: IdParams,
          body: Type.Object(
            {
              name: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 80 }))),
              trusted: Type.Optional(Type.Boolean()),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Device) },
        },
      },
      async (req) =>
        ok(await s.devices.update(req.principal!.accountId, req.params.id, req.principal!.credentialId, req.body)),
    );

    app.delete(
      '/account/devices/:id',
      {
        config: holder,
        schema: {
          tags,
          summary: "Sign a device out: its sessions end at once (409 for the current session's device)",
          params: IdParams,
          response: { 200: Ok(Type.Object({ id: Uuid(), endedSessions: Type.Integer() })) },
        },
      },
      async (req) => ok(await s.devices.end(req.principal!.accountId, req.params.id, req.principal!.credentialId)),
    );
  };
}

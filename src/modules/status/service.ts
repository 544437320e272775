import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import type { Sql } from '../../db/connection.js';
import { conflict, notFound, validationError } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import type { HealthRegistry } from '../../platform/health.js';
import { newId, randomToken } from '../../platform/ids.js';
import type { Mailer } from '../../platform/mailer.js';
import {
  createStatusRepo,
  type Impact,
  type IncidentKind,
  type IncidentRow,
  type IncidentStatus,
  type UpdateRow,
} from './repo.js';

/** The components of the status page and the readiness probe each is read from. */
export const COMPONENTS = [
  { id: 'api', name: 'REST API', probe: 'http' },
  { id: 'sip', name: 'SIP voice', probe: 'sip' },
  { id: 'smpp', name: 'SMPP messaging', probe: 'smpp' },
  { id: 'media', name: 'Media (RTP)', probe: 'media' },
  { id: 'database', name: 'Database', probe: 'database' },
] as const;
export const COMPONENT_IDS = COMPONENTS.map((c) => c.id);

export type ComponentStatus =
  'operational' | 'degraded_performance' | 'partial_outage' | 'major_outage' | 'under_maintenance' | 'unknown';
const SEVERITY: Record<ComponentStatus, number> = {
  operational: 0,
  unknown: 1,
  under_maintenance: 2,
  degraded_performance: 3,
  partial_outage: 4,
  major_outage: 5,
};
const IMPACT_STATUS: Record<Impact, ComponentStatus> = {
  none: 'operational',
  minor: 'degraded_performance',
  major: 'partial_outage',
  critical: 'major_outage',
  maintenance: 'under_maintenance',
};
const INCIDENT_STATUSES: readonly IncidentStatus[] = ['investigating', 'identified', 'monitoring', 'resolved'];
const MAINTENANCE_STATUSES: readonly IncidentStatus[] = ['scheduled', 'in_progress', 'completed'];
const CLOSING: readonly IncidentStatus[] = ['resolved', 'completed'];

const utcDay = (d: Date) => d.toISOString().slice(0, 10);

const incidentOut = (r: IncidentRow, updates: UpdateRow[]) => ({
  id: r.id,
  kind: r.kind,
  title: r.title,
  status: r.status,
  impact: r.impact,
  components: r.components,
  startsAt: r.startsAt.toISOString(),
  endsAt: r.endsAt?.toISOString() ?? null,
  resolvedAt: r.resolvedAt?.toISOString() ?? null,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
  updates: updates
    .filter((u) => u.incidentId === r.id)
    .map((u) => ({ id: u.id, status: u.status, message: u.message, createdAt: u.createdAt.toISOString() })),
});
export type IncidentView = ReturnType<typeof incidentOut>;

/**
 * The status page: live component health from the readiness probes combined with the incidents
 * and maintenance windows operators post, uptime by day from periodic samples, and e-mail updates
 * to confirmed subscribers.
 */
export function createStatusService(deps: {
  sql: Sql;
  config: Readonly<Config>;
  clock: Clock;
  log: Logger;
  health: HealthRegistry;
  mailer: Mailer;
}) {
  const { sql, clock, log, health, mailer } = deps;
  const repo = createStatusRepo(sql);

  /** An incident counts while open and started; a maintenance inside its window, or once marked in progress. */
  const inEffect = (r: IncidentRow, now: Date) =>
    r.resolvedAt === null &&
    (r.status === 'in_progress' ||
      (r.startsAt <= now && (r.kind === 'incident' || r.endsAt === null || r.endsAt > now)));

  async function withUpdates(rows: IncidentRow[]) {
    const updates = await repo.updatesOf(rows.map((r) => r.id));
    return rows.map((r) => incidentOut(r, updates));
  }

  function notifySubscribers(incident: IncidentView, message: string) {
    void (async () => {
      const subs = await repo.subscribers();
      for (const s of subs) {
        await mailer.send({
          to: s.email,
          subject: `[${incident.kind === 'maintenance' ? 'Maintenance' : 'Incident'}] ${incident.title}: ${incident.status.replace('_', ' ')}`,
          text:
            `${message}\n\nAffected: ${incident.components.join(', ')}\nStatus: ${incident.status}\n` +
            `${mailer.link('/status')}\n\nUnsubscribe: ${mailer.link(`/status/unsubscribe?token=${s.token}`)}\n`,
        });
      }
    })().catch((err: unknown) => log.error({ err, incidentId: incident.id }, 'status update e-mails failed'));
  }

  return {
    async components() {
      const now = clock.now();
      const [live, open] = await Promise.all([health.report(), repo.open()]);
      const effective = open.filter((r) => inEffect(r, now));
      const components = COMPONENTS.map((c) => {
        const probe = live[c.probe];
        let status: ComponentStatus = probe === undefined ? 'unknown' : probe.ok ? 'operational' : 'major_outage';
        const incidents = effective.filter((r) => r.components.includes(c.id));
        for (const r of incidents) {
          const s = IMPACT_STATUS[r.impact];
          if (SEVERITY[s] > SEVERITY[status]) status = s;
        }
        return {
          id: c.id,
          name: c.name,
          status,
          live: probe === undefined ? null : { ok: probe.ok },
          incidentIds: incidents.map((r) => r.id),
        };
      });
      const worst = Math.max(...components.map((c) => SEVERITY[c.status]));
      const indicator: 'none' | 'maintenance' | 'minor' | 'major' | 'critical' =
        worst >= 5 ? 'critical' : worst >= 4 ? 'major' : worst >= 3 ? 'minor' : worst === 2 ? 'maintenance' : 'none';
      const description = {
        none: 'All systems operational',
        maintenance: 'Maintenance in progress',
        minor: 'Degraded performance',
        major: 'Partial outage',
        critical: 'Major outage',
      }[indicator];
      return { indicator, description, updatedAt: now.toISOString(), components };
    },

    /** One sample of every component's live health into today's uptime (run on a timer). */
    async sample() {
      const live = await health.report();
      const samples = COMPONENTS.filter((c) => live[c.probe] !== undefined).map((c) => ({
        component: c.id,
        ok: live[c.probe]!.ok,
      }));
      await repo.addSamples(utcDay(clock.now()), samples);
    },

    async uptime(days: number) {
      const now = clock.now();
      const dates = Array.from({ length: days }, (_, i) =>
        utcDay(new Date(now.getTime() - (days - 1 - i) * 86400_000)),
      );
      const rows = await repo.uptime(dates[0]!);
      return {
        days,
        components: COMPONENTS.map((c) => {
          const mine = new Map(rows.filter((r) => r.component === c.id).map((r) => [r.day, r]));
          const total = [...mine.values()].reduce((a, r) => a + r.samples, 0);
          const ok = [...mine.values()].reduce((a, r) => a + r.okSamples, 0);
          return {
            id: c.id,
            name: c.name,
            uptimePct: total ? Math.round((ok / total) * 100_000) / 1000 : null,
            points: dates.map((date) => {
              const r = mine.get(date);
              return {
                date,
                uptimePct: r ? Math.round((r.okSamples / r.samples) * 100_000) / 1000 : null,
                samples: r?.samples ?? 0,
              };
            }),
          };
        }),
      };
    },

    async incidents(q: {
      kind?: IncidentKind | undefined;
      state?: 'active' | 'upcoming' | 'resolved' | undefined;
      cursor?: string | undefined;
      limit: number;
    }) {
      return withUpdates(await repo.incidents({ ...q, now: clock.now() }));
    },

    async createIncident(
      operatorId: string,
      input: {
        kind: IncidentKind;
        title: string;
        message: string;
        impact?: Impact | undefined;
        components: string[];
        status?: IncidentStatus | undefined;
        startsAt?: string | undefined;
        endsAt?: string | undefined;
      },
    ) {
      const now = clock.now();
      const problems: { path: string; message: string }[] = [];
      const unknown = input.components.filter((c) => !COMPONENT_IDS.includes(c as never));
      if (unknown.length)
        problems.push({
          path: 'components',
          message: `unknown: ${unknown.join(', ')} (known: ${COMPONENT_IDS.join(', ')})`,
        });
      const allowed = input.kind === 'incident' ? INCIDENT_STATUSES : MAINTENANCE_STATUSES;
      const status = input.status ?? allowed[0]!;
      if (!allowed.includes(status) || CLOSING.includes(status))
        problems.push({
          path: 'status',
          message: `must be one of ${allowed.filter((s) => !CLOSING.includes(s)).join(', ')}`,
        });
      const startsAt = input.startsAt ? new Date(input.startsAt) : now;
      const endsAt = input.endsAt ? new Date(input.endsAt) : null;
      if (input.kind === 'maintenance') {
        if (!input.startsAt) problems.push({ path: 'startsAt', message: 'is required for a maintenance window' });
        if (!endsAt) problems.push({ path: 'endsAt', message: 'is required for a maintenance window' });
        if (input.impact && input.impact !== 'maintenance')
          problems.push({ path: 'impact', message: 'a maintenance window has impact maintenance' });
      } else if (input.impact === 'maintenance')
        problems.push({ path: 'impact', message: 'is for maintenance windows' });
      if (endsAt && endsAt <= startsAt) problems.push({ path: 'endsAt', message: 'must be after startsAt' });
      if (problems.length) throw validationError(problems);
      const id = newId();
      await sql.begin(async (tx) => {
        await repo.insertIncident(
          {
            id,
            kind: input.kind,
            title: input.title,
            status,
            impact: input.kind === 'maintenance' ? 'maintenance' : (input.impact ?? 'minor'),
            components: input.components,
            startsAt,
            endsAt,
            createdAt: now,
            createdBy: operatorId,
          },
          tx,
        );
        await repo.insertUpdate(
          { id: newId(), incidentId: id, status, message: input.message, createdAt: now, createdBy: operatorId },
          tx,
        );
      });
      const [out] = await withUpdates([(await repo.byId(id))!]);
      log.info({ incidentId: id, kind: input.kind, operatorId }, 'status incident posted');
      notifySubscribers(out!, input.message);
      return out!;
    },

    async postUpdate(
      operatorId: string,
      id: string,
      input: { status: IncidentStatus; message: string; impact?: Impact | undefined; endsAt?: string | undefined },
    ) {
      const now = clock.now();
      await sql.begin(async (tx) => {
        const r = await repo.lockIncident(id, tx);
        if (!r) throw notFound('Incident');
        if (r.resolvedAt) throw conflict(`This ${r.kind} is ${r.status}; post a new one`);
        const allowed = r.kind === 'incident' ? INCIDENT_STATUSES : MAINTENANCE_STATUSES;
        if (!allowed.includes(input.status))
          throw validationError([{ path: 'status', message: `must be one of ${allowed.join(', ')}` }]);
        if (input.impact && (r.kind === 'maintenance') !== (input.impact === 'maintenance'))
          throw validationError([
            {
              path: 'impact',
              message:
                r.kind === 'maintenance' ? 'a maintenance window has impact maintenance' : 'is for maintenance windows',
            },
          ]);
        const endsAt = input.endsAt
          ? new Date(input.endsAt)
          : CLOSING.includes(input.status) && r.kind === 'incident'
            ? now
            : r.endsAt;
        await repo.updateIncident(
          id,
          {
            status: input.status,
            impact: input.impact ?? r.impact,
            endsAt,
            resolvedAt: CLOSING.includes(input.status) ? now : null,
            now,
          },
          tx,
        );
        await repo.insertUpdate(
          {
            id: newId(),
            incidentId: id,
            status: input.status,
            message: input.message,
            createdAt: now,
            createdBy: operatorId,
          },
          tx,
        );
      });
      const [out] = await withUpdates([(await repo.byId(id))!]);
      notifySubscribers(out!, input.message);
      return out!;
    },

    /** Double opt-in: the e-mail carries the link that confirms (and later ends) the subscription. */
    async subscribe(email: string) {
      const existing = await repo.activeSubscription(email);
      const sub =
        existing ??
        (await repo.insertSubscription({ id: newId(), email, token: randomToken(40), now: clock.now() })) ??
        (await repo.activeSubscription(email));
      if (!sub) return;
      void mailer
        .send({
          to: email,
          subject: 'Confirm your status updates subscription',
          text:
            `Confirm that you want e-mails about incidents and maintenance:\n${mailer.link(`/status/confirm?token=${sub.token}`)}\n\n` +
            `Or send { "token": "${sub.token}", "action": "confirm" } to POST /api/v1/status/subscriptions/manage.\n` +
            `If you did not ask for this, ignore this e-mail.\n`,
        })
        .catch((err: unknown) => log.error({ err }, 'status subscription e-mail failed'));
    },

    async manageSubscription(token: string, action: 'confirm' | 'unsubscribe') {
      const now = clock.now();
      if (action === 'confirm') {
        const r = await repo.confirm(token, now);
        if (!r) throw notFound('Subscription');
        return { subscribed: true, confirmedAt: r.confirmedAt.toISOString() };
      }
      if (!(await repo.unsubscribe(token, now))) throw notFound('Subscription');
      return { subscribed: false, confirmedAt: null };
    },
  };
}

export type StatusService = ReturnType<typeof createStatusService>;

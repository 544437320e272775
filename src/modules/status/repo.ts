import type { Db } from '../../db/connection.js';

export type IncidentKind = 'incident' | 'maintenance';
export type IncidentStatus =
  'investigating' | 'identified' | 'monitoring' | 'resolved' | 'scheduled' | 'in_progress' | 'completed';
export type Impact = 'none' | 'minor' | 'major' | 'critical' | 'maintenance';

export interface IncidentRow {
  id: string;
  kind: IncidentKind;
  title: string;
  status: IncidentStatus;
  impact: Impact;
  components: string[];
  startsAt: Date;
  endsAt: Date | null;
  resolvedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface UpdateRow {
  id: string;
  incidentId: string;
  status: string;
  message: string;
  createdAt: Date;
}

export function createStatusRepo(db: Db) {
  return {
    async addSamples(day: string, samples: { component: string; ok: boolean }[]) {
      const values = samples.map((s) => ({ component: s.component, day, samples: 1, ok_samples: s.ok ? 1 : 0 }));
      if (values.length === 0) return;
      await db`
        insert into status_uptime_daily ${db(values, 'component', 'day', 'samples', 'ok_samples')}
        on conflict (component, day) do update set samples = status_uptime_daily.samples + 1,
          ok_samples = status_uptime_daily.ok_samples + excluded.ok_samples`;
    },
    async uptime(from: string) {
      return db<{ component: string; day: string; samples: number; okSamples: number }[]>`
        select component, to_char(day, 'YYYY-MM-DD') as day, samples, ok_samples from status_uptime_daily
        where day >= ${from}::date order by day`;
    },

    async insertIncident(r: Omit<IncidentRow, 'updatedAt' | 'resolvedAt'> & { createdBy: string }, tx: Db) {
      await tx`
        insert into status_incidents (id, kind, title, status, impact, components, starts_at, ends_at, created_by, created_at, updated_at)
        values (${r.id}, ${r.kind}, ${r.title}, ${r.status}, ${r.impact}, ${r.components}, ${r.startsAt}, ${r.endsAt},
                ${r.createdBy}, ${r.createdAt}, ${r.createdAt})`;
    },
    async lockIncident(id: string, tx: Db): Promise<IncidentRow | undefined> {
      const [row] = await tx<IncidentRow[]>`select * from status_incidents where id = ${id} for update`;
      return row;
    },
    async updateIncident(
      id: string,
      c: { status: IncidentStatus; impact: Impact; endsAt: Date | null; resolvedAt: Date | null; now: Date },
      tx: Db,
    ) {
      await tx`
        update status_incidents set status = ${c.status}, impact = ${c.impact}, ends_at = ${c.endsAt},
          resolved_at = ${c.resolvedAt}, updated_at = ${c.now}
        where id = ${id}`;
    },
    async insertUpdate(u: UpdateRow & { createdBy: string }, tx: Db) {
      await tx`
        insert into status_incident_updates (id, incident_id, status, message, created_by, created_at)
        values (${u.id}, ${u.incidentId}, ${u.status}, ${u.message}, ${u.createdBy}, ${u.createdAt})`;
    },
    async incidents(q: {
      kind?: IncidentKind | undefined;
      state?: 'active' | 'upcoming' | 'resolved' | undefined;
      now: Date;
      cursor?: string | undefined;
      limit: number;
    }): Promise<IncidentRow[]> {
      const state =
        q.state === 'active'
          ? db`and resolved_at is null and starts_at <= ${q.now}`
          : q.state === 'upcoming'
            ? db`and resolved_at is null and starts_at > ${q.now}`
            : q.state === 'resolved'
              ? db`and resolved_at is not null`
              : db``;
      return db<IncidentRow[]>`
        select id, kind, title, status, impact, components, starts_at, ends_at, resolved_at, created_at, updated_at
        from status_incidents
        where true ${q.kind ? db`and kind = ${q.kind}` : db``} ${state} ${q.cursor ? db`and id < ${q.cursor}` : db``}
        order by id desc limit ${q.limit + 1}`;
    },
    async byId(id: string): Promise<IncidentRow | undefined> {
      const [row] = await db<IncidentRow[]>`
        select id, kind, title, status, impact, components, starts_at, ends_at, resolved_at, created_at, updated_at
        from status_incidents where id = ${id}`;
      return row;
    },
    async open(): Promise<IncidentRow[]> {
      return db<IncidentRow[]>`
        select id, kind, title, status, impact, components, starts_at, ends_at, resolved_at, created_at, updated_at
        from status_incidents where resolved_at is null order by starts_at`;
    },
    async updatesOf(ids: string[]): Promise<UpdateRow[]> {
      if (ids.length === 0) return [];
      return db<UpdateRow[]>`
        select id, incident_id, status, message, created_at from status_incident_updates
        where incident_id = any (${ids}::uuid[]) order by id desc`;
    },

    async activeSubscription(email: string) {
      const [row] = await db<{ id: string; token: string; confirmedAt: Date | null }[]>`
        select id, token, confirmed_at from status_subscriptions where lower(email) = lower(${email}) and unsubscribed_at is null`;
      return row;
    },
    async insertSubscription(s: { id: string; email: string; token: string; now: Date }) {
      const [row] = await db<{ id: string; token: string }[]>`
        insert into status_subscriptions (id, email, token, created_at) values (${s.id}, ${s.email}, ${s.token}, ${s.now})
        on conflict do nothing returning id, token`;
      return row;
    },
    async confirm(token: string, now: Date) {
      const [row] = await db<{ email: string; confirmedAt: Date }[]>`
        update status_subscriptions set confirmed_at = coalesce(confirmed_at, ${now})
        where token = ${token} and unsubscribed_at is null returning email, confirmed_at`;
      return row;
    },
    async unsubscribe(token: string, now: Date) {
      const [row] = await db<{ email: string }[]>`
        update status_subscriptions set unsubscribed_at = ${now}
        where token = ${token} and unsubscribed_at is null returning email`;
      return row;
    },
    async subscribers(): Promise<{ email: string; token: string }[]> {
      return db`select email, token from status_subscriptions where confirmed_at is not null and unsubscribed_at is null order by id`;
    },
  };
}

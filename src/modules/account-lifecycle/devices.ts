import { conflict, notFound } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import type { AccountsService } from '../accounts/service.js';
import type { DeviceRow, LifecycleRepo } from './repo.js';

/** A readable name from a user agent when the login gave none: "Firefox on Linux". */
export function deviceName(userAgent: string | null): string {
  if (!userAgent) return 'Unknown device';
  const browser = /Edg\//.test(userAgent)
    ? 'Edge'
    : /Firefox\//.test(userAgent)
      ? 'Firefox'
      : /Chrome\//.test(userAgent)
        ? 'Chrome'
        : /Safari\//.test(userAgent)
          ? 'Safari'
          : /^curl\//.test(userAgent)
            ? 'curl'
            : (userAgent.split(/[\s/]/)[0] ?? 'Unknown');
  const os = /Windows/.test(userAgent)
    ? 'Windows'
    : /Android/.test(userAgent)
      ? 'Android'
      : /iPhone|iPad/.test(userAgent)
        ? 'iOS'
        : /Mac OS X/.test(userAgent)
          ? 'macOS'
          : /Linux/.test(userAgent)
            ? 'Linux'
            : null;
  return os ? `${browser} on ${os}` : browser;
}

/**
 * The login's devices (docs/account.md "Devices"): its live sessions grouped by user agent, with
 * a name and a trusted mark the login gives; ending a device ends its sessions.
 */
export function createDevices(deps: { repo: LifecycleRepo; accounts: AccountsService; clock: Clock }) {
  const { repo, accounts, clock } = deps;

  const view = (d: DeviceRow, currentSession: string | null) => ({
    id: d.id,
    name: d.name ?? deviceName(d.userAgent),
    userAgent: d.userAgent,
    trusted: d.trustedAt !== null,
    trustedAt: d.trustedAt?.toISOString() ?? null,
    lastIp: d.lastIp,
    lastSeenAt: d.lastSeenAt.toISOString(),
    firstSeenAt: d.firstSeenAt.toISOString(),
    sessions: d.sessions,
    current: currentSession !== null && d.sessionIds.includes(currentSession),
  });

  async function one(accountId: string, id: string) {
    const d = (await repo.devices(accountId, clock.now())).find((x) => x.id === id);
    if (!d) throw notFound('Device');
    return d;
  }

  return {
    list: async (accountId: string, currentSession: string | null) =>
      (await repo.devices(accountId, clock.now())).map((d) => view(d, currentSession)),

    async update(
      accountId: string,
      id: string,
      currentSession: string | null,
      patch: { name?: string | null | undefined; trusted?: boolean | undefined },
    ) {
      const d = await one(accountId, id);
      const name = patch.name === undefined ? d.name : patch.name;
      const trustedAt = patch.trusted === undefined ? d.trustedAt : patch.trusted ? (d.trustedAt ?? clock.now()) : null;
      await repo.saveDevice(accountId, id, name, trustedAt, clock.now());
      return view({ ...d, name, trustedAt }, currentSession);
    },

    /** Signs the device out: its sessions end at once (not the one making the request: sign out for that). */
    async end(accountId: string, id: string, currentSession: string | null) {
      const d = await one(accountId, id);
      if (currentSession && d.sessionIds.includes(currentSession))
        throw conflict('This is the device of the current session; sign out with POST /auth/logout');
      const ended = await repo.endDevice(accountId, d.sessionIds, id, clock.now());
      accounts.forget(accountId, ended);
      return { id, endedSessions: ended.length };
    },
  };
}

export type Devices = ReturnType<typeof createDevices>;

import type { Db } from '../../db/connection.js';
import { newId } from '../../platform/ids.js';

/** Who made a change to an account: its login (or a member's), a key, or the system. */
export interface AuditActor {
  actorId: string | null;
  credential: 'session' | 'key' | 'system';
  ip: string | null;
}

/**
 * Appends one entry to the account's audit log. Pass the transaction of the change itself, so an
 * entry exists exactly when its change committed.
 */
export async function writeAuditEntry(
  db: Db,
  e: { accountId: string; actor: AuditActor; action: string; changes: Record<string, unknown>; at: Date },
): Promise<void> {
  await db`
    insert into account_audit_log (id, account_id, actor_id, credential, action, changes, ip, created_at)
    values (${newId()}, ${e.accountId}, ${e.actor.actorId}, ${e.actor.credential}, ${e.action},
            ${db.json(e.changes as never)}, ${e.actor.ip}, ${e.at})`;
}

import { forbidden } from './errors.js';
import type { Principal } from './access.js';

/**
 * Operator (platform admin) operations: a dashboard session of an admin account. API keys are
 * refused even for admins, so a leaked key never reviews identities or posts incidents.
 */
export function requireOperator(p: Principal | undefined | null): Principal {
  if (!p || p.kind !== 'session' || p.role !== 'admin')
    throw forbidden('This operation is for platform operators signed in to the dashboard');
  return p;
}

export const isOperator = (p: Principal | undefined | null): boolean => p?.kind === 'session' && p.role === 'admin';

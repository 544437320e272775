import type { CoreDeps } from '../../platform/core.js';
import type { Mailer } from '../../platform/mailer.js';
import type { Module } from '../../platform/module.js';
import type { AccountsService } from '../accounts/service.js';
import { teamRoutes } from './routes.js';
import { createTeamService } from './service.js';

/** Team members of an account, invitations by e-mail, roles and member sessions. */
export function buildTeamModule(core: CoreDeps, deps: { mailer: Mailer; accounts: AccountsService }) {
  const service = createTeamService({ ...core, ...deps });
  const module: Module = { name: 'team', routes: teamRoutes(service) };
  return { module, service };
}

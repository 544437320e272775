import type { Ledger } from '../../ledger/index.js';
import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { every } from '../../platform/periodic.js';
import type { AccountsService } from '../accounts/service.js';
import type { TeamService } from '../team/service.js';
import { createDataExports, type ExportSource } from './data-export.js';
import { createAccountDeletion, type OpenCommitments } from './deletion.js';
import { createDevices } from './devices.js';
import { createLifecycleRepo } from './repo.js';
import { accountLifecycleRoutes } from './routes.js';

/** The account's own life: deletion, data export, devices; and the sweep carrying out due deletions. */
export function buildAccountLifecycleModule(
  core: CoreDeps,
  deps: {
    ledger: Ledger;
    accounts: AccountsService;
    team: TeamService;
    open: OpenCommitments;
    sources: Record<string, ExportSource>;
  },
) {
  const repo = createLifecycleRepo(core.sql);
  const deletion = createAccountDeletion({ ...core, ...deps, repo });
  const exports = createDataExports({ ...core, repo, sources: deps.sources });
  const devices = createDevices({ repo, accounts: deps.accounts, clock: core.clock });
  let loop: { stop(): Promise<void> } | null = null;
  const module: Module = {
    name: 'account-lifecycle',
    routes: accountLifecycleRoutes({ deletion, exports, devices }),
    start() {
      loop = every(core.config.account.sweep_interval_seconds * 1000, async () => {
        await deletion.runDue().catch((err: unknown) => core.log.error({ err }, 'account deletion sweep failed'));
        await exports.sweep().catch((err: unknown) => core.log.error({ err }, 'account export sweep failed'));
      });
    },
    async stop() {
      await loop?.stop();
      await exports.settle();
    },
  };
  return { module, service: { deletion, exports, devices } };
}

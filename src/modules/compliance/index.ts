import type { CoreDeps } from '../../platform/core.js';
import { createFileStore } from '../../platform/file-store.js';
import type { Module } from '../../platform/module.js';
import { complianceRoutes } from './routes.js';
import { createComplianceService } from './service.js';

/** Identity verification (KYC): records, documents under <state>/kyc/, operator review, the KYC_REQUIRED gate. */
export function buildComplianceModule(
  core: CoreDeps,
  deps: { parentOf: (accountId: string) => Promise<string | null> },
) {
  const service = createComplianceService({
    ...core,
    files: createFileStore(core.config.paths.state, 'kyc'),
    parentOf: deps.parentOf,
  });
  const module: Module = {
    name: 'compliance',
    routes: complianceRoutes(service, core.config.compliance.max_document_bytes),
  };
  return { module, service };
}

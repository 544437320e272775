import type { CoreDeps } from '../../platform/core.js';
import type { Module } from '../../platform/module.js';
import { onboardingRoutes } from './routes.js';
import { createOnboardingService, type StepKey, type StepProbe } from './service.js';

/** The getting-started checklist; each step's state comes from the module that owns it. */
export function buildOnboardingModule(core: CoreDeps, deps: { probes: Record<StepKey, StepProbe> }) {
  const service = createOnboardingService({ ...core, probes: deps.probes });
  const module: Module = { name: 'onboarding', routes: onboardingRoutes(service) };
  return { module, service };
}

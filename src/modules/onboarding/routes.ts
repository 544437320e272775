import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { DateTime, Nullable, Ok, ok } from '../../http/envelope.js';
import { STEP_KEYS, type OnboardingService } from './service.js';

const TAGS = ['Onboarding'];
// Skipping or hiding checklist steps changes only the account's own dashboard: test keys may.
const WRITE = { auth: 'required', scope: 'account:write', testKeys: 'allow' } as const;
const StepKey = Type.Union(STEP_KEYS.map((k) => Type.Literal(k)));
const Checklist = Type.Object({
  steps: Type.Array(
    Type.Object({
      key: Type.String(),
      title: Type.String(),
      description: Type.String(),
      href: Type.String({ description: 'the dashboard page where the step is done' }),
      done: Type.Boolean(),
      skipped: Type.Boolean(),
    }),
  ),
  completed: Type.Integer(),
  total: Type.Integer(),
  percent: Type.Integer({ description: 'display number: done steps out of all' }),
  complete: Type.Boolean({ description: 'every step done or skipped' }),
  nextStep: Nullable(Type.String()),
  dismissed: Type.Boolean(),
  dismissedAt: Nullable(DateTime()),
});

export function onboardingRoutes(onboarding: OnboardingService) {
  return (app: App) => {
    app.get(
      '/onboarding',
      {
        config: { access: { auth: 'required', scope: 'account:read' } },
        schema: {
          tags: TAGS,
          summary:
            'The getting-started checklist with progress (verify e-mail, top up, buy a route, create a key, first call or SMS)',
          response: { 200: Ok(Checklist) },
        },
      },
      async (req) => ok(await onboarding.checklist(req.principal!.accountId)),
    );

    app.post(
      '/onboarding/steps/:key/skip',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Skip a step (it still shows done once done)',
          params: Type.Object({ key: StepKey }),
          response: { 200: Ok(Checklist) },
        },
      },
      async (req) => ok(await onboarding.skip(req.principal!.accountId, req.params.key)),
    );

    app.post(
      '/onboarding/dismiss',
      {
        config: { access: WRITE },
        schema: { tags: TAGS, summary: 'Hide the checklist from the dashboard', response: { 200: Ok(Checklist) } },
      },
      async (req) => ok(await onboarding.dismiss(req.principal!.accountId)),
    );

    app.post(
      '/onboarding/reset',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Show the checklist again and clear skipped steps',
          response: { 200: Ok(Checklist) },
        },
      },
      async (req) => ok(await onboarding.reset(req.principal!.accountId)),
    );
  };
}

import type { FastifyRequest } from 'fastify';

/**
 * A slot per sheet upload (or validation) in progress, taken before the body is read so a refused
 * request never holds a sheet in memory, and handed to the service, which releases it; the hooks
 * release it when the request ends without reaching the handler.
 */
export function uploadSlotHooks(acquire: (accountId: string) => () => void) {
  const slots = new WeakMap<FastifyRequest, () => void>();
  const release = async (req: FastifyRequest) => {
    slots.get(req)?.();
    slots.delete(req);
  };
  return {
    hooks: {
      onRequest: async (req: FastifyRequest) => {
        slots.set(req, acquire(req.principal!.accountId));
      },
      onResponse: release,
      onRequestAbort: release,
    },
    /** The request's slot, now the handler's to release. */
    take(req: FastifyRequest): (() => void) | undefined {
      const slot = slots.get(req);
      slots.delete(req);
      return slot;
    },
  };
}

export interface ComponentHealth {
  ok: boolean;
  [k: string]: unknown;
}

/** Components report their readiness here; GET /status reads it. */
export function createHealthRegistry() {
  const probes = new Map<string, () => Promise<ComponentHealth> | ComponentHealth>();
  return {
    register(name: string, probe: () => Promise<ComponentHealth> | ComponentHealth) {
      probes.set(name, probe);
    },
    async report(): Promise<Record<string, ComponentHealth>> {
      const out: Record<string, ComponentHealth> = {};
      await Promise.all(
        [...probes].map(async ([name, probe]) => {
          try {
            out[name] = await probe();
          } catch (err) {
            out[name] = { ok: false, error: (err as Error).message };
          }
        }),
      );
      return out;
    },
  };
}

export type HealthRegistry = ReturnType<typeof createHealthRegistry>;

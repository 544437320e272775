import { Counter, register } from 'prom-client';

/**
 * The process's metric of this name, made on first use. Daemons started in one process (tests,
 * benches) and modules that count into the same metric share it: prom-client refuses a second
 * metric of a name.
 */
export function registeredMetric<T>(name: string, make: () => T): T {
  return (register.getSingleMetric(name) as T | undefined) ?? make();
}

/** SIP trunk calls refused before routing, by cause: admission's limits and the SIP plane's overload control. */
export function sipCallsRefusedTotal(): Counter<'cause'> {
  return registeredMetric(
    'svc_sip_calls_refused_total',
    () =>
      new Counter({
        name: 'svc_sip_calls_refused_total',
        help: 'SIP trunk calls refused before routing, by cause',
        labelNames: ['cause'],
      }),
  );
}

import { Counter, Gauge, Histogram } from 'prom-client';
import { registeredMetric as once } from '../../platform/registered-metrics.js';

/** Prometheus figures of the Asterisk farm, labelled by host (the ARI URL's host:port). */
export interface AsteriskMetrics {
  liveCalls: Gauge<'host'>;
  hostUp: Gauge<'host'>;
  requestSeconds: Histogram<'host' | 'operation'>;
  reconnects: Counter<'host'>;
  hostsLost: Counter<'host'>;
}

export function asteriskMetrics(): AsteriskMetrics {
  return {
    liveCalls: once(
      'svc_asterisk_calls',
      () => new Gauge({ name: 'svc_asterisk_calls', help: 'Live calls on each Asterisk host', labelNames: ['host'] }),
    ),
    hostUp: once(
      'svc_asterisk_host_up',
      () =>
        new Gauge({
          name: 'svc_asterisk_host_up',
          help: '1 while an Asterisk host takes new calls (ARI answers and its event websocket is open)',
          labelNames: ['host'],
        }),
    ),
    requestSeconds: once(
      'svc_asterisk_ari_request_seconds',
      () =>
        new Histogram({
          name: 'svc_asterisk_ari_request_seconds',
          help: 'ARI request latency by host and operation',
          labelNames: ['host', 'operation'],
          buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
        }),
    ),
    reconnects: once(
      'svc_asterisk_ws_reconnects_total',
      () =>
        new Counter({
          name: 'svc_asterisk_ws_reconnects_total',
          help: 'ARI event websocket reconnect attempts by host',
          labelNames: ['host'],
        }),
    ),
    hostsLost: once(
      'svc_asterisk_hosts_lost_total',
      () =>
        new Counter({
          name: 'svc_asterisk_hosts_lost_total',
          help: 'Times an Asterisk host stopped answering ARI and its live calls were ended',
          labelNames: ['host'],
        }),
    ),
  };
}

import { join } from 'node:path';
import type { Test } from 'tap';
import type { AsteriskSettings } from '../../../src/telephony/asterisk/index.js';
import { asteriskBin, NO_ASTERISK, startAsterisk, type PrivateAsterisk } from '../../helpers/asterisk.js';
import { freePort } from '../../telephony/sip/sipp.js';

/**
 * The call engines every calls-and-media case runs against: one table of cases, two engines. The
 * Asterisk one runs against a private Asterisk started from `asterisk/` (test/helpers/asterisk.ts)
 * and is skipped, with the reason tap reports, where none is installed.
 */
export type EngineName = 'native' | 'asterisk';

export const ENGINES: readonly { name: EngineName; skip: string | false }[] = [
  { name: 'native', skip: false },
  { name: 'asterisk', skip: asteriskBin ? false : NO_ASTERISK },
];

/** The engine's private Asterisk (started, stopped at teardown) and the farm settings over it; none for native. */
export async function startEngine(
  t: Test,
  engine: EngineName,
): Promise<{ asterisk?: AsteriskSettings; host?: PrivateAsterisk }> {
  if (engine === 'native') return {};
  const sipPort = await freePort();
  const ast = await startAsterisk({ exchangeSip: { host: '127.0.0.1', port: sipPort } });
  t.teardown(() => ast.stop());
  return { asterisk: asteriskSettings(sipPort, join(ast.dir, 'prompts'), [ast]), host: ast };
}

/** What `createVoicePlane` takes for this engine: nothing for native, a started farm of one for Asterisk. */
export async function engineOptions(t: Test, engine: EngineName): Promise<{ asterisk?: AsteriskSettings }> {
  const { asterisk } = await startEngine(t, engine);
  return asterisk ? { asterisk } : {};
}

/** Daemon config overrides for this engine (`[media]`, `[asterisk]`), Asterisk started when needed. */
export async function engineConfig(t: Test, engine: EngineName): Promise<Record<string, unknown>> {
  const { asterisk } = await startEngine(t, engine);
  return asterisk ? { media: { engine: 'asterisk' }, asterisk } : {};
}

/** Settings for a farm of started Asterisks (all pointed at `sipPort`), with the tests' short timers. */
export function asteriskSettings(
  sipPort: number,
  promptDir: string,
  hosts: readonly Pick<PrivateAsterisk, 'ariUrl' | 'username' | 'password' | 'app'>[],
): AsteriskSettings {
  return {
    hosts: hosts.map((h) => ({ url: h.ariUrl, username: h.username, password: h.password, app: h.app })),
    sip_bind: '127.0.0.1',
    sip_port: sipPort,
    sip_advertise: '',
    pjsip_endpoint: 'svc-exchange',
    prompt_transport: 'http',
    prompt_http_port: 0,
    prompt_url_ttl_ms: 60_000,
    prompt_dir: promptDir,
    prompt_dir_remote: '',
    request_timeout_ms: 2000,
    health_interval_ms: 500,
    health_failures: 2,
    reconnect_max_ms: 1000,
    leg_timeout_ms: 5000,
  };
}

/**
 * Digest challenges (one per trunk call: every call's first INVITE gets a 401) in a daemon's steady
 * state: nonces minted at a constant rate expire at the same rate once the first TTL has passed, so
 * each mint also expires the oldest. A short bench never gets there; a daemon up longer than the TTL
 * (5 minutes) always is. The clock is simulated (one mint per `stepMs`), so the live nonces number
 * TTL / stepMs (45,000: 150 calls/s over the default 5 minutes) without waiting for them.
 * Prints this process's CPU time per challenge for each TTL's worth of mints: the first one mints
 * without expiring, the rest are the steady state.
 * Usage: node --import tsx bench/sip/digest-nonces.bench.ts [rounds=5] [stepMs=6.667]
 */
import { loadavg } from 'node:os';
import { createDigestServer } from '../../src/telephony/sip/digest.js';

const [rounds = 5, stepMs = 1000 / 150] = process.argv.slice(2).map(Number);
const TTL_MS = 5 * 60_000;
const perRound = Math.round(TTL_MS / stepMs);
let now = Date.now();
const server = createDigestServer({ realm: 'bench.exchange.test', secret: 'bench', now: () => now });

for (let r = 0; r < rounds; r++) {
  const t0 = process.cpuUsage();
  for (let i = 0; i < perRound; i++) {
    now += stepMs;
    server.challenge();
  }
  const cpu = process.cpuUsage(t0);
  console.log(
    `sip digest challenge cpu: ${((cpu.user + cpu.system) / perRound).toFixed(2)} us over ${perRound} (${r === 0 ? 'first TTL, none expiring' : 'steady state, one expiring per mint'}) · load ${loadavg()[0]!.toFixed(2)}`,
  );
}

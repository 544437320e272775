import { randomInt } from 'node:crypto';
import type { CliStrategy } from './campaigns.js';

/** How many leading digits two numbers share: the per-destination match prefers a caller ID local to the callee. */
function shared(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/**
 * Caller IDs for a batch of callees. `used` holds each caller ID's calls today (attempts finished
 * plus calls in flight) and is moved as IDs are handed out, so a daily cap holds within a batch too.
 * A callee gets null when every caller ID reached its cap: it stays pending until the campaign's next local day.
 */
export function pickCallerIds(
  clis: readonly string[],
  callees: readonly string[],
  strategy: CliStrategy | null,
  used: Map<string, number>,
  cursor: number,
): (string | null)[] {
  const cap = strategy?.dailyCap ?? 0;
  const kind = strategy?.strategy ?? 'round_robin';
  const count = (cli: string) => used.get(cli) ?? 0;
  let turn = cursor;
  return callees.map((callee) => {
    const open = clis.filter((cli) => cap === 0 || count(cli) < cap);
    if (open.length === 0) return null;
    let pick: string;
    switch (kind) {
      case 'least_used':
        pick = open.reduce((best, cli) => (count(cli) < count(best) ? cli : best));
        break;
      case 'match_destination':
        pick = open.reduce((best, cli) => {
          const d = shared(cli, callee) - shared(best, callee);
          return d > 0 || (d === 0 && count(cli) < count(best)) ? cli : best;
        });
        break;
      case 'random':
        pick = open[randomInt(open.length)]!;
        break;
      default:
        pick = open[turn++ % open.length]!;
    }
    used.set(pick, count(pick) + 1);
    return pick;
  });
}

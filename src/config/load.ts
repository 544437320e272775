import { readFileSync } from 'node:fs';
import { parse as parseToml } from 'smol-toml';
import { Value } from 'typebox/value';
import { parseNetworks } from '../platform/outbound-guard.js';
import { ConfigSchema, type Config } from './schema.js';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

export interface LoadConfigOptions {
  /** A TOML file layered over the defaults (`--config PATH`). */
  file?: string | undefined;
  /** Environment to read `SVC_*` variables from; defaults to none so tests stay hermetic. */
  env?: Record<string, string | undefined>;
  /** Values layered last (tests use this to pick ports and databases). */
  overrides?: DeepPartial<Config>;
}

export type DeepPartial<T> = {
  [K in keyof T]?: T[K] extends object ? (T[K] extends unknown[] ? T[K] : DeepPartial<T[K]>) : T[K];
};

type Plain = Record<string, unknown>;

/**
 * Defaults, then the file, then `SVC_<SECTION>_<KEY>` variables, then overrides; validated
 * against the schema with every bad field named, then frozen.
 */
export function loadConfig(opts: LoadConfigOptions = {}): Readonly<Config> {
  const problems: string[] = [];
  const merged = defaults();
  if (opts.file) {
    let fileData: Plain;
    try {
      fileData = parseToml(readFileSync(opts.file, 'utf8')) as Plain;
    } catch (err) {
      throw new ConfigError([`${opts.file}: ${(err as Error).message.split('\n')[0]}`]);
    }
    problems.push(...unknownKeys(fileData, opts.file));
    deepMerge(merged, fileData);
  }
  if (opts.env) deepMerge(merged, fromEnv(opts.env, problems));
  if (opts.overrides) deepMerge(merged, opts.overrides as Plain);
  for (const e of Value.Errors(ConfigSchema, merged)) {
    problems.push(`${pathName(e.instancePath)}: ${e.message}`);
  }
  problems.push(...crossFieldProblems(merged as Config));
  if (problems.length > 0) throw new ConfigError(problems);
  return deepFreeze(merged as Config);
}

/** Every section filled with its keys' defaults. */
export function defaults(): Plain {
  const out: Plain = {};
  for (const [section, schema] of Object.entries(ConfigSchema.properties)) {
    out[section] = Value.Default(schema, {});
  }
  return out;
}

function pathName(pointer: string): string {
  return pointer.replace(/^\//, '').replaceAll('/', '.') || '(root)';
}

function crossFieldProblems(c: Config): string[] {
  const out: string[] = [];
  if (c.rtp && c.rtp.port_min > c.rtp.port_max) out.push('rtp.port_min: must not exceed rtp.port_max');
  if (c.http?.tls_mode === 'files' && (!c.http.tls_cert || !c.http.tls_key)) {
    out.push('http.tls_cert: tls_mode "files" needs both http.tls_cert and http.tls_key');
  }
  for (const key of ['private_supplier_networks', 'private_trunk_networks'] as const) {
    try {
      parseNetworks(c.security?.[key] ?? [], `security.${key}`);
    } catch (err) {
      out.push((err as Error).message);
    }
  }
  if (c.http?.tls_mode === 'proxy' && c.http.trusted_proxies.length === 0) {
    out.push('http.trusted_proxies: tls_mode "proxy" needs the address of at least one trusted proxy');
  }
  return out;
}

function unknownKeys(data: Plain, where: string): string[] {
  const out: string[] = [];
  const sections = ConfigSchema.properties as Record<string, { properties: Record<string, unknown> }>;
  for (const [section, value] of Object.entries(data)) {
    const known = sections[section];
    if (!known) {
      out.push(`${section}: unknown section in ${where}`);
      continue;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      out.push(`${section}: must be a table`);
      continue;
    }
    for (const key of Object.keys(value)) {
      if (!(key in known.properties)) out.push(`${section}.${key}: unknown setting in ${where}`);
    }
  }
  return out;
}

/** Maps `SVC_HTTP_PORT` to `http.port` by walking the schema, so only known keys are read. */
function fromEnv(env: Record<string, string | undefined>, problems: string[]): Plain {
  const out: Plain = {};
  const sections = ConfigSchema.properties as Record<string, { properties: Record<string, { type?: string }> }>;
  for (const [section, sectionSchema] of Object.entries(sections)) {
    for (const [key, schema] of Object.entries(sectionSchema.properties)) {
      const name = `SVC_${section}_${key}`.toUpperCase();
      const raw = env[name];
      if (raw === undefined) continue;
      const value = coerce(raw, schema);
      if (value === undefined) {
        problems.push(`${section}.${key}: ${name}=${JSON.stringify(raw)} is not a valid ${schema.type ?? 'value'}`);
        continue;
      }
      ((out[section] ??= {}) as Plain)[key] = value;
    }
  }
  return out;
}

function coerce(raw: string, schema: { type?: string }): unknown {
  switch (schema.type) {
    case 'integer':
      return /^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : undefined;
    case 'number':
      return raw.trim() !== '' && Number.isFinite(Number(raw)) ? Number(raw) : undefined;
    case 'boolean':
      if (/^(true|1|yes)$/i.test(raw)) return true;
      if (/^(false|0|no)$/i.test(raw)) return false;
      return undefined;
    case 'array':
      return raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    default:
      return raw;
  }
}

function deepMerge(target: Plain, source: Plain): void {
  for (const [k, v] of Object.entries(source)) {
    if (v === undefined) continue;
    const cur = target[k];
    if (isPlain(v) && isPlain(cur)) deepMerge(cur, v);
    else target[k] = v;
  }
}

function isPlain(v: unknown): v is Plain {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function deepFreeze<T>(o: T): Readonly<T> {
  if (typeof o === 'object' && o !== null) {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}

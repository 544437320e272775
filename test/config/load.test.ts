import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'smol-toml';
import t from 'tap';
import { ConfigError, defaults, loadConfig } from '../../src/config/load.js';

t.test('config/default.toml lists every setting with the schema default', async (t) => {
  const file = parse(readFileSync(new URL('../../config/default.toml', import.meta.url), 'utf8')) as Record<
    string,
    Record<string, unknown>
  >;
  const schema = defaults() as Record<string, Record<string, unknown>>;
  t.same(Object.keys(file).sort(), Object.keys(schema).sort(), 'same sections');
  for (const [section, keys] of Object.entries(schema)) {
    t.same(file[section], keys, `[${section}] keys and defaults match the schema`);
  }
});

t.test('a file overrides defaults, then SVC_* variables override the file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cfg-'));
  const path = join(dir, 'site.toml');
  writeFileSync(path, '[http]\nport = 9000\n[sip]\nport = 5070\n');
  const c = loadConfig({
    file: path,
    env: {
      SVC_SIP_PORT: '5080',
      SVC_PATHS_STATE: '/srv/svc',
      SVC_HTTP_TRUSTED_PROXIES: '10.0.0.1, 10.0.0.2',
      UNRELATED: 'x',
    },
  });
  t.equal(c.http.port, 9000);
  t.equal(c.sip.port, 5080);
  t.equal(c.paths.state, '/srv/svc');
  t.same(c.http.trusted_proxies, ['10.0.0.1', '10.0.0.2']);
  t.equal(c.smpp.tls_port, 3550, 'untouched defaults stay');
  t.ok(Object.isFrozen(c.http), 'frozen');
});

t.test('every bad field is named in one error', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cfg-'));
  const path = join(dir, 'bad.toml');
  writeFileSync(path, '[http]\nport = 70000\nbogus = 1\n[nosuch]\nx = 1\n');
  const err = t.throws(() =>
    loadConfig({ file: path, env: { SVC_SMPP_PORT: 'abc', SVC_METRICS_ENABLED: 'maybe' } }),
  ) as ConfigError;
  t.type(err, ConfigError);
  const text = err.problems.join('\n');
  t.match(text, /http\.port/);
  t.match(text, /http\.bogus: unknown setting/);
  t.match(text, /nosuch: unknown section/);
  t.match(text, /smpp\.port: SVC_SMPP_PORT="abc"/);
  t.match(text, /metrics\.enabled/);
});

t.test('cross-field rules', async (t) => {
  const err = t.throws(() =>
    loadConfig({ overrides: { http: { tls_mode: 'proxy' }, rtp: { port_min: 3000, port_max: 2000 } } }),
  ) as ConfigError;
  t.match(err.problems.join('\n'), /trusted_proxies/);
  t.match(err.problems.join('\n'), /rtp\.port_min/);
});

t.test('a broken TOML file is a clear error', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cfg-'));
  const path = join(dir, 'broken.toml');
  writeFileSync(path, '[http\nport = ');
  const err = t.throws(() => loadConfig({ file: path })) as ConfigError;
  t.match(err.message, /broken\.toml/);
});

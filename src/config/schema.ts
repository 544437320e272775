import { Type, type Static } from 'typebox';
import { E164_PATTERN_BODY } from '../platform/e164.js';

/**
 * Every setting of the daemon, its type and default. `config/default.toml` mirrors this
 * file with a comment per key; the loader layers a `--config` file and `SVC_<SECTION>_<KEY>`
 * environment variables over these defaults.
 */
const Port = (dflt: number) => Type.Integer({ minimum: 0, maximum: 65535, default: dflt });

export const ConfigSchema = Type.Object({
  paths: Type.Object({
    state: Type.String({ minLength: 1, default: 'var/' }),
  }),
  log: Type.Object({
    level: Type.Union(
      [
        Type.Literal('fatal'),
        Type.Literal('error'),
        Type.Literal('warn'),
        Type.Literal('info'),
        Type.Literal('debug'),
        Type.Literal('trace'),
        Type.Literal('silent'),
      ],
      { default: 'info' },
    ),
  }),
  http: Type.Object({
    host: Type.String({ default: '0.0.0.0' }),
    port: Port(8443),
    tls_mode: Type.Union([Type.Literal('self-signed'), Type.Literal('files'), Type.Literal('proxy')], {
      default: 'self-signed',
    }),
    tls_cert: Type.String({ default: '' }),
    tls_key: Type.String({ default: '' }),
    trusted_proxies: Type.Array(Type.String(), { default: [] }),
    body_limit_bytes: Type.Integer({ minimum: 1024, maximum: 64 * 1024 * 1024, default: 1048576 }),
    public_hostname: Type.String({ default: 'localhost' }),
    max_connections: Type.Integer({ minimum: 16, maximum: 1000000, default: 8192 }),
  }),
  database: Type.Object({
    url: Type.String({ default: '' }),
    pool_max: Type.Integer({ minimum: 1, maximum: 500, default: 20 }),
    embedded_port: Port(0),
    embedded_user: Type.String({ minLength: 1, default: 'postgres' }),
    embedded_runtime_dir: Type.String({ minLength: 1, default: '/var/lib/svc-exchange/embedded-postgres' }),
  }),
  redis: Type.Object({
    url: Type.String({ default: '' }),
  }),
  auth: Type.Object({
    jwt_secret: Type.String({ default: '' }),
    access_token_ttl_seconds: Type.Integer({ minimum: 60, maximum: 86400, default: 900 }),
    refresh_token_ttl_days: Type.Integer({ minimum: 1, maximum: 365, default: 30 }),
    login_attempts_per_minute: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
    credential_cache_seconds: Type.Integer({ minimum: 0, maximum: 300, default: 5 }),
    login_max_failures_per_email: Type.Integer({ minimum: 1, maximum: 1000, default: 5 }),
    login_failure_window_minutes: Type.Integer({ minimum: 1, maximum: 1440, default: 15 }),
    login_lockout_max_seconds: Type.Integer({ minimum: 1, maximum: 86400, default: 900 }),
    failed_auth_per_source: Type.Integer({ minimum: 1, maximum: 100000, default: 30 }),
    failed_auth_window_seconds: Type.Integer({ minimum: 1, maximum: 86400, default: 60 }),
    one_time_password_hours: Type.Integer({ minimum: 1, maximum: 720, default: 24 }),
    scrypt_cost: Type.Integer({ minimum: 10, maximum: 17, default: 15 }),
  }),
  limits: Type.Object({
    default_per_second: Type.Integer({ minimum: 1, maximum: 1000000, default: 100 }),
    idempotency_lease_seconds: Type.Integer({ minimum: 5, maximum: 7200, default: 120 }),
    idempotency_ttl_hours: Type.Integer({ minimum: 1, maximum: 720, default: 24 }),
  }),
  bootstrap: Type.Object({
    operator_email: Type.String({ default: 'operator@svc-exchange.local' }),
  }),
  sip: Type.Object({
    host: Type.String({ default: '0.0.0.0' }),
    port: Port(5060),
    tls_port: Port(5061),
    tls_ca_file: Type.String({ default: '' }),
    primary_host: Type.String({ default: 'sip.svc-exchange.local' }),
    secondary_host: Type.String({ default: '' }),
    max_call_seconds: Type.Integer({ minimum: 60, maximum: 86400, default: 7200 }),
    max_calls_per_account: Type.Integer({ minimum: 0, maximum: 1000000, default: 0 }),
    options_interval_seconds: Type.Integer({ minimum: 5, maximum: 3600, default: 30 }),
    options_failure_threshold: Type.Integer({ minimum: 1, maximum: 100, default: 3 }),
    options_recovery_threshold: Type.Integer({ minimum: 1, maximum: 100, default: 2 }),
    options_timeout_ms: Type.Integer({ minimum: 100, maximum: 32000, default: 2000 }),
    session_expires_seconds: Type.Integer({ minimum: 1, maximum: 86400, default: 1800 }),
    session_min_se_seconds: Type.Integer({ minimum: 1, maximum: 86400, default: 90 }),
    tcp_max_connections: Type.Integer({ minimum: 1, maximum: 1000000, default: 4096 }),
    tcp_max_per_source: Type.Integer({ minimum: 1, maximum: 1000000, default: 64 }),
    tcp_idle_seconds: Type.Integer({ minimum: 1, maximum: 600, default: 10 }),
    t1_ms: Type.Integer({ minimum: 10, maximum: 5000, default: 500 }),
  }),
  smpp: Type.Object({
    host: Type.String({ default: '0.0.0.0' }),
    port: Port(2775),
    tls_port: Port(3550),
    max_connections: Type.Integer({ minimum: 1, maximum: 1000000, default: 1024 }),
    max_per_source: Type.Integer({ minimum: 1, maximum: 1000000, default: 16 }),
    bind_timeout_seconds: Type.Integer({ minimum: 1, maximum: 600, default: 10 }),
    bind_lockout_failures: Type.Integer({ minimum: 1, maximum: 1000, default: 5 }),
    bind_lockout_seconds: Type.Integer({ minimum: 1, maximum: 86400, default: 300 }),
  }),
  sms: Type.Object({
    receipt_expiry_hours: Type.Integer({ minimum: 1, maximum: 720, default: 48 }),
    expiry_sweep_seconds: Type.Integer({ minimum: 1, maximum: 3600, default: 60 }),
    failover_routes: Type.Integer({ minimum: 1, maximum: 10, default: 3 }),
    bind_tps: Type.Integer({ minimum: 1, maximum: 100000, default: 100 }),
    bind_window_size: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
    pdu_response_timeout_ms: Type.Integer({ minimum: 100, maximum: 300000, default: 10000 }),
    enquire_link_interval_ms: Type.Integer({ minimum: 1000, maximum: 600000, default: 30000 }),
    bind_backoff_min_ms: Type.Integer({ minimum: 10, maximum: 600000, default: 1000 }),
    bind_backoff_max_ms: Type.Integer({ minimum: 10, maximum: 3600000, default: 60000 }),
    bind_queue_timeout_ms: Type.Integer({ minimum: 100, maximum: 600000, default: 30000 }),
    https_delivery_timeout_ms: Type.Integer({ minimum: 100, maximum: 120000, default: 10000 }),
    https_delivery_ca_file: Type.String({ default: '' }),
    receipt_callback_base_url: Type.String({ default: '' }),
    receipt_callback_tolerance_seconds: Type.Integer({ minimum: 10, maximum: 3600, default: 300 }),
  }),
  rtp: Type.Object({
    port_min: Type.Integer({ minimum: 1024, maximum: 65535, default: 10000 }),
    port_max: Type.Integer({ minimum: 1024, maximum: 65535, default: 20000 }),
    workers: Type.Integer({ minimum: 1, maximum: 64, default: 1 }),
    bind_address: Type.String({ default: '0.0.0.0' }),
    advertise_address: Type.String({ default: '' }),
    timeout_ms: Type.Integer({ minimum: 1000, maximum: 600000, default: 30000 }),
  }),
  metrics: Type.Object({
    enabled: Type.Boolean({ default: true }),
    host: Type.String({ default: '127.0.0.1' }),
    port: Port(9464),
  }),
  voice: Type.Object({
    otp_caller_id: Type.String({ pattern: `^(${E164_PATTERN_BODY})?$`, default: '' }),
    max_api_calls_per_account: Type.Integer({ minimum: 0, maximum: 100000, default: 20 }),
  }),
  billing: Type.Object({
    platform_fee_mode: Type.Union([Type.Literal('absolute'), Type.Literal('percent')], { default: 'absolute' }),
    platform_fee_voice_per_minute: Type.String({ pattern: '^\\d+(\\.\\d{1,6})?$', default: '0.002000' }),
    platform_fee_sms_per_message: Type.String({ pattern: '^\\d+(\\.\\d{1,6})?$', default: '0.000500' }),
    platform_fee_percent: Type.String({ pattern: '^\\d+(\\.\\d{1,3})?$', default: '0' }),
    require_route_for_sub_accounts: Type.Boolean({ default: true }),
    low_balance_threshold: Type.String({ pattern: '^\\d+(\\.\\d{1,6})?$', default: '5.000000' }),
    card_chargeback_hold_days: Type.Integer({ minimum: 0, maximum: 365, default: 7 }),
    hold_sweep_seconds: Type.Integer({ minimum: 1, maximum: 3600, default: 30 }),
    summarize_seconds: Type.Integer({ minimum: 1, maximum: 3600, default: 2 }),
    x402_facilitator_url: Type.String({ default: '' }),
    x402_pay_to: Type.String({ default: '' }),
    x402_network: Type.String({ default: 'base' }),
    x402_asset: Type.String({ default: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' }),
    x402_min_amount: Type.String({ pattern: '^\\d+(\\.\\d{1,6})?$', default: '1.000000' }),
    x402_max_amount: Type.String({ pattern: '^\\d+(\\.\\d{1,6})?$', default: '10000.000000' }),
  }),
  rate_sheets: Type.Object({
    uploads_per_account: Type.Integer({ minimum: 1, maximum: 100, default: 1 }),
    uploads_total: Type.Integer({ minimum: 1, maximum: 1000, default: 2 }),
    async_rows: Type.Integer({ minimum: 0, maximum: 500000, default: 20000 }),
    slice_ms: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
  }),
  webhooks: Type.Object({
    allow_private_targets: Type.Boolean({ default: false }),
    timeout_seconds: Type.Integer({ minimum: 1, maximum: 60, default: 10 }),
    disable_after_failures: Type.Integer({ minimum: 1, maximum: 10000, default: 20 }),
    workers: Type.Integer({ minimum: 0, maximum: 256, default: 8 }),
    poll_interval_ms: Type.Integer({ minimum: 50, maximum: 60000, default: 1000 }),
    max_endpoints_per_account: Type.Integer({ minimum: 1, maximum: 1000, default: 20 }),
    ca_file: Type.String({ default: '' }),
  }),
  dialer: Type.Object({
    tick_ms: Type.Integer({ minimum: 20, maximum: 10000, default: 250 }),
    call_poll_ms: Type.Integer({ minimum: 50, maximum: 10000, default: 1000 }),
    platform_fee_per_call: Type.String({ pattern: '^\\d+(\\.\\d{1,6})?$', default: '0' }),
    max_numbers_per_campaign: Type.Integer({ minimum: 1, maximum: 10000000, default: 1000000 }),
  }),
  ai: Type.Object({
    chat_url: Type.String({ default: '' }),
    chat_api_key: Type.String({ default: '' }),
    chat_model: Type.String({ default: 'gpt-4o-mini' }),
    stt_url: Type.String({ default: '' }),
    stt_api_key: Type.String({ default: '' }),
    stt_model: Type.String({ default: 'whisper-1' }),
    tts_url: Type.String({ default: '' }),
    tts_api_key: Type.String({ default: '' }),
    tts_model: Type.String({ default: 'tts-1' }),
    request_timeout_ms: Type.Integer({ minimum: 100, maximum: 120000, default: 20000 }),
  }),
  security: Type.Object({
    private_supplier_networks: Type.Array(Type.String({ maxLength: 64 }), { default: [], maxItems: 256 }),
    private_trunk_networks: Type.Array(Type.String({ maxLength: 64 }), { default: [], maxItems: 256 }),
  }),
});

export type Config = Static<typeof ConfigSchema>;
export type ConfigSection = keyof Config;

import { Decimal } from 'decimal.js';
import type { Readable } from 'node:stream';
import type { Config } from '../../config/schema.js';
import { csvBatches } from '../../http/csv-body.js';
import { conflict, notFound, ruleError, validationError, type ErrorDetail } from '../../http/errors.js';
import type { Clock } from '../../platform/clock.js';
import { isE164Digits } from '../../platform/e164.js';
import { newId } from '../../platform/ids.js';
import type { Logger } from 'pino';
import { emit } from '../../webhooks/emit.js';
import { checkActions, type ActionItem } from '../api-calls/actions.js';
import type { CampaignRow, CampaignStatus, DialerRepo, ImportRow } from './repo.js';
import { isTimeZone } from './window.js';

const BATCH = 5000;
/** How often a running import writes its progress (`GET …/imports`). */
const PROGRESS_MS = 250;
const ERRORS_KEPT = 100;

export interface CampaignInput {
  name?: string | undefined;
  routeId?: string | undefined;
  kind?: 'voice' | 'sms' | undefined;
  messageBody?: string | null | undefined;
  senderId?: string | null | undefined;
  targetAcd?: string | null | undefined;
  targetAsr?: string | null | undefined;
  concurrency?: number | undefined;
  maxCallDuration?: number | undefined;
  callInterval?: number | undefined;
  notes?: string | null | undefined;
  windowStartHour?: number | null | undefined;
  windowEndHour?: number | null | undefined;
  windowTz?: string | null | undefined;
  maxAttempts?: number | undefined;
  retryDelayMinutes?: number | undefined;
  maxSpend?: string | null | undefined;
  scheduleAt?: string | null | undefined;
  aiAgentId?: string | null | undefined;
  cliSetId?: string | null | undefined;
  cliStrategy?: CliStrategy | null | undefined;
  actions?: ActionItem[] | undefined;
  language?: string | undefined;
}

export interface CliStrategy {
  strategy: 'round_robin' | 'least_used' | 'match_destination' | 'random';
  /** Calls a caller ID may place per day (midnight in the campaign's windowTz) across the account's campaigns (0 or absent: no cap). */
  dailyCap?: number | undefined;
}

export interface DialerDeps {
  repo: DialerRepo;
  clock: Clock;
  log: Logger;
  config: Readonly<Config>;
  /** Whether the account may send `kind` traffic over the route (purchased or own, active). */
  routeUsable(accountId: string, routeId: string, kind: 'voice' | 'sms'): Promise<boolean>;
  /** Wakes the runner (a campaign started). */
  wake(): void;
  /** Refuses (VALIDATION_ERROR on `aiAgentId`) an agent that cannot hold the account's calls. */
  agentReady(accountId: string, agentId: string): Promise<void>;
}

/** `+44 7700-900 123` → `447700900123`. */
export function numberDigits(raw: string): string {
  const s = raw.replace(/[\s\-().]/g, '');
  if (s.startsWith('+')) return s.slice(1);
  if (s.startsWith('00')) return s.slice(2);
  return s;
}

const MONEY = /^\d{1,14}(\.\d{1,6})?$/;

export function campaignView(c: CampaignRow) {
  return {
    id: c.id,
    userId: c.accountId,
    routeId: c.routeId,
    name: c.name,
    kind: c.kind,
    environment: c.environment,
    status: c.status,
    statusReason: c.statusReason,
    messageBody: c.messageBody,
    senderId: c.senderId,
    aiAgentId: c.aiAgentId,
    actions: c.actions as Record<string, unknown>[],
    language: c.language,
    targetAcd: c.targetAcd,
    targetAsr: c.targetAsr,
    notes: c.notes,
    concurrency: c.concurrency,
    maxCallDuration: c.maxCallDuration,
    callInterval: c.callInterval,
    platformFeePerCall: c.platformFeePerCall,
    totalNumbers: c.totalNumbers,
    totalClis: c.totalClis,
    cliSetId: c.cliSetId,
    cliStrategy: c.cliStrategy,
    numbersDialed: c.numbersDialed,
    numbersAnswered: c.numbersAnswered,
    numbersFailed: c.numbersFailed,
    totalDurationSeconds: Number(c.totalDurationSeconds),
    windowStartHour: c.windowStartHour,
    windowEndHour: c.windowEndHour,
    windowTz: c.windowTz,
    maxAttempts: c.maxAttempts,
    retryDelayMinutes: c.retryDelayMinutes,
    maxSpend: c.maxSpend,
    spent: c.spent,
    scheduleAt: c.scheduleAt?.toISOString() ?? null,
    startedAt: c.startedAt?.toISOString() ?? null,
    completedAt: c.completedAt?.toISOString() ?? null,
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
    ...(c.environment === 'test' ? { simulated: true } : {}),
  };
}

export type CampaignView = ReturnType<typeof campaignView>;

function importView(r: ImportRow) {
  return {
    id: r.id,
    campaignId: r.campaignId,
    status: r.status,
    rowsRead: r.rowsRead,
    imported: r.imported,
    duplicates: r.duplicates,
    invalid: r.invalid,
    errors: r.errors,
    error: r.error,
    startedAt: r.startedAt.toISOString(),
    finishedAt: r.finishedAt?.toISOString() ?? null,
  };
}

const FINAL: ReadonlySet<CampaignStatus> = new Set(['completed', 'failed']);

export function createCampaignsService(deps: DialerDeps) {
  const { repo, clock } = deps;
  const { sql } = repo;

  /** Field rules across fields and against stored state (the schema checks each field alone). */
  async function check(accountId: string, input: CampaignInput, current: CampaignRow | null): Promise<void> {
    const problems: ErrorDetail[] = [];
    const kind = input.kind ?? current?.kind ?? 'voice';
    if (input.windowTz != null && !isTimeZone(input.windowTz)) {
      problems.push({ path: 'windowTz', message: 'must be an IANA time zone such as Europe/London' });
    }
    const start = input.windowStartHour !== undefined ? input.windowStartHour : (current?.windowStartHour ?? null);
    const end = input.windowEndHour !== undefined ? input.windowEndHour : (current?.windowEndHour ?? null);
    if ((start === null) !== (end === null)) {
      problems.push({ path: 'windowEndHour', message: 'give both windowStartHour and windowEndHour, or neither' });
    }
    if (input.maxSpend != null && !MONEY.test(input.maxSpend)) {
      problems.push({ path: 'maxSpend', message: 'must be a decimal amount with at most 6 places' });
    }
    for (const f of ['targetAcd', 'targetAsr'] as const) {
      const v = input[f];
      if (v != null && !/^\d{1,6}(\.\d{1,3})?$/.test(v))
        problems.push({ path: f, message: 'must be a decimal number' });
    }
    if (input.senderId != null && input.senderId.trim() === '') {
      problems.push({ path: 'senderId', message: 'must not be empty' });
    }
    if (input.actions) {
      if (kind !== 'voice') problems.push({ path: 'actions', message: 'only voice campaigns play actions' });
      problems.push(
        ...checkActions(input.actions).map((p) => ({ ...p, path: `actions${p.path.replace(/^actions/, '')}` })),
      );
    }
    if (input.aiAgentId != null) {
      if (kind !== 'voice')
        problems.push({ path: 'aiAgentId', message: 'only voice campaigns hand calls to an agent' });
      const actions = input.actions ?? current?.actions ?? [];
      if (actions.length)
        problems.push({ path: 'aiAgentId', message: 'a campaign plays actions or hands calls to an agent, not both' });
    }
    if (problems.length) throw validationError(problems);
    if (input.aiAgentId != null) await deps.agentReady(accountId, input.aiAgentId);
    if (input.routeId !== undefined && !(await deps.routeUsable(accountId, input.routeId, kind))) {
      throw validationError([
        { path: 'routeId', message: `not a purchased or own active ${kind} route of this account` },
      ]);
    }
    if (input.cliSetId != null && !(await repo.cliSet(accountId, input.cliSetId))) {
      throw validationError([{ path: 'cliSetId', message: 'no caller-ID set with this id' }]);
    }
  }

  async function mustGet(accountId: string, id: string): Promise<CampaignRow> {
    const c = await repo.campaign(sql, accountId, id);
    if (!c) throw notFound('Campaign');
    return c;
  }

  function columns(input: CampaignInput): Record<string, unknown> {
    const f: Record<string, unknown> = {};
    const copy = [
      'name',
      'messageBody',
      'senderId',
      'targetAcd',
      'targetAsr',
      'concurrency',
      'maxCallDuration',
      'callInterval',
      'notes',
      'windowStartHour',
      'windowEndHour',
      'windowTz',
      'maxAttempts',
      'retryDelayMinutes',
      'maxSpend',
      'cliSetId',
      'language',
      'aiAgentId',
    ] as const;
    for (const k of copy) if (input[k] !== undefined) f[k] = input[k];
    if (input.scheduleAt !== undefined) f['scheduleAt'] = input.scheduleAt === null ? null : new Date(input.scheduleAt);
    if (input.cliStrategy !== undefined)
      f['cliStrategy'] = input.cliStrategy === null ? null : sql.json(input.cliStrategy as never);
    if (input.actions !== undefined) f['actions'] = sql.json(input.actions as never);
    return f;
  }

  /**
   * Adds `rows` (distinct numbers) under the campaign row's lock. `onlyOurs`: how many numbers an
   * import has stored so far when none of `rows` was among them; if the campaign holds exactly that
   * many, it holds nothing else, and the rows go in without the conflict check.
   */
  async function addRows(
    campaignId: string,
    rows: { number: string; name: string | null; fields: Record<string, string> | null }[],
    onlyOurs: number | null = null,
  ): Promise<number> {
    const add = (checkless: boolean) =>
      sql.begin(async (tx) => {
        const [c] = await tx<{ totalNumbers: number }[]>`
          select total_numbers from dialer_campaigns where id = ${campaignId} for update`;
        const room = deps.config.dialer.max_numbers_per_campaign - (c?.totalNumbers ?? 0);
        // Counted after the insert: numbers already in the campaign take no room, so a file that fills
        // the campaign exactly may still repeat one. Too many rolls the batch back.
        const added = await repo.addNumbers(tx, campaignId, rows, checkless && c?.totalNumbers === onlyOurs);
        if (added > room) {
          throw ruleError(`A campaign holds at most ${deps.config.dialer.max_numbers_per_campaign} numbers`);
        }
        return added;
      });
    if (onlyOurs === null) return add(false);
    try {
      return await add(true);
    } catch (err) {
      // Numbers came and went beside the import while the count stayed: the checked insert sorts it out.
      if ((err as { code?: unknown } | null)?.code === '23505') return add(false);
      throw err;
    }
  }

  return {
    mustGet,

    async create(
      accountId: string,
      parentId: string | null,
      mode: 'live' | 'test',
      input: CampaignInput & { name: string; routeId: string },
    ) {
      await check(accountId, input, null);
      const now = clock.now();
      const id = newId();
      await repo.insertCampaign(sql, {
        id,
        accountId,
        parentId,
        routeId: input.routeId,
        kind: input.kind ?? 'voice',
        environment: mode,
        status: 'draft',
        concurrency: 1,
        maxCallDuration: 300,
        callInterval: 0,
        maxAttempts: 1,
        retryDelayMinutes: 60,
        platformFeePerCall: new Decimal(deps.config.dialer.platform_fee_per_call).toFixed(6),
        createdAt: now,
        updatedAt: now,
        ...columns(input),
      });
      return campaignView((await repo.campaign(sql, accountId, id))!);
    },

    async update(accountId: string, id: string, input: CampaignInput) {
      const current = await mustGet(accountId, id);
      if (FINAL.has(current.status)) throw conflict(`The campaign is ${current.status}; it can no longer be changed`);
      await check(accountId, input, current);
      const fields = columns(input);
      if (Object.keys(fields).length > 0) {
        await repo.updateCampaign(sql, id, { ...fields, updatedAt: clock.now() });
      }
      return campaignView((await repo.campaign(sql, accountId, id))!);
    },

    async get(accountId: string, id: string) {
      return campaignView(await mustGet(accountId, id));
    },

    async list(
      accountId: string,
      q: { status?: string | undefined; search?: string | undefined; cursor?: string | undefined; limit: number },
    ) {
      return (await repo.campaigns(accountId, { ...q, limit: q.limit + 1 })).map(campaignView);
    },

    async remove(accountId: string, id: string) {
      const c = await mustGet(accountId, id);
      if (c.status === 'running' || c.status === 'ready')
        throw conflict('Stop or pause the campaign before deleting it');
      await sql`delete from dialer_campaigns where id = ${id}`;
      return { id };
    },

    /** start, pause, stop (spec "Dialer": control). */
    async control(accountId: string, id: string, action: 'start' | 'pause' | 'stop') {
      const now = clock.now();
      await sql.begin(async (tx) => {
        const c = await repo.campaign(tx, accountId, id, true);
        if (!c) throw notFound('Campaign');
        if (FINAL.has(c.status)) throw conflict(`The campaign is ${c.status}`);
        if (action === 'start') {
          if (c.status === 'running' || c.status === 'ready') return;
          if (c.totalNumbers === 0) throw ruleError('The campaign has no numbers: add some before starting it');
          if (c.kind === 'sms' && (!c.messageBody || !c.senderId)) {
            throw ruleError('An SMS campaign needs messageBody and senderId before it starts');
          }
          if (c.kind === 'voice' && c.totalClis === 0) {
            throw ruleError('A voice campaign needs caller IDs (cliSetId naming a caller-ID set) before it starts');
          }
          if (c.kind === 'voice' && c.actions.length === 0 && !c.aiAgentId) {
            throw ruleError('A voice campaign needs actions to play, or an aiAgentId, for answered calls');
          }
          if (!(await deps.routeUsable(accountId, c.routeId, c.kind))) {
            throw ruleError('The campaign route is no longer purchased or active');
          }
          const later = c.scheduleAt !== null && c.scheduleAt > now;
          await repo.updateCampaign(tx, id, {
            status: later ? 'ready' : 'running',
            statusReason: null,
            updatedAt: now,
            ...(later || c.startedAt ? {} : { startedAt: now }),
          });
          if (!later) {
            await emit(tx, {
              accountId,
              event: 'campaign.started',
              data: {
                campaignId: id,
                name: c.name,
                kind: c.kind,
                resumed: c.startedAt !== null,
                environment: c.environment,
              },
              at: now,
            });
          }
        } else if (action === 'pause') {
          if (c.status === 'paused') return;
          if (c.status !== 'running' && c.status !== 'ready') throw conflict(`A ${c.status} campaign cannot be paused`);
          await repo.updateCampaign(tx, id, { status: 'paused', statusReason: 'paused_by_user', updatedAt: now });
        } else {
          await repo.updateCampaign(tx, id, {
            status: 'completed',
            statusReason: 'stopped_by_user',
            completedAt: now,
            updatedAt: now,
          });
          await emit(tx, {
            accountId,
            event: 'campaign.completed',
            data: {
              campaignId: id,
              name: c.name,
              stopped: true,
              numbersDialed: c.numbersDialed,
              numbersAnswered: c.numbersAnswered,
              numbersFailed: c.numbersFailed,
              spent: c.spent,
            },
            at: now,
          });
        }
      });
      if (action === 'start') deps.wake();
      return campaignView(await mustGet(accountId, id));
    },

    /** Numbers given directly, or copied from a contact list (its contacts' names and fields come along). */
    async addNumbers(
      accountId: string,
      id: string,
      input: { numbers?: string[] | undefined },
      contacts: { number: string; name: string | null; fields: Record<string, string> | null }[] = [],
    ) {
      const c = await mustGet(accountId, id);
      if (FINAL.has(c.status)) throw conflict(`The campaign is ${c.status}`);
      const invalid: { index: number; value: string; message: string }[] = [];
      const rows = new Map<string, { number: string; name: string | null; fields: Record<string, string> | null }>();
      (input.numbers ?? []).forEach((raw, index) => {
        const n = numberDigits(raw);
        if (!isE164Digits(n)) invalid.push({ index, value: raw.slice(0, 40), message: 'must be an E.164 number' });
        else rows.set(n, { number: n, name: null, fields: null });
      });
      for (const x of contacts) {
        const n = numberDigits(x.number);
        if (isE164Digits(n) && !rows.has(n)) rows.set(n, { ...x, number: n });
      }
      const given = (input.numbers?.length ?? 0) + contacts.length;
      const added = await addRows(id, [...rows.values()]);
      return { added, duplicates: given - invalid.length - added, invalid, totalNumbers: c.totalNumbers + added };
    },

    /**
     * A CSV file of contacts streamed in: a header row naming a `number` (or `phone`) column and
     * optionally `name`, other columns becoming the contact's fields; without a header the first
     * column is the number. Progress is written a few times a second while it runs (`GET …/imports`).
     */
    async importContacts(accountId: string, id: string, body: Readable) {
      const c = await mustGet(accountId, id);
      if (FINAL.has(c.status)) throw conflict(`The campaign is ${c.status}`);
      const importId = newId();
      const startedAt = clock.now();
      await repo.insertImport({ id: importId, campaignId: id, accountId, startedAt });
      const stats = { rowsRead: 0, imported: 0, duplicates: 0, invalid: 0 };
      const errors: ImportRow['errors'] = [];
      let header: string[] | null = null;
      let numberCol = 0;
      let nameCol = -1;
      let batch = new Map<string, { number: string; name: string | null; fields: Record<string, string> | null }>();
      let inBatch = 0;
      // Every number of the file so far (as a number: 15 digits fit a double exactly, and take far
      // less memory than strings for a file of 1,000,000): a repeat anywhere in the file is counted
      // here, so the batches sent are distinct from each other, and from what the campaign held
      // when it held nothing else (addRows stores them without the conflict check then).
      const seen = new Set<number>();
      let stored = 0;
      // One batch is stored while the next is read: the database and the parser work at once.
      let storing: Promise<void> = Promise.resolve();
      let progressAt = 0;
      const store = async (rows: typeof batch, given: number) => {
        const added = await addRows(id, [...rows.values()], stored);
        stored += added;
        stats.imported += added;
        stats.duplicates += given - added;
        // Progress is for people watching: a few writes a second, not one per batch.
        if (Date.now() - progressAt >= PROGRESS_MS) {
          progressAt = Date.now();
          await repo.updateImport(sql, importId, { ...stats, errors });
        }
      };
      const flush = async () => {
        await storing;
        storing = store(batch, inBatch);
        // Handled when awaited; a failure must not surface as an unhandled rejection meanwhile.
        storing.catch(() => {});
        batch = new Map();
        inBatch = 0;
      };
      const refuse = (row: number, value: string, message: string) => {
        stats.invalid++;
        if (errors.length < ERRORS_KEPT) errors.push({ row, value: value.slice(0, 40), message });
      };
      try {
        for await (const rows of csvBatches(body)) {
          for (const { row, cells } of rows) {
            if (row === 1 && header === null) {
              const lower = cells.map((x) => x.toLowerCase());
              const col = lower.findIndex(
                (x) => x === 'number' || x === 'phone' || x === 'phone_number' || x === 'msisdn',
              );
              if (col >= 0 || lower.every((x) => !/\d/.test(x))) {
                header = cells;
                numberCol = Math.max(col, 0);
                nameCol = lower.indexOf('name');
                continue;
              }
            }
            stats.rowsRead++;
            const raw = cells[numberCol] ?? '';
            const n = numberDigits(raw);
            if (!isE164Digits(n)) {
              refuse(row, raw, 'must be an E.164 number');
              continue;
            }
            if (cells.some((x) => x.includes('\u0000'))) {
              refuse(row, raw, 'holds a NUL character');
              continue;
            }
            let fields: Record<string, string> | null = null;
            if (header) {
              for (let i = 0; i < header.length; i++) {
                if (i === numberCol || i === nameCol || cells[i] === undefined || cells[i] === '') continue;
                (fields ??= {})[header[i]!.slice(0, 64)] = cells[i]!.slice(0, 500);
              }
            }
            inBatch++;
            const key = Number(n);
            if (seen.has(key)) continue;
            seen.add(key);
            batch.set(n, {
              number: n,
              name: nameCol >= 0 ? (cells[nameCol]?.slice(0, 255) ?? null) || null : null,
              fields,
            });
            if (inBatch >= BATCH) await flush();
          }
        }
        await flush();
        await storing;
        await repo.updateImport(sql, importId, { ...stats, errors, status: 'completed', finishedAt: clock.now() });
      } catch (err) {
        // A batch still being stored when the file failed: its count belongs in the figures.
        await storing.catch(() => {});
        const message =
          err instanceof Error && 'code' in err && err.code === 'VALIDATION_ERROR'
            ? err.message
            : 'The file could not be read to the end';
        deps.log.warn({ err, campaignId: id }, 'contact import stopped');
        await repo.updateImport(sql, importId, {
          ...stats,
          errors,
          status: 'failed',
          error: message,
          finishedAt: clock.now(),
        });
      }
      return importView((await repo.imports(id)).find((r) => r.id === importId)!);
    },

    async imports(accountId: string, id: string) {
      await mustGet(accountId, id);
      return (await repo.imports(id)).map(importView);
    },

    /** One import of the campaign, however old. */
    async importJob(accountId: string, id: string, importId: string) {
      await mustGet(accountId, id);
      const row = await repo.importJob(id, importId);
      if (!row) throw notFound('Import');
      return importView(row);
    },
  };
}

export type CampaignsService = ReturnType<typeof createCampaignsService>;

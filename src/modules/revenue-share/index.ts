import type { CoreDeps } from '../../platform/core.js';
import type { CdrsService } from '../cdrs/index.js';
import type { Module } from '../../platform/module.js';
import { loadNodeId } from '../../platform/node-id.js';
import { every } from '../../platform/periodic.js';
import { createMediaPlane, type MediaPlane } from '../../telephony/media/index.js';
import type { MediaPool } from '../../telephony/media/pool.js';
import type { SipStack } from '../../telephony/sip/stack.js';
import { createAnnouncements } from './announcements.js';
import { createRevshareAnswering, type Forwarder } from './answer.js';
import type { HostCheck } from './answer-setting.js';
import { createCallsRepo } from './calls-repo.js';
import { createRevshareCrash, STALE_AFTER_MS } from './crash.js';
import { createEarnings } from './earnings.js';
import { createRevshareLedger } from './ledger-calls.js';
import { createRanges } from './ranges.js';
import { createRepo, type AnswerableRow } from './repo.js';
import { numberRoutes } from './routes-numbers.js';
import { rangeRoutes } from './routes-ranges.js';
import { trafficRoutes } from './routes-traffic.js';
import { createStats } from './stats.js';
import { createTraffic } from './traffic.js';

/**
 * Revenue share numbers (issue 22, docs/revenue-share.md): ranges with payouts per minute by origin,
 * numbers allocated to holders, calls answered on the SIP plane and credited through the ledger,
 * fraud rules, releases of held earnings, statistics and CDRs. `sip` is the daemon's SIP stack (the
 * module hooks one request handler into it); `media` the shared RTP pool that answers the calls;
 * `sourceIps` says which supplier addresses a range may name; `accountExists` checks a supplier id.
 */
/** A live call's heartbeat: three chances before it looks stale to another daemon. */
const HEARTBEAT_MS = STALE_AFTER_MS / 3;

export function buildRevenueShareModule(
  core: CoreDeps,
  deps: {
    sip: { stack: SipStack };
    media: { get(): MediaPool };
    sourceIps: { permits(ip: string): boolean };
    accountExists(id: string): Promise<boolean>;
    /** The shared CDR table: each call to a holder's number is written there too. */
    cdrs: Pick<CdrsService, 'insertCdrs'>;
    /** The outbound guard: a forward's SIP host is checked when the holder sets it. */
    guard: HostCheck;
    /** The trunk B2BUA's bridge for forwards (asked at call time: the SIP plane starts after this module is built). */
    forward?: Forwarder;
  },
) {
  const { sql, clock, config } = core;
  const settings = config.revenue_share;
  const log = core.log.child({ module: 'revenue-share' });
  const repo = createRepo();
  const callsRepo = createCallsRepo();
  const ledger = createRevshareLedger();

  // Which numbers this daemon answers: reloaded on every local change and every number_cache_seconds.
  let answerable = new Map<string, AnswerableRow>();
  let reloading: Promise<void> | null = null;
  let again = false;
  const reload = async (): Promise<void> => {
    if (reloading) {
      again = true;
      return reloading;
    }
    reloading = (async () => {
      do {
        again = false;
        const rows = await repo.answerable(sql);
        answerable = new Map(rows.map((r) => [r.number, r]));
      } while (again);
    })().finally(() => (reloading = null));
    return reloading;
  };
  const changed = () => {
    reload().catch((err: unknown) => log.error({ err }, 'revenue share numbers not reloaded'));
  };

  const ranges = createRanges({
    sql,
    clock,
    log,
    repo,
    sourceIps: deps.sourceIps,
    accountExists: deps.accountExists,
    guard: deps.guard,
    changed,
  });
  const traffic = createTraffic({ sql, clock, log, repo: callsRepo, ledger, settings, cdrs: deps.cdrs });
  const earnings = createEarnings({ sql, clock, log, repo: callsRepo, ledger, ranges, settings });
  const stats = createStats({ sql, clock });
  const crash = createRevshareCrash({
    sql,
    clock,
    log,
    node: loadNodeId(config.paths.state),
    recordIn: traffic.recordIn,
  });
  // TTS, MP3 decoding and the guarded downloader, made on the first announcement played.
  let plane: MediaPlane | null = null;
  const prompts = (): MediaPlane =>
    (plane ??= createMediaPlane({
      log,
      pool: deps.media.get(),
      workers: config.rtp.workers,
      portMin: config.rtp.port_min,
      portMax: config.rtp.port_max,
      ttsCacheDir: `${config.paths.state}/tts-cache`,
    }));
  const announcements = createAnnouncements({
    renderer: () => prompts().renderer,
    download: (url) => prompts().downloader.download(url),
    now: () => clock.now().getTime(),
  });
  const answering = createRevshareAnswering({
    stack: deps.sip.stack,
    media: deps.media,
    clock,
    log,
    lookup: (n) => answerable.get(n),
    record: (c) => traffic.record(c),
    answered: (c) => crash.answered(c),
    announcement: (a, codec) => announcements.audio(a, codec),
    ...(deps.forward ? { forward: deps.forward } : {}),
  });

  const loops: { stop(): Promise<void> }[] = [];
  const module: Module = {
    name: 'revenue-share',
    routes: (app) => {
      rangeRoutes(ranges)(app);
      numberRoutes({ ranges, stats })(app);
      trafficRoutes({ stats, earnings })(app);
    },
    async start() {
      await reload();
      // Before any call is answered here: this node's rows are from its previous life.
      await crash.reconcile({ atStart: true });
      loops.push(
        every(HEARTBEAT_MS, async () => {
          try {
            await crash.heartbeat(answering.answeredKeys());
            await crash.reconcile();
          } catch (err) {
            log.error({ err }, 'revenue share heartbeat failed');
          }
        }),
        every(settings.number_cache_seconds * 1000, async () => changed()),
        every(settings.release_interval_seconds * 1000, async () => {
          try {
            await earnings.runReleases();
          } catch (err) {
            log.error({ err }, 'revenue share releases failed');
          }
        }),
      );
    },
    async stop() {
      await Promise.all(loops.splice(0).map((l) => l.stop()));
      await answering.hangupAll();
      await plane?.close();
    },
  };
  const service = { ranges, traffic, earnings, stats, answering, reload, crash };
  return { module, service };
}

export type RevenueShareService = ReturnType<typeof buildRevenueShareModule>['service'];

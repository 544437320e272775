/**
 * Overload control for new calls (RFC 6357 §4, the local form of RFC 7339's loss algorithm): when
 * callers retransmit the INVITEs we admitted (our receive queue is 300 ms behind), or the event loop
 * has no idle moment left or falls behind, a growing share of new INVITEs is refused with 503 and
 * Retry-After before any work is spent on them, so the calls already admitted keep their latency and
 * the daemon does not collapse into retransmissions of INVITEs and 2xx it can no longer answer in time.
 *
 * Each rule acts on a state that persists, not on one reading: an overload is offered load above
 * capacity, and it lasts until the callers back off (RFC 6357 §3), so the loop is late in most
 * windows of it. A single late window is a stall the loop recovers from by itself: V8 compiling a
 * path the first calls take, a prepared statement's first use, a major GC. Refusing on one such
 * window turned away calls the daemon then carried, most visibly in a freshly started daemon's first
 * seconds under traffic. Neither a warm-up at start nor a grace after it would be right: a warm-up
 * reaches the paths that stall only by placing calls (holds, call rows, settlements), and covers
 * only the start while a stall comes with any path first taken later; a grace lets a daemon
 * restarted into a real overload (a crash at peak) take everything until it collapses.
 */
import { monitorEventLoopDelay, performance, type IntervalHistogram } from 'node:perf_hooks';
import type { Logger } from 'pino';

export interface OverloadSettings {
  /**
   * Admitted new INVITEs that their callers retransmitted, as a percentage of those admitted over
   * the last five windows, at or above which the refused share grows; 0: never. A caller
   * retransmits when no response reached it within T1 (500 ms): a daemon that keeps up answers
   * within 200 ms (the deferred 100 Trying, or at once with a challenge), so only a lost datagram or
   * a queue of ours 300 ms long makes one. Over TCP and TLS callers do not retransmit and the rule
   * never fires.
   */
  retransmitPct: number;
  /** Below this share (and the other rules below theirs) the refused share falls again. */
  resumeRetransmitPct: number;
  /**
   * Event-loop utilisation over a window (percent of its time not idle) at or above which the
   * refused share grows; 0: never. A loop that never waits for I/O has messages queued in the kernel.
   */
  busyPct: number;
  /** Below this utilisation (and below `resumeDelayMs`) the refused share falls again. */
  resumeBusyPct: number;
  /**
   * Event-loop delay (mean lateness over a window, ms; the median of the last five windows) at or
   * above which the refused share grows; 0: never.
   */
  loopDelayMs: number;
  /** Below this delay (the same median) the refused share falls again (the band between is the hysteresis). */
  resumeDelayMs: number;
  /** INVITE server transactions admitted and not yet answered finally at which every new INVITE is refused; 0: no cap. */
  maxInvitesInSetup: number;
  /** Seconds in the 503's Retry-After. */
  retryAfterSeconds: number;
}

/** Where the guard reports (prom-client metrics in the daemon; tests read `stats()`). */
export interface OverloadMetrics {
  refused(): void;
  ratio(share: number): void;
  loopDelay(ms: number): void;
  loopBusy(share: number): void;
  /** An admitted new INVITE was retransmitted (counted once per transaction). */
  retransmission(): void;
  /** Retransmitted per admitted new INVITE over the rule's windows. */
  retransmitShare(share: number): void;
}

export interface OverloadGuard {
  /**
   * True when this new INVITE is to be refused; `inSetup` is the count of INVITEs admitted and not
   * answered finally. Called once per new INVITE (no To tag): those admitted are the retransmission
   * rule's denominator.
   */
  refuse(inSetup: number): boolean;
  /**
   * An admitted new INVITE was retransmitted: the stack calls it at most once per transaction, and
   * never for one it refused (a refused INVITE's retransmissions would keep the rule hot by its own refusals).
   */
  retransmitted(): void;
  /** INVITEs in setup at which all new ones are refused (the stack counts them only when above 0). */
  readonly setupCap: number;
  /** The Retry-After header value. */
  readonly retryAfter: string;
  /** One window: reads the rules and moves the refused share (run by the guard's own timer unless `sampleEveryMs` is 0). */
  sample(): void;
  /** Forgets the share and the readings so far (the daemon's own start is no overload). */
  reset(): void;
  stats(): {
    refused: number;
    ratio: number;
    loopDelayMs: number;
    loopBusy: number;
    /** Retransmitted per admitted new INVITE over the last windows, and the totals so far. */
    retransmitShare: number;
    retransmissions: number;
    invites: number;
  };
  close(): void;
}

/** How often the delay is read and the refused share moved: a few dozen loop turns under load. */
const WINDOW_MS = 100;
/** The histogram's timer period; its readings include it, so it is taken off. */
const RESOLUTION_MS = 10;
/**
 * The refused share moves in twentieths (integers, so it returns exactly to none): up two per delayed
 * window, from none to all in a second of overload, and down one per window below the resume mark,
 * so it settles near the share the loop can carry instead of swinging between admitting everything
 * and refusing everything.
 */
const STEPS = 20;
const RAISE = 2;
/**
 * Windows in a row at or over the busy mark before the share grows. A loop that keeps up still has
 * single windows with no idle moment (a scavenge, a batch of answers landing together): at 300
 * calls/s, which this daemon carries with setup p99 under 100 ms, one-window readings refused 8 %
 * of new INVITEs and cut the sustained rate from 400/s to 200/s. A loop that has fallen behind is
 * busy in every window.
 */
const BUSY_WINDOWS = 5;
/**
 * The delay rule reads the median of the last five windows' delays (half a second), rising and
 * falling. A stall (compiling, a first statement, a GC) makes one late window, or two when it falls
 * across a window's end, and a median of five ignores two readings whatever their size: a cold
 * daemon had such windows (100-400 ms, alone or in pairs) in its first seconds at 50 and 100
 * calls/s and refused calls it then carried. A loop that has fallen behind is late in most windows,
 * and the median follows it from its third late window: the first refusal comes two windows later
 * than on one (200 ms; 500-750 ms for a loop held in 250 ms turns, each window one turn), the price
 * of not refusing for a stall. Windows in a row would not do: an overloaded loop's delay hovers
 * about the mark (a window holding one long turn reads 90-110 ms), and over recorded overloads
 * three in a row would have refused a third as many calls as one window, the median of five 86 %.
 */
const DELAY_WINDOWS = 5;
const LOWER = 1;
/**
 * The retransmission rule reads the last five windows together: the retransmissions a window sees
 * answer INVITEs of half a second before, and a burst of them (the queue crossing 300 ms) is spread
 * over a few windows. Below `RETRANSMIT_MIN` retransmissions in those windows the rule never trips,
 * whatever the share: at a few calls a second a lost datagram or two is a large share and no overload.
 */
const RETRANSMIT_WINDOWS = 5;
const RETRANSMIT_MIN = 5;
/** At most one warning per this long while refusing. */
const WARN_EVERY_MS = 10_000;

export interface OverloadGuardOptions {
  settings: OverloadSettings;
  log: Logger;
  metrics?: OverloadMetrics;
  /** Milliseconds, monotonic; tests pass their own. */
  now?: () => number;
  /** Mean event-loop delay in ms since the last call (the delay monitor by default); tests pass their own. */
  loopDelay?: () => number;
  /** Event-loop utilisation (0 to 1) since the last call (Node's own reading by default); tests pass their own. */
  loopBusy?: () => number;
  /** 0: no timer, the caller runs `sample()` (tests). */
  sampleEveryMs?: number;
}

/** The event-loop delay monitor: mean lateness since the last reading, in ms. */
function loopDelayMonitor(): { read(): number; close(): void } {
  const h: IntervalHistogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  h.enable();
  return {
    read() {
      // No reading at all in a window: the loop was blocked for all of it.
      const ms = h.count === 0 ? WINDOW_MS : h.mean / 1e6 - RESOLUTION_MS;
      h.reset();
      return Math.max(0, ms);
    },
    close: () => h.disable(),
  };
}

/** The middle reading of an odd count. */
function median(x: readonly number[]): number {
  return [...x].sort((a, b) => a - b)[x.length >> 1] ?? 0;
}

/** Node's event-loop utilisation since the last reading: a subtraction of two counters libuv keeps. */
function loopBusyReader(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const u = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    return u;
  };
}

export function createOverloadGuard(opts: OverloadGuardOptions): OverloadGuard {
  const { settings, log, metrics } = opts;
  const now = opts.now ?? (() => performance.now());
  const byDelay = settings.loopDelayMs > 0;
  const byBusy = settings.busyPct > 0;
  const byRetransmit = settings.retransmitPct > 0;
  const monitor = byDelay && !opts.loopDelay ? loopDelayMonitor() : null;
  const readDelay = opts.loopDelay ?? monitor?.read ?? (() => 0);
  const readBusy = opts.loopBusy ?? (byBusy ? loopBusyReader() : () => 0);
  const resumeMs = byDelay ? Math.min(settings.resumeDelayMs, settings.loopDelayMs) : Infinity;
  const busyHigh = settings.busyPct / 100;
  const busyLow = byBusy ? Math.min(settings.resumeBusyPct, settings.busyPct) / 100 : Infinity;
  const retransmitHigh = settings.retransmitPct / 100;
  const retransmitLow = Math.min(settings.resumeRetransmitPct, settings.retransmitPct) / 100;
  let level = 0;
  // Refusals spread evenly through the stream (a share of 0.3 refuses 3 INVITEs in 10), not by chance.
  let credit = 0;
  let delayMs = 0;
  let busy = 0;
  let refused = 0;
  let refusedSinceLog = 0;
  let warnedAt = -Infinity;
  let refusing = false;
  let busyRun = 0;
  // The last windows' delays, for their median; zeros at start, so the first late windows are alone.
  const delays = new Array<number>(DELAY_WINDOWS).fill(0);
  let delayAt = 0;
  // Admitted new INVITEs and those retransmitted: this window's counts, the last windows' in rings.
  let invites = 0;
  let retransmits = 0;
  let invitesTotal = 0;
  let retransmitsTotal = 0;
  const invitesRing = new Array<number>(RETRANSMIT_WINDOWS).fill(0);
  const retransmitsRing = new Array<number>(RETRANSMIT_WINDOWS).fill(0);
  let ringAt = 0;
  let retransmitShare = 0;

  /** Hot (grow), cool (may fall) or neither, by the retransmissions of the last windows. */
  const retransmitReading = (): 'hot' | 'cool' | 'between' => {
    const windowHot = retransmits > 0 && retransmits >= retransmitHigh * invites;
    invitesRing[ringAt] = invites;
    retransmitsRing[ringAt] = retransmits;
    ringAt = (ringAt + 1) % RETRANSMIT_WINDOWS;
    invites = 0;
    retransmits = 0;
    let n = 0;
    let r = 0;
    for (let i = 0; i < RETRANSMIT_WINDOWS; i++) {
      n += invitesRing[i]!;
      r += retransmitsRing[i]!;
    }
    retransmitShare = r / Math.max(1, n);
    metrics?.retransmitShare(retransmitShare);
    if (!byRetransmit || r < RETRANSMIT_MIN) return 'cool';
    // Grows only while this window's own share is at the mark: the signal trails the admissions
    // behind it by T1 and our queue, and the windows' sum would go on raising it for half a second
    // after the retransmissions stopped (half of all calls refused too many, on a small overload).
    if (retransmitShare >= retransmitHigh) return windowHot ? 'hot' : 'between';
    return retransmitShare < retransmitLow ? 'cool' : 'between';
  };

  const sample = (): void => {
    const retransmission = retransmitReading();
    if (!byDelay && !byBusy && !byRetransmit) return;
    delayMs = readDelay();
    busy = readBusy();
    metrics?.loopDelay(delayMs);
    metrics?.loopBusy(busy);
    const before = level;
    busyRun = byBusy && busy >= busyHigh ? busyRun + 1 : 0;
    delays[delayAt] = delayMs;
    delayAt = (delayAt + 1) % DELAY_WINDOWS;
    const delay = median(delays);
    if ((byDelay && delay >= settings.loopDelayMs) || busyRun >= BUSY_WINDOWS || retransmission === 'hot')
      level = Math.min(STEPS, level + RAISE);
    else if (delay < resumeMs && busy < busyLow && retransmission === 'cool') level = Math.max(0, level - LOWER);
    if (level === 0) credit = 0;
    if (level !== before) metrics?.ratio(level / STEPS);
    if (refusing && level === 0) {
      refusing = false;
      log.info(
        {
          refused: refusedSinceLog,
          loopDelayMs: Math.round(delayMs),
          loopBusy: busy,
          retransmitShare: Number(retransmitShare.toFixed(3)),
        },
        'sip overload over',
      );
      refusedSinceLog = 0;
    }
  };
  const every = opts.sampleEveryMs ?? WINDOW_MS;
  // The timer keeps nothing alive: a stopping daemon closes its stack, and the guard with it. It runs
  // with every rule off too, for the retransmission share's gauge.
  const timer = every > 0 ? setInterval(sample, every) : null;
  timer?.unref();

  const noteRefusal = (cause: 'loop' | 'setup', inSetup: number): void => {
    refused++;
    refusedSinceLog++;
    metrics?.refused();
    // The share only: a setup-cap refusal has no window to end it, and is logged at the next warning.
    if (cause === 'loop') refusing = true;
    const t = now();
    if (t - warnedAt < WARN_EVERY_MS) return;
    warnedAt = t;
    log.warn(
      {
        cause,
        refused: refusedSinceLog,
        refusedShare: level / STEPS,
        loopDelayMs: Math.round(delayMs),
        loopBusy: busy,
        retransmitShare: Number(retransmitShare.toFixed(3)),
        inSetup,
      },
      'sip overload: refusing new INVITEs with 503',
    );
    refusedSinceLog = 0;
  };

  return {
    setupCap: settings.maxInvitesInSetup,
    retryAfter: String(settings.retryAfterSeconds),
    refuse(inSetup) {
      if (settings.maxInvitesInSetup > 0 && inSetup >= settings.maxInvitesInSetup) {
        noteRefusal('setup', inSetup);
        return true;
      }
      if (level > 0) {
        credit += level;
        if (credit >= STEPS) {
          credit -= STEPS;
          noteRefusal('loop', inSetup);
          return true;
        }
      }
      invites++;
      invitesTotal++;
      return false;
    },
    retransmitted() {
      retransmits++;
      retransmitsTotal++;
      metrics?.retransmission();
    },
    sample,
    reset() {
      readDelay();
      readBusy();
      level = 0;
      credit = 0;
      busyRun = 0;
      delays.fill(0);
      invites = 0;
      retransmits = 0;
      invitesRing.fill(0);
      retransmitsRing.fill(0);
      retransmitShare = 0;
      metrics?.ratio(0);
    },
    stats: () => ({
      refused,
      ratio: level / STEPS,
      loopDelayMs: delayMs,
      loopBusy: busy,
      retransmitShare,
      retransmissions: retransmitsTotal,
      invites: invitesTotal,
    }),
    close() {
      if (timer) clearInterval(timer);
      monitor?.close();
    },
  };
}

/**
 * The transaction timers of one stack as FIFO queues, one per duration (RFC 3261 §17 timers).
 *
 * Every RFC timer has a fixed duration for its kind (Timer B, F, H, J, L and M are 64·T1, D 32 s, K
 * and I T4, retransmissions T1·2^n): entries of one duration expire in the order they were added,
 * so a queue needs no heap, and one platform timer per queue serves all its entries. A timer per
 * transaction cost a Timeout, a closure and a Map entry each, and kept them for 32 s; at a
 * thousand calls a second that was about a hundred thousand live timers for the collector to mark.
 * A cancelled entry only lets go of its owner; it leaves its queue when its time comes.
 */
/** The part of the stack's `SipTimers` (transaction.ts) the queues use. */
export interface ExpiryTimers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
  now(): number;
  lateMs?: number;
}

/** What an entry calls when it expires: `kind` says which of its timers it was. */
export interface ExpiryOwner {
  expire(kind: number): void;
}

/** One pending expiry; `cancel` it to stop it. */
export class Expiry {
  constructor(
    readonly at: number,
    public owner: ExpiryOwner | undefined,
    readonly kind: number,
  ) {}

  cancel(): void {
    this.owner = undefined;
  }
}

/** Compacted once this many expired entries sit before the head (and they are half the array). */
const COMPACT_AT = 1024;

class ExpiryQueue {
  private items: Array<Expiry | undefined> = [];
  private head = 0;
  private armed: unknown;
  /** While expiring: entries added then wait for the re-arm at the end, which knows the head. */
  private running = false;
  private readonly fire = (): void => this.run();

  constructor(
    private readonly timers: ExpiryTimers,
    private readonly ms: number,
    private readonly lateMs: number,
  ) {}

  add(owner: ExpiryOwner, kind: number): Expiry {
    const e = new Expiry(this.timers.now() + this.ms, owner, kind);
    this.items.push(e);
    if (this.armed === undefined && !this.running) this.arm(this.ms);
    return e;
  }

  /** Entries waiting, cancelled ones included. */
  get size(): number {
    return this.items.length - this.head;
  }

  private run(): void {
    this.armed = undefined;
    const now = this.timers.now();
    // Only what was queued before this run: a zero-length queue would otherwise run forever on
    // entries its own callbacks add.
    const end = this.items.length;
    this.running = true;
    try {
      while (this.head < end) {
        const e = this.items[this.head] as Expiry;
        if (e.owner !== undefined && e.at > now) break;
        this.items[this.head++] = undefined;
        const owner = e.owner;
        if (owner === undefined) continue;
        e.owner = undefined;
        owner.expire(e.kind);
      }
    } finally {
      this.running = false;
      this.rearm();
    }
  }

  private rearm(): void {
    // Cancelled entries at the head need no wake-up of their own.
    while (this.head < this.items.length && this.items[this.head]?.owner === undefined)
      this.items[this.head++] = undefined;
    this.compact();
    const next = this.items[this.head];
    if (next === undefined || this.armed !== undefined) return;
    this.arm(next.at - this.timers.now());
  }

  private arm(ms: number): void {
    this.armed = this.timers.set(this.fire, Math.max(ms, 0) + this.lateMs);
  }

  private compact(): void {
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= COMPACT_AT && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }

  close(): void {
    if (this.armed !== undefined) this.timers.clear(this.armed);
    this.armed = undefined;
    this.items = [];
    this.head = 0;
  }
}

/** The queues of one stack, made as durations are first asked for (a handful: see the file's head). */
export class Expiries {
  private readonly queues = new Map<number, ExpiryQueue>();

  constructor(private readonly timers: ExpiryTimers) {}

  /** Calls `owner.expire(kind)` after `ms` (a little later with timers that batch, `lateMs`). */
  add(ms: number, owner: ExpiryOwner, kind: number): Expiry {
    let q = this.queues.get(ms);
    if (q === undefined) {
      q = new ExpiryQueue(this.timers, ms, this.timers.lateMs ?? 0);
      this.queues.set(ms, q);
    }
    return q.add(owner, kind);
  }

  /** Entries waiting in all queues, cancelled ones included. */
  get size(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.size;
    return n;
  }

  close(): void {
    for (const q of this.queues.values()) q.close();
    this.queues.clear();
  }
}

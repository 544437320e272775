import type { PrefixIndex, RateMatch } from './prefix-index.js';

/** One deck's answer in a multi-deck look-up. */
export interface DeckMatch {
  readonly deckId: string;
  readonly match: RateMatch;
}

/**
 * Holds the live prefix index of every deck. Decks are replaced whole: a look-up sees either the old
 * index or the new one, never a half-built deck, because `set` swaps one reference.
 */
export interface DeckRegistry {
  set(deckId: string, index: PrefixIndex): void;
  delete(deckId: string): boolean;
  get(deckId: string): PrefixIndex | undefined;
  has(deckId: string): boolean;
  readonly size: number;
  ids(): IterableIterator<string>;
  /** Longest-prefix match in one deck. */
  lookup(deckId: string, digits: string): RateMatch | undefined;
  /**
   * Prices `digits` in each listed deck at that deck's own longest prefix; decks that do not cover the
   * number (or are unknown) are left out. Pass `out` to reuse an array on hot paths.
   */
  lookupMany(deckIds: readonly string[], digits: string, out?: DeckMatch[]): DeckMatch[];
}

export function createDeckRegistry(): DeckRegistry {
  const decks = new Map<string, PrefixIndex>();
  return {
    set(deckId, index) {
      decks.set(deckId, index);
    },
    delete: (deckId) => decks.delete(deckId),
    get: (deckId) => decks.get(deckId),
    has: (deckId) => decks.has(deckId),
    get size() {
      return decks.size;
    },
    ids: () => decks.keys(),
    lookup(deckId, digits) {
      return decks.get(deckId)?.lookup(digits);
    },
    lookupMany(deckIds, digits, out = []) {
      out.length = 0;
      for (const deckId of deckIds) {
        const match = decks.get(deckId)?.lookup(digits);
        if (match !== undefined) out.push({ deckId, match });
      }
      return out;
    },
  };
}

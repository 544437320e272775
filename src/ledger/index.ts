export { Money, MoneyError, money6 } from './money.js';
export { createLedger, EntryTypes } from './ledger.js';
export type {
  Balance,
  ChargeInput,
  ChargeResult,
  HoldInput,
  EntryContext,
  EntryType,
  HoldResult,
  Ledger,
  LedgerDeps,
  LedgerEventSink,
  LedgerMode,
  PostingResult,
  SettleResult,
  TopupSource,
} from './ledger.js';

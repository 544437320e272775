export type { BillingIncrement } from './increment.js';
export { parseIncrement, requireIncrement, billableSeconds, incrementNotCheaper } from './increment.js';
export type { RateParse } from './money.js';
export { parseRate, round6, toMoney } from './money.js';
export type { DeckRow, RateMatch, PrefixIndex } from './prefix-index.js';
export { createPrefixIndex, createPrefixIndexSliced } from './prefix-index.js';
export type { DeckMatch, DeckRegistry } from './deck-registry.js';
export { createDeckRegistry } from './deck-registry.js';
export type { PlatformFee, PlatformFeeConfig, RateUnit, CallCharge, SmsPrice, SmsRateBasis } from './pricing.js';
export { createPlatformFee, NO_FEE, buyerRate, callCost, priceCall, priceSms, smsCost } from './pricing.js';
export type { DeckType, SheetRow, SheetError, SheetResult, SheetOptions, RawSheetRow } from './sheet.js';
export {
  countCsvRows,
  parseRateSheetCsv,
  parseRateSheetCsvSliced,
  parseRateSheetJson,
  parseRateSheetJsonSliced,
  validateSheetRows,
} from './sheet.js';
export type {
  DeckEntry,
  NewSheetEntry,
  RateChangeKind,
  PlannedRateChange,
  RatePlan,
  PlanOptions,
} from './rate-changes.js';
export {
  planRateChanges,
  planRateChangesSteps,
  effectiveDeckAt,
  nextTransitionAfter,
  rowKey,
  DEFAULT_NOTICE_DAYS,
} from './rate-changes.js';
export type { CallerOrigin, OriginKind } from './origin.js';
export { callerOrigin, parseOrigin, NO_ORIGIN } from './origin.js';

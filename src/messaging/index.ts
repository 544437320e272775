// Public surface of the messaging plane (README.md beside this file).
export {
  countSegments,
  splitForWire,
  chooseEncoding,
  needsUcs2,
  DATA_CODING_GSM7,
  DATA_CODING_UCS2,
} from './segments.js';
export type { SegmentInfo, WirePart, SmsEncoding } from './segments.js';
export { isGsm7, gsm7Length } from './gsm7.js';
export { checkSender } from './sender.js';
export type { SenderCheck } from './sender.js';
export { networkFor, createNetworkLookup } from './network.js';
export type { NetworkInfo, NetworkLookup } from './network.js';
export {
  buildReceiptText,
  parseReceiptText,
  normaliseSupplierMessageId,
  supplierIdKeys,
  sameSupplierMessageId,
  isDelivered,
  isFailed,
  messageStateFor,
} from './receipt-text.js';
export type { ReceiptStat, ReceiptText } from './receipt-text.js';
export { bindSlotKey, countedSlots, createSmppServer } from './smpp-server.js';
export type {
  SmppServer,
  SmppServerOptions,
  SmppAccount,
  SmppSubmission,
  SmppSubmitResult,
  CustomerReceipt,
  BindType,
  BindSlots,
} from './smpp-server.js';
export { createSupplierBind } from './supplier-bind.js';
export type {
  SupplierBind,
  SupplierBindOptions,
  OutboundSms,
  SubmitOutcome,
  SupplierReceipt,
  SupplierBindState,
  MobileOriginated,
} from './supplier-bind.js';
export { checkBind } from './check-bind.js';
export { bindFieldProblems } from './bind-fields.js';
export type { CheckBindDetails, CheckBindResult, BindCheck } from './check-bind.js';
export { createHttpSupplier, verifyReceiptCallback, signBody, verifySignature } from './http-delivery.js';
export type {
  HttpSupplier,
  HttpSupplierOptions,
  HttpOutboundSms,
  HttpSubmitOutcome,
  HttpReceipt,
  VerifyReceiptResult,
} from './http-delivery.js';
export { STATUS as SMPP_STATUS } from './smpp-lib.js';

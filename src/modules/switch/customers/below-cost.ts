import { AppError } from '../../../http/errors.js';

/**
 * Every route to the number costs more than the Switch customer's sell rate for it (docs/switch.md
 * "Below cost"): refused before any hold, `details.code` telling it apart without reading the message.
 */
export const belowSellRate = () =>
  new AppError('VALIDATION_ERROR', "No route to this number costs less than the customer's sell rate", {
    code: 'SELL_RATE_BELOW_COST',
  });

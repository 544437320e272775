/**
 * The one E.164 rule of every plane (HTTP bodies, SMS, SIP trunk). The spec names E.164 without a
 * digit count; this keeps the API's long-standing rule: a country code that does not start with 0,
 * 7 to 15 digits in all (ITU-T E.164 caps a number at 15).
 */
const DIGITS_SOURCE = '[1-9]\\d{6,14}';
const DIGITS = new RegExp(`^${DIGITS_SOURCE}$`);

/** The API form as a JSON-schema pattern body (no anchors), for settings validated by schema. */
export const E164_PATTERN_BODY = `\\+?${DIGITS_SOURCE}`;

/** E.164 digits without '+', as SIP trunks carry them (spec "Authentication", SIP trunk paragraph). */
export function isE164Digits(n: string): boolean {
  return DIGITS.test(n);
}

/** E.164 as the API takes it: the same digits, with or without a leading '+'. */
export function isE164(n: string): boolean {
  return isE164Digits(n.startsWith('+') ? n.slice(1) : n);
}

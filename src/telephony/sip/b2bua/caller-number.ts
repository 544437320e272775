import { parseNameAddr, splitOutside, unescapeUser } from '../headers.js';
import { fromOf, headerValues, type SipRequest } from '../message.js';

/**
 * The caller's number for origin-based rates: the first P-Asserted-Identity (RFC 3325) carrying a
 * number, as carriers rate on the asserted identity, else the From user part. Digits only
 * (a leading `+` and visual separators dropped); '' when neither holds a number.
 */
export function callerNumberOf(req: SipRequest): string {
  // One header may hold a SIP and a tel identity side by side (RFC 3325 §9.1).
  for (const line of headerValues(req, 'p-asserted-identity'))
    for (const value of splitOutside(line, ',')) {
      const digits = numberIn(value);
      if (digits !== '') return digits;
    }
  try {
    return digitsOf(fromOf(req).uri.user ?? '');
  } catch {
    return '';
  }
}

function numberIn(value: string): string {
  try {
    const uri = parseNameAddr(value).uri;
    // tel:+3314… carries the number where a SIP URI has its host.
    return digitsOf(uri.scheme === 'tel' ? uri.host : (uri.user ?? ''));
  } catch {
    return '';
  }
}

function digitsOf(user: string): string {
  const d = unescapeUser(user)
    .replace(/[\s\-().]/g, '')
    .replace(/^\+/, '');
  return /^\d{1,15}$/.test(d) ? d : '';
}

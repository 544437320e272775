import { stringify } from 'csv-stringify';
import type { Stringifier } from 'csv-stringify';

// A spreadsheet reads a cell starting with one of these as a formula (OWASP "CSV Injection"); the
// full-width forms are folded to them by some spreadsheet locales.
const FORMULA_START = /^[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/;
// A number our own code formatted (money, counts): a spreadsheet takes it as a value, never a formula.
const PLAIN_NUMBER = /^-?\d+(\.\d+)?$/;

/**
 * One CSV cell as text a spreadsheet shows as written: text that would start a formula gets a
 * leading apostrophe (and is quoted by the writer). `numeric` columns keep plain numbers as they
 * are, so a debit of -1.500000 stays a number.
 */
export function csvCellText(value: string, numeric: boolean): { text: string; escaped: boolean } {
  if (!FORMULA_START.test(value) || (numeric && PLAIN_NUMBER.test(value))) return { text: value, escaped: false };
  return { text: `'${value}`, escaped: true };
}

/**
 * The CSV writer of every export: a header row, RFC 4180 quoting, and every string cell passed
 * through `csvCellText`. `numeric` names the columns whose values our code formats as numbers.
 */
export function createCsvWriter<K extends string>(columns: readonly K[], numeric: readonly K[] = []): Stringifier {
  const numbers = new Set<string>(numeric);
  return stringify({
    header: true,
    columns: [...columns],
    quoted_match: /[",\r\n]/,
    cast: {
      string: (value, ctx) => {
        if (ctx.header) return value;
        const cell = csvCellText(value, numbers.has(String(ctx.column)));
        return cell.escaped ? { value: cell.text, quoted: true } : cell.text;
      },
    },
  });
}

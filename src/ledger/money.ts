import { Decimal } from 'decimal.js';

// numeric(20,6): at most 14 integer digits and 6 decimals, optionally signed.
const MONEY_RE = /^-?\d{1,14}(\.\d{1,6})?$/;

export class MoneyError extends Error {
  override name = 'MoneyError';
}

/**
 * A USD amount with at most 6 decimals (spec "Conventions": money). Built only from strings or
 * Decimals so no figure ever passes through a JavaScript number; printed with exactly 6 places.
 */
export class Money {
  private constructor(readonly value: Decimal) {}

  static readonly zero = new Money(new Decimal(0));

  /** Parses a money string or Decimal; refuses more than 6 decimals, exponents and numbers. */
  static parse(input: string | Decimal | Money): Money {
    if (input instanceof Money) return input;
    if (input instanceof Decimal) {
      if (!input.isFinite() || input.decimalPlaces() > 6)
        throw new MoneyError(`not a 6-place amount: ${input.toString()}`);
      return new Money(input);
    }
    if (typeof input !== 'string') throw new MoneyError('money must be a string or a Decimal');
    const s = input.trim();
    if (!MONEY_RE.test(s)) throw new MoneyError(`not a money amount: "${input.slice(0, 40)}"`);
    return new Money(new Decimal(s));
  }

  /** True when the text is a valid amount (see parse). */
  static isValid(input: string): boolean {
    return MONEY_RE.test(input.trim());
  }

  /** Rounds half-up to 6 places: for results of multiplication and division. */
  static round(d: Decimal): Money {
    return new Money(d.toDecimalPlaces(6, Decimal.ROUND_HALF_UP));
  }

  plus(o: Money | string): Money {
    return new Money(this.value.plus(Money.parse(o).value));
  }
  minus(o: Money | string): Money {
    return new Money(this.value.minus(Money.parse(o).value));
  }
  times(factor: Decimal | string): Money {
    return Money.round(this.value.times(factor));
  }
  neg(): Money {
    return new Money(this.value.neg());
  }
  cmp(o: Money | string): number {
    return this.value.cmp(Money.parse(o).value);
  }
  isZero(): boolean {
    return this.value.isZero();
  }
  isNegative(): boolean {
    return this.value.isNegative() && !this.value.isZero();
  }
  isPositive(): boolean {
    return this.value.isPositive() && !this.value.isZero();
  }

  /** The wire form: exactly six places. */
  toString(): string {
    return this.value.toFixed(6);
  }
  toJSON(): string {
    return this.toString();
  }
  /** For display figures (charts, analytics), which the spec gives as plain JSON numbers. */
  toDisplayNumber(): number {
    return this.value.toNumber();
  }
}

/** Formats a numeric string from PostgreSQL (or null as zero) with exactly six places. */
export function money6(v: string | null | undefined): string {
  return v === null || v === undefined ? '0.000000' : new Decimal(v).toFixed(6);
}

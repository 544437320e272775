/**
 * English country names by ISO 3166 code, for reports and listings. The display-names object is
 * made on first use: making it loads ICU data, about 25 ms that every daemon start paid in each of
 * the modules that kept one of their own.
 */
let names: Intl.DisplayNames | null = null;

export function countryName(iso: string): string | undefined {
  names ??= new Intl.DisplayNames(['en'], { type: 'region' });
  return names.of(iso);
}

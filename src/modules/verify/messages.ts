import type { CallLanguage } from '../../telephony/engine.js';

/** Voice reads the code in the media plane's six languages; SMS also carries Arabic (spec "Verify"). */
export const VOICE_LANGUAGES: readonly CallLanguage[] = ['en', 'es', 'fr', 'de', 'pt', 'hi'];
export const SMS_LANGUAGES = [...VOICE_LANGUAGES, 'ar'] as const;
export type VerifyLanguage = (typeof SMS_LANGUAGES)[number];

export const isVoiceLanguage = (l: VerifyLanguage): l is CallLanguage => l !== 'ar';

/**
 * The SMS text of a code. Kept short so a code fits one segment in most languages; Hindi and
 * Arabic (and the Spanish and Portuguese accents outside GSM-7) go as UCS-2, which the SMS
 * path chooses and bills by itself.
 */
const SMS_TEXT: Record<VerifyLanguage, (code: string, brand: string | null) => string> = {
  en: (c, b) => (b ? `Your ${b} verification code is: ${c}` : `Your verification code is: ${c}`),
  es: (c, b) => (b ? `Su código de verificación de ${b} es: ${c}` : `Su código de verificación es: ${c}`),
  fr: (c, b) => (b ? `Votre code de vérification ${b} est : ${c}` : `Votre code de vérification est : ${c}`),
  de: (c, b) => (b ? `Ihr ${b} Bestätigungscode lautet: ${c}` : `Ihr Bestätigungscode lautet: ${c}`),
  pt: (c, b) => (b ? `O seu código de verificação ${b} é: ${c}` : `O seu código de verificação é: ${c}`),
  hi: (c, b) => (b ? `आपका ${b} सत्यापन कोड है: ${c}` : `आपका सत्यापन कोड है: ${c}`),
  ar: (c, b) => (b ? `رمز التحقق الخاص بك من ${b} هو: ${c}` : `رمز التحقق الخاص بك هو: ${c}`),
};

export const smsText = (language: VerifyLanguage, code: string, brand: string | null): string =>
  SMS_TEXT[language](code, brand);

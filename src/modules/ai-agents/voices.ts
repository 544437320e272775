import { spawn } from 'node:child_process';
import { AppError } from '../../http/errors.js';

export interface Voice {
  id: string;
  name: string;
  description: string;
  gender: 'male' | 'female' | 'neutral';
  language: string;
  is_pro: boolean;
}

/**
 * The exchange's built-in espeak-ng voices: [espeak voice, language tag, name, gender]. A `+f…`
 * suffix is one of espeak-ng's variants, which change pitch and formants on the same language.
 */
const ESPEAK: readonly [string, string, string, Voice['gender']?][] = [
  ['en-us', 'en-US', 'English (America)'],
  ['en-us+f3', 'en-US', 'English (America), female', 'female'],
  ['en-gb', 'en-GB', 'English (Great Britain)'],
  ['en-gb+f2', 'en-GB', 'English (Great Britain), female', 'female'],
  ['en-gb-scotland', 'en-GB', 'English (Scotland)'],
  ['en-gb-x-rp', 'en-GB', 'English (Received Pronunciation)'],
  ['en-029', 'en', 'English (Caribbean)'],
  ['en-us-nyc', 'en-US', 'English (New York City)'],
  ['es', 'es', 'Spanish (Spain)'],
  ['es+f3', 'es', 'Spanish (Spain), female', 'female'],
  ['es-419', 'es-419', 'Spanish (Latin America)'],
  ['fr-fr', 'fr', 'French (France)'],
  ['fr-fr+f3', 'fr', 'French (France), female', 'female'],
  ['fr-be', 'fr-BE', 'French (Belgium)'],
  ['fr-ch', 'fr-CH', 'French (Switzerland)'],
  ['de', 'de', 'German'],
  ['de+f3', 'de', 'German, female', 'female'],
  ['pt', 'pt', 'Portuguese (Portugal)'],
  ['pt-br', 'pt-BR', 'Portuguese (Brazil)'],
  ['it', 'it', 'Italian'],
  ['nl', 'nl', 'Dutch'],
  ['hi', 'hi', 'Hindi'],
  ['ar', 'ar', 'Arabic'],
  ['bn', 'bn', 'Bengali'],
  ['bg', 'bg', 'Bulgarian'],
  ['ca', 'ca', 'Catalan'],
  ['cmn', 'zh', 'Chinese (Mandarin)'],
  ['yue', 'zh-HK', 'Chinese (Cantonese)'],
  ['hr', 'hr', 'Croatian'],
  ['cs', 'cs', 'Czech'],
  ['da', 'da', 'Danish'],
  ['et', 'et', 'Estonian'],
  ['fi', 'fi', 'Finnish'],
  ['el', 'el', 'Greek'],
  ['gu', 'gu', 'Gujarati'],
  ['he', 'he', 'Hebrew'],
  ['hu', 'hu', 'Hungarian'],
  ['is', 'is', 'Icelandic'],
  ['id', 'id', 'Indonesian'],
  ['ga', 'ga', 'Irish'],
  ['ja', 'ja', 'Japanese'],
  ['kn', 'kn', 'Kannada'],
  ['ko', 'ko', 'Korean'],
  ['lv', 'lv', 'Latvian'],
  ['lt', 'lt', 'Lithuanian'],
  ['ms', 'ms', 'Malay'],
  ['ml', 'ml', 'Malayalam'],
  ['mr', 'mr', 'Marathi'],
  ['nb', 'nb', 'Norwegian Bokmål'],
  ['fa', 'fa', 'Persian'],
  ['pl', 'pl', 'Polish'],
  ['pa', 'pa', 'Punjabi'],
  ['ro', 'ro', 'Romanian'],
  ['ru', 'ru', 'Russian'],
  ['sr', 'sr', 'Serbian'],
  ['sk', 'sk', 'Slovak'],
  ['sl', 'sl', 'Slovenian'],
  ['sw', 'sw', 'Swahili'],
  ['sv', 'sv', 'Swedish'],
  ['ta', 'ta', 'Tamil'],
  ['te', 'te', 'Telugu'],
  ['th', 'th', 'Thai'],
  ['tr', 'tr', 'Turkish'],
  ['uk', 'uk', 'Ukrainian'],
  ['ur', 'ur', 'Urdu'],
  ['vi', 'vi', 'Vietnamese'],
  ['cy', 'cy', 'Welsh'],
];

/** The voices of an OpenAI-compatible speech endpoint (premium: billed by the provider). */
const PRO: readonly [string, Voice['gender'], string][] = [
  ['alloy', 'neutral', 'Balanced and clear'],
  ['ash', 'male', 'Warm and steady'],
  ['coral', 'female', 'Bright and friendly'],
  ['echo', 'male', 'Calm and even'],
  ['fable', 'neutral', 'Expressive storyteller'],
  ['nova', 'female', 'Energetic and crisp'],
  ['onyx', 'male', 'Deep and authoritative'],
  ['sage', 'female', 'Measured and thoughtful'],
  ['shimmer', 'female', 'Soft and light'],
];

/** English non-premium voices first, then the other built-in voices, then premium ones when a speech provider is set. */
export function voiceCatalog(withPro: boolean): Voice[] {
  const builtIn = ESPEAK.map(([v, language, name, gender]): Voice => ({
    id: `espeak:${v}`,
    name,
    description: `Built-in synthetic voice (espeak-ng ${v})`,
    gender: gender ?? 'male',
    language,
    is_pro: false,
  }));
  const english = builtIn.filter((v) => v.language.startsWith('en'));
  const rest = builtIn.filter((v) => !v.language.startsWith('en'));
  const pro = withPro
    ? PRO.map(([v, gender, description]): Voice => ({
        id: `openai:${v}`,
        name: v[0]!.toUpperCase() + v.slice(1),
        description,
        gender,
        language: 'multi',
        is_pro: true,
      }))
    : [];
  return [...english, ...rest, ...pro];
}

/** Spoken `text` as MP3 with a built-in voice: espeak-ng's WAV piped through lame, both child processes. */
export function espeakMp3(voice: string, text: string, timeoutMs = 15_000): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const speak = spawn('espeak-ng', ['--stdout', '-s', '160', '-v', voice], { stdio: ['pipe', 'pipe', 'ignore'] });
    const lame = spawn('lame', ['--quiet', '-b', '48', '-', '-'], { stdio: ['pipe', 'pipe', 'ignore'] });
    const timer = setTimeout(() => {
      speak.kill('SIGKILL');
      lame.kill('SIGKILL');
    }, timeoutMs);
    const fail = () => {
      clearTimeout(timer);
      reject(new AppError('SERVICE_UNAVAILABLE', 'The voice could not be rendered'));
    };
    speak.on('error', fail);
    lame.on('error', fail);
    speak.stdout.pipe(lame.stdin);
    const chunks: Buffer[] = [];
    lame.stdout.on('data', (c: Buffer) => chunks.push(c));
    lame.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0 && chunks.length) resolve(Buffer.concat(chunks));
      else fail();
    });
    // Text on stdin, never as an argument, so it cannot be read as an option.
    speak.stdin.end(text);
  });
}

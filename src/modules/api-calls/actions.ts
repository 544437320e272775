/** Action items of POST /comms/calls: schema and the rules across items (spec "Voice and SMS", action items; "Limits", Call row). */
import { Type, type Static } from 'typebox';
import type { ErrorDetail } from '../../http/errors.js';
import { checkPlayUrl } from '../../telephony/media/downloader.js';

export const LANGUAGES = ['en', 'es', 'fr', 'de', 'pt', 'hi'] as const;
export const Language = Type.Union(LANGUAGES.map((l) => Type.Literal(l)));

const PlayUrl = Type.String({ minLength: 1, maxLength: 2048, description: 'https URL of an MP3 of at most 2 MB' });

export const GatherBody = Type.Object(
  {
    digits: Type.Optional(Type.Integer({ minimum: 1, maximum: 20 })),
    timeout: Type.Optional(Type.Integer({ minimum: 1, maximum: 30 })),
    finishOnKey: Type.Optional(Type.Union([Type.Literal('#'), Type.Literal('*'), Type.Literal('')])),
    tries: Type.Optional(Type.Integer({ minimum: 1, maximum: 3 })),
    say: Type.Optional(Type.String({ maxLength: 500 })),
    play: Type.Optional(PlayUrl),
    language: Type.Optional(Language),
  },
  { additionalProperties: false },
);

export const ActionItem = Type.Object(
  {
    say: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
    language: Type.Optional(Language),
    play: Type.Optional(PlayUrl),
    gather: Type.Optional(GatherBody),
    pause: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })),
    hangup: Type.Optional(Type.Literal(true)),
  },
  { additionalProperties: false, description: 'exactly one verb: say, play, gather, pause or hangup' },
);
export type ActionItem = Static<typeof ActionItem>;

export const LIMITS = { actions: 10, spokenChars: 1500, playUrls: 3, gathers: 5 } as const;

const VERBS = ['say', 'play', 'gather', 'pause', 'hangup'] as const;

/** The rules across items; returns one detail per problem (empty when the actions are acceptable). */
export function checkActions(actions: readonly ActionItem[]): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  if (actions.length > LIMITS.actions) out.push({ path: 'actions', message: `at most ${LIMITS.actions} actions` });
  let spoken = 0;
  let plays = 0;
  let gathers = 0;
  actions.forEach((a, i) => {
    const path = `actions.${i}`;
    const verbs = VERBS.filter((v) => a[v] !== undefined);
    if (verbs.length !== 1) {
      out.push({ path, message: 'exactly one of say, play, gather, pause, hangup' });
      return;
    }
    if (a.language !== undefined && a.say === undefined)
      out.push({ path: `${path}.language`, message: 'language goes with say' });
    if (a.say !== undefined) spoken += a.say.length;
    const url = (u: string, p: string): void => {
      plays++;
      try {
        checkPlayUrl(u);
      } catch (err) {
        out.push({ path: p, message: err instanceof Error ? err.message : 'bad URL' });
      }
    };
    if (a.play !== undefined) url(a.play, `${path}.play`);
    if (a.gather !== undefined) {
      gathers++;
      if (a.gather.say !== undefined && a.gather.play !== undefined)
        out.push({ path: `${path}.gather`, message: 'say or play, not both' });
      if (a.gather.say !== undefined) spoken += a.gather.say.length;
      if (a.gather.play !== undefined) url(a.gather.play, `${path}.gather.play`);
    }
  });
  if (spoken > LIMITS.spokenChars)
    out.push({ path: 'actions', message: `at most ${LIMITS.spokenChars} characters of spoken text in all` });
  if (plays > LIMITS.playUrls) out.push({ path: 'actions', message: `at most ${LIMITS.playUrls} play URLs` });
  if (gathers > LIMITS.gathers) out.push({ path: 'actions', message: `at most ${LIMITS.gathers} gathers` });
  return out;
}

/** Every play URL in order of appearance (downloaded once before dialling). */
export function playUrls(actions: readonly ActionItem[]): string[] {
  const out: string[] = [];
  for (const a of actions) {
    if (a.play !== undefined) out.push(a.play);
    if (a.gather?.play !== undefined) out.push(a.gather.play);
  }
  return out;
}

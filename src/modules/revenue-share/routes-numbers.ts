/** A holder's revenue share numbers, test numbers and calls, and the holder's settings. */
import { Type } from 'typebox';
import type { App } from '../../http/app.js';
import { CursorPage, DateTime, Nullable, Ok, Uuid, ok } from '../../http/envelope.js';
import { cursorPage, CursorQuery } from '../../http/pagination.js';
import { MAX_TEXT } from './answer-setting.js';
import type { Ranges } from './ranges.js';
import { AnswerMode, NumberType, READ, RsNumber, Settings, TAGS, WRITE } from './schemas.js';
import type { Stats } from './stats.js';

const IdParams = Type.Object({ id: Uuid() });

export function numberRoutes(deps: { ranges: Ranges; stats: Stats }) {
  const { ranges, stats } = deps;
  return (app: App) => {
    app.post(
      '/revenue-share/numbers',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary:
            'Allocate numbers of a range to the caller (free of charge; earnings start with the first answered call)',
          description:
            'All `quantity` numbers or none: 409 when the range has fewer free numbers. 404 for a range that is not active.',
          body: Type.Object(
            { rangeId: Uuid(), quantity: Type.Integer({ minimum: 1, maximum: 100, default: 1 }) },
            { additionalProperties: false },
          ),
          response: { 201: Ok(Type.Array(RsNumber)) },
        },
      },
      async (req, reply) =>
        reply.code(201).send(
          ok(
            await ranges.allocate(req.principal!.accountId, {
              rangeId: req.body.rangeId,
              quantity: req.body.quantity ?? 1,
            }),
          ),
        ),
    );

    app.get(
      '/revenue-share/numbers',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The caller's revenue share numbers, newest allocation first",
          querystring: Type.Object({
            rangeId: Type.Optional(Uuid()),
            countryCode: Type.Optional(Type.String({ minLength: 2, maxLength: 2 })),
            search: Type.Optional(Type.String({ maxLength: 15, description: 'digits the number contains' })),
            ...CursorQuery(),
          }),
          response: { 200: CursorPage(RsNumber) },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(await ranges.numbers(req.principal!.accountId, { ...req.query, limit }), limit);
      },
    );

    app.get(
      '/revenue-share/numbers/:id',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'One of the caller’s numbers',
          params: IdParams,
          response: { 200: Ok(RsNumber) },
        },
      },
      async (req) => ok(await ranges.number(req.principal!.accountId, req.params.id)),
    );

    app.patch(
      '/revenue-share/numbers/:id',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary:
            "Set a number's label, call limit (answered calls are ended after `maxCallSeconds`; null: the range's) " +
            'or what the caller hears (`answer`: silence, an announcement looped until the end, or a forward to a ' +
            'SIP URI or an E.164 number over the holder’s own routes, billed as its outbound call)',
          params: IdParams,
          body: Type.Object(
            {
              label: Type.Optional(Nullable(Type.String({ maxLength: 60 }))),
              maxCallSeconds: Type.Optional(Nullable(Type.Integer({ minimum: 10, maximum: 14400 }))),
              answer: Type.Optional(
                Type.Object(
                  {
                    mode: AnswerMode,
                    target: Type.Optional(Nullable(Type.String({ maxLength: 300 }))),
                    announcement: Type.Optional(
                      Nullable(
                        Type.Object(
                          {
                            url: Type.Optional(Nullable(Type.String({ maxLength: 2048 }))),
                            text: Type.Optional(Nullable(Type.String({ maxLength: MAX_TEXT }))),
                            language: Type.Optional(Nullable(Type.String({ maxLength: 8 }))),
                          },
                          { additionalProperties: false },
                        ),
                      ),
                    ),
                  },
                  { additionalProperties: false },
                ),
              ),
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(RsNumber) },
        },
      },
      async (req) => ok(await ranges.updateNumber(req.principal!.accountId, req.params.id, req.body)),
    );

    app.post(
      '/revenue-share/numbers/:id/release',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Give a number back to its range; earnings already made are kept and released as usual',
          params: IdParams,
          response: { 200: Ok(Type.Object({ id: Uuid(), released: Type.Literal(true) })) },
        },
      },
      async (req) => ok(await ranges.release(req.principal!.accountId, req.params.id)),
    );

    app.get(
      '/revenue-share/test-numbers',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Test numbers of active ranges: call one to check that your traffic reaches a range',
          querystring: Type.Object({ countryCode: Type.Optional(Type.String({ minLength: 2, maxLength: 2 })) }),
          response: {
            200: Ok(
              Type.Array(
                Type.Object({
                  number: Type.String(),
                  rangeId: Uuid(),
                  rangeName: Type.String(),
                  country: Type.String(),
                  countryCode: Type.String(),
                  numberType: NumberType,
                }),
              ),
            ),
          },
        },
      },
      async (req) => ok(await stats.testNumbers(req.query)),
    );

    app.get(
      '/revenue-share/test-calls',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: 'Calls received on test numbers, newest first (caller numbers masked)',
          querystring: Type.Object({
            number: Type.Optional(Type.String({ pattern: '^[0-9]{7,15}$' })),
            ...CursorQuery(),
          }),
          response: {
            200: CursorPage(
              Type.Object({
                id: Uuid(),
                testNumber: Type.String(),
                rangeId: Uuid(),
                country: Type.String(),
                fromNumber: Type.String(),
                startedAt: DateTime(),
                answered: Type.Boolean(),
                durationSeconds: Type.Integer(),
                sipCode: Type.Integer(),
              }),
            ),
          },
        },
      },
      async (req) => {
        const limit = req.query.limit ?? 25;
        return cursorPage(await stats.testCalls({ ...req.query, limit }), limit);
      },
    );

    app.get(
      '/revenue-share/settings',
      {
        config: { access: READ },
        schema: {
          tags: TAGS,
          summary: "The caller's answering and notification settings",
          response: { 200: Ok(Settings) },
        },
      },
      async (req) => ok(await ranges.settings(req.principal!.accountId)),
    );

    app.put(
      '/revenue-share/settings',
      {
        config: { access: WRITE },
        schema: {
          tags: TAGS,
          summary: 'Set how calls to your numbers are answered and whether fraud flags notify you',
          description:
            '`ringSeconds` (0–10): ringing before the exchange answers; `defaultMaxCallSeconds`: the call limit given to ' +
            'numbers allocated afterwards (null: the range’s); `notifyFraud`: fraud flags also raise an in-app notification.',
          body: Type.Object(
            {
              ringSeconds: Settings.properties.ringSeconds,
              defaultMaxCallSeconds: Settings.properties.defaultMaxCallSeconds,
              notifyFraud: Settings.properties.notifyFraud,
            },
            { additionalProperties: false },
          ),
          response: { 200: Ok(Settings) },
        },
      },
      async (req) => ok(await ranges.putSettings(req.principal!.accountId, req.body)),
    );
  };
}

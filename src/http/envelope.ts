import { Type, type TSchema } from 'typebox';

/** `{ success: true, data }` around a payload schema. */
export const Ok = <T extends TSchema>(data: T) => Type.Object({ success: Type.Literal(true), data });

/** Cursor list: `{ success: true, data: [...], nextCursor, hasMore }` (spec "Conventions"). */
export const CursorPage = <T extends TSchema>(item: T, extra: Record<string, TSchema> = {}) =>
  Type.Object({
    success: Type.Literal(true),
    data: Type.Array(item),
    nextCursor: Type.Union([Type.String({ format: 'uuid' }), Type.Null()]),
    hasMore: Type.Boolean(),
    ...extra,
  });

/** Offset list: `{ success: true, data: { rows, total, limit, offset } }`. */
export const OffsetPage = <T extends TSchema>(item: T) =>
  Ok(Type.Object({ rows: Type.Array(item), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() }));

export const ErrorEnvelope = Type.Object(
  {
    success: Type.Literal(false),
    error: Type.Object({
      code: Type.String(),
      message: Type.String(),
      details: Type.Optional(
        Type.Union([
          Type.Array(Type.Object({ path: Type.String(), message: Type.String() })),
          Type.Object({}, { additionalProperties: true }),
        ]),
      ),
    }),
  },
  { $id: 'ErrorEnvelope' },
);

export const ok = <T>(data: T) => ({ success: true as const, data });

/** Money on the wire: digits with exactly six places (spec "Conventions"). */
export const Money = (description?: string) =>
  Type.String({ pattern: '^-?\\d+\\.\\d{6}$', ...(description ? { description } : {}) });
export const Uuid = (description?: string) => Type.String({ format: 'uuid', ...(description ? { description } : {}) });
export const DateTime = () => Type.String({ format: 'date-time' });
export const Nullable = <T extends TSchema>(s: T) => Type.Union([s, Type.Null()]);

import { Type } from 'typebox';

/**
 * Cursor lists page by id, newest first: ids are UUIDv7, so id order is creation order and
 * the cursor is simply the last id of the previous page (spec "Conventions").
 */
export const CursorQuery = (defaultLimit = 25, maxLimit = 100) => ({
  cursor: Type.Optional(Type.String({ format: 'uuid', description: 'nextCursor of the previous page' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: maxLimit, default: defaultLimit })),
});

export const OffsetQuery = (defaultLimit = 25, maxLimit = 100) => ({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: maxLimit, default: defaultLimit })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 })),
});

/** Fetch `limit + 1` rows, then call this: it trims the extra row and builds the page fields. */
export function cursorPage<T extends { id: string }>(rows: T[], limit: number) {
  const hasMore = rows.length > limit;
  const data = hasMore ? rows.slice(0, limit) : rows;
  return {
    success: true as const,
    data,
    nextCursor: hasMore ? (data[data.length - 1]?.id ?? null) : null,
    hasMore,
  };
}

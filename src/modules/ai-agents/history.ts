import { Type } from 'typebox';

/** A conversation so far as a client sends it back: the agent simulation and the dialer assistant take the same shape. */
export const ChatHistory = (maxContent: number) =>
  Type.Array(
    Type.Object(
      {
        role: Type.Union([Type.Literal('user'), Type.Literal('assistant')]),
        content: Type.String({ maxLength: maxContent }),
      },
      { additionalProperties: false },
    ),
    { maxItems: 100 },
  );

import { Type } from 'typebox';
import { DateTime, Money, Nullable, Uuid } from '../../http/envelope.js';

/** Spec "Communications history entry" (`GET /comms/calls`, `GET /comms/sms`). */
export const HistoryEntry = Type.Object({
  id: Uuid(),
  userId: Uuid(),
  type: Type.String(),
  amount: Money(),
  balanceAfter: Money(),
  reference: Nullable(Type.String()),
  relatedEntityType: Nullable(Type.String()),
  relatedEntityId: Nullable(Type.String()),
  callId: Nullable(Type.String()),
  createdAt: DateTime(),
});

import t from 'tap';
import { NotificationKinds } from '../../../src/modules/notifications/kinds.js';
import { SubscribableEvents } from '../../../src/webhooks/events.js';
import { createTestDatabase } from '../../helpers/db.js';

// Events that stay out of the feed on purpose: per call or message traffic, progress of one API
// request, documents the account itself asked for, and notices the other events already give.
const NOT_IN_FEED = new Set([
  'call.completed',
  'sms.sent',
  'sms.dlr',
  'campaign.started',
  'number.call.received',
  'number.sms.received',
  'number.voicemail.received',
  'invoice.created',
  'invoice.sent',
  'invoice.voided',
  'invoice.reissued',
  'credit_note.issued',
  'payable.created',
  'netting.run',
  'cost_rate.activated',
  'cost_rate.rolled_back',
  'call.ringing',
  'call.answered',
  'call.gathered',
  'sms.delivered',
  'sms.failed',
  'verify.approved',
  'verify.max_attempts',
  'verify.canceled',
]);

t.test('every event feeds the notification feed with a human title and body, or is left out on purpose', async (t) => {
  for (const event of SubscribableEvents) {
    if (NOT_IN_FEED.has(event)) t.notOk(NotificationKinds[event], `${event} is left out of the feed`);
    else t.ok(NotificationKinds[event], `${event} has a notification text`);
  }
  for (const [kind, spec] of Object.entries(NotificationKinds)) {
    // With no data at all a text still reads as a sentence: no "undefined", no empty title.
    const bare = spec.render({});
    t.ok(bare.title.length > 0 && bare.body.length > 0, `${kind} renders without data`);
    t.notMatch(`${bare.title} ${bare.body}`, /undefined|null|\[object/, `${kind} shows no placeholders`);
    t.ok(spec.label.length > 0, `${kind} has a preference label`);
  }
});

t.test('the SQL list of feed events (notification_event) is the list of kinds', async (t) => {
  const { sql } = await createTestDatabase(t);
  const kinds = Object.keys(NotificationKinds);
  const rows = await sql<{ name: string; fed: boolean }[]>`
    select name, notification_event(name) as fed from unnest(${[...new Set([...kinds, ...SubscribableEvents])]}::text[]) as name`;
  for (const r of rows) t.equal(r.fed, kinds.includes(r.name), `${r.name}: the SQL function agrees with kinds.ts`);
});

import t from 'tap';
import type { DialObservation } from '../../../src/modules/route-checks/dial.js';
import { verdictOf } from '../../../src/modules/route-checks/verdict.js';

/** The verdict rules of one check call (docs/route-checks.md, "Verdicts"), at their boundaries. */
const seen = (o: Partial<DialObservation>): DialObservation => ({
  rang: false,
  answered: false,
  ringMs: null,
  answerMs: null,
  connectedSeconds: 0,
  sipStatus: null,
  noResponse: false,
  mediaTimeout: false,
  endedAt: new Date(0),
  ...o,
});

t.test('answers: false answer under 1.5 s, or under 2.5 s without ringing, or without audio', async (t) => {
  const answered = (answerMs: number, rang: boolean, mediaTimeout = false) =>
    verdictOf('full', seen({ answered: true, rang, answerMs, sipStatus: 200, mediaTimeout }));
  t.match(answered(1499, true), { result: 'false_answer', billable: false });
  t.match(answered(1500, true), { result: 'working', billable: true });
  t.match(answered(2499, false), { result: 'false_answer', billable: false });
  t.match(answered(2500, false), { result: 'working', billable: true });
  t.match(answered(4000, true, true), { result: 'false_answer', billable: false }, 'no audio');
  t.match(verdictOf('ring_me', seen({ answered: true, rang: true, answerMs: 6000 })), {
    result: 'working',
    billable: true,
  });
});

t.test('unanswered legs', async (t) => {
  t.match(verdictOf('full', seen({ rang: true, sipStatus: 487 })), { result: 'not_delivered', billable: false });
  t.match(verdictOf('ring_me', seen({ rang: true, sipStatus: 487 })), { result: 'working', billable: false });
  t.match(verdictOf('full', seen({ sipStatus: 503 })), { result: 'no_capacity' });
  t.match(verdictOf('full', seen({ noResponse: true })), { result: 'no_capacity', message: /did not respond/ });
  t.match(verdictOf('full', seen({ sipStatus: 404 })), { result: 'inconclusive', message: /invalid/ });
  t.match(verdictOf('full', seen({ sipStatus: 486 })), { result: 'inconclusive', message: /busy/ });
});

t.test('light check: any provisional or answer accepts; a refusal before ringing does not', async (t) => {
  t.match(verdictOf('light', seen({ rang: true, sipStatus: 487 })), { result: 'accepts', billable: false });
  t.match(verdictOf('light', seen({ answered: true, answerMs: 300 })), { result: 'accepts', billable: false });
  t.match(verdictOf('light', seen({ sipStatus: 403 })), { result: 'no_capacity' });
});

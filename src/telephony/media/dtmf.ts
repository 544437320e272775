import { sequenceAfter } from './rtp.js';

/** RFC 4733 telephone-events for DTMF (§3.2: events 0–9, *, #, A–D). */

const EVENT_KEYS = '0123456789*#ABCD';

export type DtmfKey = '0' | '1' | '2' | '3' | '4' | '5' | '6' | '7' | '8' | '9' | '*' | '#' | 'A' | 'B' | 'C' | 'D';

export function eventToKey(event: number): DtmfKey | null {
  return event >= 0 && event < EVENT_KEYS.length ? (EVENT_KEYS[event] as DtmfKey) : null;
}

export function keyToEvent(key: string): number | null {
  const idx = EVENT_KEYS.indexOf(key.toUpperCase());
  return key.length === 1 && idx >= 0 ? idx : null;
}

export function isDtmfKey(value: string): value is DtmfKey {
  return keyToEvent(value) !== null;
}

export interface TelephoneEvent {
  event: number;
  end: boolean;
  volume: number;
  duration: number;
}

export function parseTelephoneEvent(payload: Uint8Array): TelephoneEvent | null {
  if (payload.length < 4) return null;
  const flags = payload[1] as number;
  return {
    event: payload[0] as number,
    end: (flags & 0x80) !== 0,
    volume: flags & 0x3f,
    duration: ((payload[2] as number) << 8) | (payload[3] as number),
  };
}

export function buildTelephoneEvent(ev: TelephoneEvent): Uint8Array {
  return Uint8Array.of(
    ev.event & 0xff,
    (ev.end ? 0x80 : 0) | (ev.volume & 0x3f),
    (ev.duration >> 8) & 0xff,
    ev.duration & 0xff,
  );
}

interface SeenEvent {
  timestamp: number;
  event: number;
  /** Sequence number of the first end packet seen, or null while the event is still running. */
  endSequence: number | null;
}

/** How many recent events are remembered to recognise retransmissions arriving late. */
const MEMORY = 32;

/**
 * Turns a stream of telephone-event packets into key presses, each reported once, on the first
 * packet of the event so that a press can interrupt a prompt at once.
 *
 * An event is identified by its RTP timestamp (RFC 4733 §2.5.1.2), so continuation packets,
 * the three redundant end packets, and packets arriving out of sequence order all collapse into
 * the one press. Some senders reuse a timestamp for the next press of the same key; a non-end
 * packet with that timestamp arriving after (by sequence number) the event's end is therefore a
 * new press, while a late packet from before the end is not.
 */
export function createDtmfReceiver(onKey: (key: DtmfKey) => void): {
  handle(sequence: number, timestamp: number, payload: Uint8Array): void;
} {
  const seen: SeenEvent[] = [];
  return {
    handle(sequence, timestamp, payload) {
      const ev = parseTelephoneEvent(payload);
      if (!ev) return;
      const key = eventToKey(ev.event);
      if (key === null) return;
      const prior = seen.find((s) => s.timestamp === timestamp && s.event === ev.event);
      if (prior) {
        const restarted = prior.endSequence !== null && !ev.end && sequenceAfter(sequence, prior.endSequence);
        if (!restarted) {
          if (ev.end && (prior.endSequence === null || sequenceAfter(prior.endSequence, sequence)))
            prior.endSequence = sequence;
          return;
        }
        prior.endSequence = null;
        onKey(key);
        return;
      }
      seen.push({ timestamp, event: ev.event, endSequence: ev.end ? sequence : null });
      if (seen.length > MEMORY) seen.shift();
      onKey(key);
    },
  };
}

export interface OutgoingEventPacket {
  marker: boolean;
  payload: Uint8Array;
}

/**
 * The packets for one key press, one per 20 ms packet time: a start packet (marker set), a
 * continuation every 20 ms with a growing duration, then the end packet sent three times
 * (RFC 4733 §2.5.1.4). All share the event's RTP timestamp; each takes its own sequence number.
 */
export function telephoneEventPackets(key: DtmfKey, durationMs = 100, volume = 10): OutgoingEventPacket[] {
  const event = keyToEvent(key) as number;
  const step = 160;
  const total = Math.max(step, Math.round((durationMs * 8) / step) * step);
  const packets: OutgoingEventPacket[] = [];
  for (let d = step; d < total; d += step) {
    packets.push({ marker: d === step, payload: buildTelephoneEvent({ event, end: false, volume, duration: d }) });
  }
  const endPayload = buildTelephoneEvent({ event, end: true, volume, duration: total });
  for (let i = 0; i < 3; i++) packets.push({ marker: packets.length === 0, payload: endPayload });
  return packets;
}

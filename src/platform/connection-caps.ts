import type { Socket } from 'node:net';

/** What a refused connection looked like, for the caller's log line. */
export interface CapRefusal {
  ip: string;
  open: number;
  fromIp: number;
}

/**
 * Caps inbound connections of one listener family in total and per source address. A connection
 * is counted on accept and released on close; one over either cap is destroyed before anything is
 * read, so a flood costs one accept each.
 */
export function createConnectionCaps(opts: { max: number; perSource: number }) {
  const bySource = new Map<string, number>();
  let open = 0;
  return {
    /** Counts the socket, or destroys it and returns why when it is over a cap. */
    admit(sock: Socket): CapRefusal | null {
      const ip = (sock.remoteAddress ?? '').replace(/^::ffff:/, '');
      const fromIp = bySource.get(ip) ?? 0;
      if (open >= opts.max || fromIp >= opts.perSource) {
        sock.destroy();
        return { ip, open, fromIp };
      }
      open++;
      bySource.set(ip, fromIp + 1);
      sock.once('close', () => {
        open--;
        const n = (bySource.get(ip) ?? 1) - 1;
        if (n <= 0) bySource.delete(ip);
        else bySource.set(ip, n);
      });
      return null;
    },
  };
}

import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

type Teardown = { teardown(fn: () => unknown): void };

export interface ReceivedMail {
  from: string;
  to: string[];
  user: string | null;
  raw: string;
  /** The decoded text body (quoted-printable undone). */
  text: string;
  subject: string;
}

export interface SmtpPeer {
  port: number;
  messages: ReceivedMail[];
  /** The first message (already received or arriving within `timeoutMs`) to `to` matching `match`. */
  next(to: string, match?: RegExp, timeoutMs?: number): Promise<ReceivedMail>;
}

const PEER = fileURLToPath(new URL('../fixtures/smtp/smtp-peer.mjs', import.meta.url));

function decode(raw: string): { subject: string; text: string } {
  const split = raw.indexOf('\n\n');
  const head = raw.slice(0, split);
  let body = raw.slice(split + 2);
  if (/content-transfer-encoding:\s*quoted-printable/i.test(head))
    body = body
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
  const subject = /^subject:\s*(.*)$/im.exec(head)?.[1]?.trim() ?? '';
  return { subject, text: body };
}

/** A real SMTP server in its own process (test/fixtures/smtp/smtp-peer.mjs), stopped at teardown. */
export async function startSmtpPeer(t: Teardown, auth?: { user: string; pass: string }): Promise<SmtpPeer> {
  const child = spawn(process.execPath, [PEER], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...(auth ? { SMTP_USER: auth.user, SMTP_PASS: auth.pass } : {}) },
  });
  t.teardown(() => {
    child.kill('SIGTERM');
  });
  const messages: ReceivedMail[] = [];
  const waiters: (() => void)[] = [];
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`SMTP peer exited (${code})`)));
    lines.on('line', (line) => {
      const msg = JSON.parse(line) as { port?: number } & Omit<ReceivedMail, 'text' | 'subject'>;
      if (msg.port !== undefined) return resolve(msg.port);
      messages.push({ ...msg, ...decode(msg.raw.replace(/\r\n/g, '\n')) });
      for (const w of waiters.splice(0)) w();
    });
  });
  const find = (to: string, match?: RegExp) =>
    messages.find((m) => m.to.includes(to) && (!match || match.test(m.text) || match.test(m.subject)));
  return {
    port,
    messages,
    async next(to, match, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const m = find(to, match);
        if (m) return m;
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no e-mail to ${to} matching ${String(match)} within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    },
  };
}

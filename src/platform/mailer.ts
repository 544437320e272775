import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Transporter } from 'nodemailer';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { Clock } from './clock.js';
import { newId } from './ids.js';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  /** Files sent with the message (an invoice's PDF). */
  attachments?: { filename: string; content: Buffer; contentType: string }[];
}

export interface SentMail {
  /** `smtp`: the server accepted it; `file`: written to the spool directory (no server, or sending failed). */
  via: 'smtp' | 'file';
  messageId: string;
  /** The .eml file when `via` is `file`. */
  path?: string;
}

export interface Mailer {
  /** Sends one e-mail; never drops it: without a server, or when the server refuses, it is spooled as .eml. */
  send(message: MailMessage): Promise<SentMail>;
  /** Absolute link into the dashboard for a path such as `/verify-email?token=…`. */
  link(path: string): string;
  close(): void;
}

/** Addresses are logged by domain only: the log never holds a full address. */
const maskAddress = (to: string) => `***@${to.split('@')[1] ?? '?'}`;

/**
 * Account e-mail through the `[mail]` SMTP server (nodemailer), or, with none configured, to
 * `<state>/mail/` as .eml files so a small install still has its verification and reset links.
 */
export async function createMailer(deps: { config: Readonly<Config>; log: Logger; clock: Clock }): Promise<Mailer> {
  const { config, log, clock } = deps;
  const mail = config.mail;
  const spoolDir = resolve(config.paths.state, 'mail');
  const ca = mail.smtp_ca_file ? await readFile(mail.smtp_ca_file) : undefined;
  // nodemailer is loaded when there is a server to send to, or else on the first e-mail spooled: a
  // daemon that sends none (most starts) does not pay for its import.
  const loadNodemailer = async () => (await import('nodemailer')).default;
  const smtp = mail.smtp_host
    ? (await loadNodemailer()).createTransport({
        host: mail.smtp_host,
        port: mail.smtp_port,
        secure: mail.smtp_secure,
        requireTLS: mail.smtp_require_tls,
        connectionTimeout: mail.smtp_timeout_ms,
        greetingTimeout: mail.smtp_timeout_ms,
        socketTimeout: mail.smtp_timeout_ms,
        ...(mail.smtp_user ? { auth: { user: mail.smtp_user, pass: mail.smtp_password } } : {}),
        ...(ca ? { tls: { ca } } : {}),
      })
    : null;
  // Builds the same RFC 5322 message the SMTP transport would send, as bytes.
  let builder: Promise<Transporter> | undefined;
  const build = () =>
    (builder ??= loadNodemailer().then((n) =>
      n.createTransport({ streamTransport: true, buffer: true, newline: 'unix' }),
    ));
  const base = (mail.link_base_url || `https://${config.http.public_hostname}`).replace(/\/+$/, '');

  async function spool(message: MailMessage, reason: string): Promise<SentMail> {
    const info = await (await build()).sendMail({ from: mail.from, ...message });
    await mkdir(spoolDir, { recursive: true, mode: 0o700 });
    const name = `${clock.now().toISOString().replace(/[:.]/g, '-')}-${newId()}.eml`;
    const path = join(spoolDir, name);
    // Written under a hidden name and renamed: whoever lists the .eml files reads whole messages only.
    const partial = join(spoolDir, `.${name}.partial`);
    try {
      await writeFile(partial, info.message as Buffer, { mode: 0o600 });
      await rename(partial, path);
    } catch (err) {
      await rm(partial, { force: true }).catch(() => undefined);
      throw err;
    }
    log.info({ path, to: maskAddress(message.to), reason }, 'e-mail written to the mail spool directory');
    return { via: 'file', messageId: info.messageId, path };
  }

  return {
    async send(message) {
      if (!smtp) return spool(message, 'no SMTP server configured ([mail] smtp_host)');
      try {
        const info = await smtp.sendMail({ from: mail.from, ...message });
        log.info({ to: maskAddress(message.to), messageId: info.messageId }, 'e-mail sent');
        return { via: 'smtp', messageId: info.messageId };
      } catch (err) {
        log.error({ err, to: maskAddress(message.to) }, 'SMTP server refused or unreachable; spooling the e-mail');
        return spool(message, 'SMTP sending failed');
      }
    },
    link: (path) => base + (path.startsWith('/') ? path : `/${path}`),
    close: () => smtp?.close(),
  };
}

import fs from 'node:fs';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type { Logger } from '../logger';

export interface MailMessage {
  from: string;
  to: string;
  subject: string;
  text: string;
  html?: string;
}

export interface MailTransport {
  /** Sends one message; `key` identifies it (the outbox id) and becomes its Message-ID. */
  send(key: string, message: MailMessage): Promise<{ messageId: string; file?: string }>;
  /** Takes back what `send` kept of the message `key` where it can (the file transport's file); an SMTP server has it already. */
  forget?(key: string): void;
  close(): void;
}

const messageId = (key: string, from: string) => `<${key}@${from.split('@')[1]?.replace(/[>\s]/g, '') || 'gatehouse.local'}>`;

/*
 * Parts are base64-encoded: nodemailer otherwise scans every part to choose an encoding and
 * quoted-printable-encodes the HTML, which was the largest cost per message in the worker's profile.
 */
const ENCODING = { textEncoding: 'base64' as const };

/** SMTP through a pooled nodemailer transport (SMTP_URL). */
export function createSmtpTransport(smtpUrl: string): MailTransport {
  const url = new URL(smtpUrl);
  url.searchParams.set('pool', 'true');
  // several connections, each reused for many messages (nodemailer reconnects after 100 by default);
  // both can be overridden in SMTP_URL's query
  if (!url.searchParams.has('maxConnections')) url.searchParams.set('maxConnections', '8');
  if (!url.searchParams.has('maxMessages')) url.searchParams.set('maxMessages', '1000');
  const transport = nodemailer.createTransport(url.toString());
  return {
    async send(key, message) {
      const info = await transport.sendMail({ ...message, ...ENCODING, messageId: messageId(key, message.from) });
      return { messageId: info.messageId };
    },
    close: () => transport.close(),
  };
}

/**
 * The embedded default (and MAIL_TRANSPORT=file): each message is written as `<dir>/<key>.eml`, atomically (temp file,
 * then rename), so a retried job finds the file and does not write it twice.
 */
export function createFileTransport(dir: string, logger: Logger): MailTransport {
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    async send(key, message) {
      // the messages carry reset and verification links: the owner's alone to read
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      const file = path.join(dir, `${key}.eml`);
      const id = messageId(key, message.from);
      if (fs.existsSync(file)) return { messageId: id, file };
      const info = await transport.sendMail({ ...message, ...ENCODING, messageId: id });
      const tmp = `${file}.tmp-${process.pid}`;
      fs.writeFileSync(tmp, info.message as Buffer, { mode: 0o600 });
      fs.renameSync(tmp, file);
      // the file's path, never its link or code: `npx gatehouse mail:last` shows the newest message
      logger.info({ file }, 'email written as a file (not sent); read it with: npx gatehouse mail:last');
      return { messageId: id, file };
    },
    forget: (key) => fs.rmSync(path.join(dir, `${key}.eml`), { force: true }),
    close: () => transport.close(),
  };
}

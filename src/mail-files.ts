import fs from 'node:fs';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import type { MailFolder } from './domain/ports';

export interface MailFile {
  file: string;
  date: string;
  to: string;
  subject: string;
  /** The plain-text part, decoded. */
  text: string;
  /** The first http(s) link of the text part. */
  link?: string;
}

/**
 * The newest `.eml` the file transport wrote under `dir` (optionally to one address), decoded: what
 * a developer needs to follow a reset or verification link without an SMTP server. Links are never
 * logged, so this is where they are read.
 */
export async function newestMail(dir: string, to?: string): Promise<MailFile | undefined> {
  if (!fs.existsSync(dir)) return undefined;
  const files = fs.readdirSync(dir)
    .filter((f) => f.endsWith('.eml'))
    .map((f) => path.join(dir, f))
    .map((file) => ({ file, at: fs.statSync(file).mtimeMs }))
    .sort((a, b) => b.at - a.at);
  const wanted = to?.normalize('NFC').toLowerCase();
  for (const { file } of files) {
    const mail = await simpleParser(fs.readFileSync(file));
    const recipients = (Array.isArray(mail.to) ? mail.to : mail.to ? [mail.to] : []).flatMap((a) => a.value.map((v) => v.address ?? ''));
    if (wanted && !recipients.some((r) => r.normalize('NFC').toLowerCase() === wanted)) continue;
    const text = mail.text ?? '';
    return {
      file,
      date: mail.date?.toISOString() ?? '',
      to: recipients.join(', '),
      subject: mail.subject ?? '',
      text,
      link: /https?:\/\/\S+/.exec(text)?.[0],
    };
  }
  return undefined;
}

/**
 * Deletes every `.eml` under `dir` addressed to one of `addresses` (compared as stored: NFC, lower
 * case), as an erasure does (docs/lifecycle.md#erase). Answers how many it deleted; a folder that
 * does not exist holds none.
 */
export async function removeMailsTo(dir: string, addresses: readonly string[]): Promise<number> {
  if (!fs.existsSync(dir) || addresses.length === 0) return 0;
  const wanted = new Set(addresses.map((a) => a.normalize('NFC').toLowerCase()));
  let removed = 0;
  for (const name of fs.readdirSync(dir).filter((f) => f.endsWith('.eml'))) {
    const file = path.join(dir, name);
    let raw: Buffer;
    try {
      raw = fs.readFileSync(file);
    } catch {
      continue; // deleted meanwhile
    }
    const mail = await simpleParser(raw);
    const recipients = [mail.to, mail.cc, mail.bcc].flatMap((a) => (Array.isArray(a) ? a : a ? [a] : [])).flatMap((a) => a.value.map((v) => v.address ?? ''));
    if (!recipients.some((r) => wanted.has(r.normalize('NFC').toLowerCase()))) continue;
    fs.rmSync(file, { force: true });
    removed++;
  }
  return removed;
}

/** The mail folder at `dir` as the erasure's use case takes it. */
export const mailFolderAt = (dir: string): MailFolder => ({ removeMailsTo: (addresses) => removeMailsTo(dir, addresses) });

import fs from 'node:fs';
import path from 'node:path';
import { simpleParser, type ParsedMail } from 'mailparser';
import type { Runtime } from '../../src/runtime';

/** Every email the embedded default wrote so far to `to` (its jobs run first), oldest first, parsed. */
export async function mailsTo(runtime: Runtime, to: string): Promise<ParsedMail[]> {
  await runtime.queue.idle!();
  const dir = runtime.config.mailDir;
  if (!fs.existsSync(dir)) return [];
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.eml')).map((f) => path.join(dir, f));
  const parsed = await Promise.all(files.map(async (f) => ({ at: fs.statSync(f).mtimeMs, mail: await simpleParser(fs.readFileSync(f)) })));
  return parsed.filter((p) => (p.mail.to as { text: string } | undefined)?.text === to).sort((a, b) => a.at - b.at).map((p) => p.mail);
}

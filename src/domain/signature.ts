import { createHmac } from 'node:crypto';
import { safeEqual } from './secrets';

/** Requests whose Date is further than this from the server's clock are refused (replay window). */
export const MAX_CLOCK_SKEW_MS = 5 * 60_000;

const DATE = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/;

/** Parses the `Date` header of the Signature scheme: UTC `YYYY-MM-DD HH:MM:SS`. */
export function parseSignatureDate(value: string): Date | undefined {
  const m = DATE.exec(value.trim());
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number);
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  // reject impossible dates such as 2026-02-30 that Date.UTC would roll over
  return date.getUTCMonth() === mo - 1 && date.getUTCDate() === d && h < 24 && mi < 60 && s < 60 ? date : undefined;
}

export function formatSignatureDate(date: Date): string {
  return date.toISOString().slice(0, 19).replace('T', ' ');
}

/**
 * Every string a client may have signed, as the original service's client libraries build it:
 * path, Date, then each `key=value` (raw values) followed by a newline, sorted as whole strings.
 * Libraries that sort by key produce a different order when a key is a prefix of another and
 * the next character sorts before '=' (`a` and `a-b`): that order is accepted too. With no
 * parameters, both `path\ndate\n` and `path\ndate\n\n` are accepted.
 */
export function stringsToSign(path: string, date: string, params: [string, string][]): string[] {
  const head = `${path}\n${date}\n`;
  if (params.length === 0) return [head, `${head}\n`];
  const pairs = params.map(([k, v]) => `${k}=${v}`);
  const byWhole = [...pairs].sort();
  const byKey = [...params].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${k}=${v}`);
  const candidates = [head + byWhole.map((p) => `${p}\n`).join('')];
  const keyed = head + byKey.map((p) => `${p}\n`).join('');
  if (keyed !== candidates[0]) candidates.push(keyed);
  return candidates;
}

/** base64(HMAC-SHA1(secret, text)): the signature of the original's Signature scheme. */
export function sign(secret: string, text: string): string {
  return createHmac('sha1', secret).update(text, 'utf8').digest('base64');
}

/** True when `signature` signs one of the accepted strings (constant-time comparison). */
export function verifySignature(secret: string, signature: string, path: string, date: string, params: [string, string][]): boolean {
  let ok = false;
  for (const text of stringsToSign(path, date, params)) ok = safeEqual(sign(secret, text), signature) || ok;
  return ok;
}

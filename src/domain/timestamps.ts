const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/**
 * The spec's timestamp format: `YYYY-MM-DD HH:MM:SS.ffffff +0000`, in UTC. JavaScript dates hold
 * milliseconds, so the last three digits of the microseconds are always 0.
 */
export function formatTimestamp(date: Date): string {
  return `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())} ${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}.${pad(date.getUTCMilliseconds() * 1000, 6)} +0000`;
}

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?\s*(?:(Z|[+-]\d{2}:?\d{2}))?$/;
/** The earliest and latest instants a timestamp may name: the years MySQL's DATETIME holds (1000 to 9999). */
const EARLIEST = Date.UTC(1000, 0, 1);
const LATEST = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * Parses the spec's timestamp (and ISO 8601); undefined when it is not one: an impossible date
 * (31 February), a time past 23:59:59, an offset beyond ±14:00, or an instant outside the years
 * 1000 to 9999 (a year such as 0050 is refused, never read as 1950).
 */
export function parseTimestamp(value: string): Date | undefined {
  const m = TIMESTAMP.exec(value.trim());
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac = '0', zone = 'Z'] = m;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMin = 0;
  if (zone !== 'Z') {
    const digits = zone.replace(':', '');
    const [oh, om] = [Number(digits.slice(1, 3)), Number(digits.slice(3, 5))];
    if (om > 59 || oh * 60 + om > 14 * 60) return undefined;
    offsetMin = (digits[0] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const local = Date.UTC(year, month - 1, day, hour, minute, second, Math.floor(Number(frac.padEnd(6, '0')) / 1000));
  if (new Date(local).getUTCDate() !== day) return undefined; // 2026-02-31 would become 3 March
  const time = local - offsetMin * 60_000;
  return year >= 1000 && time >= EARLIEST && time <= LATEST ? new Date(time) : undefined;
}

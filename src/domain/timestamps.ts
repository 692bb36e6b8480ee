const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/**
 * The spec's timestamp format: `YYYY-MM-DD HH:MM:SS.ffffff +0000`, in UTC. JavaScript dates hold
 * milliseconds, so the last three digits of the microseconds are always 0.
 */
export function formatTimestamp(date: Date): string {
  return `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())} ${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}.${pad(date.getUTCMilliseconds() * 1000, 6)} +0000`;
}

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?\s*(?:(Z|[+-]\d{2}:?\d{2}))?$/;

/** Parses the spec's timestamp (and ISO 8601); undefined when it is not one. */
export function parseTimestamp(value: string): Date | undefined {
  const m = TIMESTAMP.exec(value.trim());
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac = '0', zone = 'Z'] = m;
  const ms = Math.floor(Number(frac.padEnd(6, '0')) / 1000);
  let offsetMin = 0;
  if (zone !== 'Z') {
    const digits = zone.replace(':', '');
    offsetMin = (digits[0] === '-' ? -1 : 1) * (Number(digits.slice(1, 3)) * 60 + Number(digits.slice(3, 5)));
  }
  const date = new Date(Date.UTC(+y, +mo - 1, +d, +h, +mi, +s, ms) - offsetMin * 60_000);
  return Number.isNaN(date.getTime()) || +mo < 1 || +mo > 12 || +d > 31 || +h > 23 || +mi > 59 || +s > 59 ? undefined : date;
}

import { parseTimestamp } from '../../src/domain/timestamps';

describe('timestamps', () => {
  it('reads the spec format and ISO 8601 with offsets, to the millisecond', () => {
    expect(parseTimestamp('2026-01-31 12:00:00.123456 +0000')?.toISOString()).toBe('2026-01-31T12:00:00.123Z');
    expect(parseTimestamp('2026-01-31T12:00:00+02:00')?.toISOString()).toBe('2026-01-31T10:00:00.000Z');
    expect(parseTimestamp('2024-02-29 00:00:00 -1400')?.toISOString()).toBe('2024-02-29T14:00:00.000Z');
  });

  it.each([
    '2026-02-31 00:00:00 +0000', // no 31 February
    '2025-02-29 00:00:00 +0000', // not a leap year
    '2026-04-31 00:00:00 +0000',
    '2026-00-10 00:00:00 +0000',
    '2026-01-01 24:00:00 +0000',
    '2026-01-01 00:60:00 +0000',
    '2026-01-01 00:00:60 +0000',
    '9999-12-31 23:59:59 -2359', // an offset no place has, and past the year 9999
    '9999-12-31 23:59:59 -0100', // past the year 9999 in UTC
    '0050-06-01 00:00:00 +0000', // before the year 1000 (once read as 1950)
    '0999-12-31 23:59:59 +0000',
    '1000-01-01 00:30:00 +0100', // 999 in UTC
    '2026-01-01 00:00:00 +0160',
  ])('refuses %s', (text) => {
    expect(parseTimestamp(text)).toBeUndefined();
  });
});

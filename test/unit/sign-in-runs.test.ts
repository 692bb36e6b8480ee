import { RUN_LIMIT, extendsRun, lastOf, runEntry, runOffsets, signedInAt, versionAt, versionsOf, type StoredRun } from '../../src/domain/sign-in-runs';
import { formatTimestamp } from '../../src/domain/timestamps';

// A run of sign-ins (docs/versions.md#compact-history): which versions join one, and what they read back as.

const t0 = new Date('2026-03-01T10:00:00.000Z');
const at = (ms: number) => new Date(t0.getTime() + ms);
const base = { id: 7, lastUpdated: formatTimestamp(t0), email: 'ada@example.com', displayName: 'Ada', lastLogin: formatTimestamp(t0), profiles: [] };
const row = (signIns: string | null = null): StoredRun => ({ version: 3, validFrom: t0, snapshot: base, signIns });
const serialized = (doc: unknown) => JSON.stringify(doc);

it('a run is its times after the stored version, each in base 36 after a comma', () => {
  const year = 365 * 86_400_000;
  const text = [0, 1, 60_000, year].map(runEntry).join('');
  expect(text).toBe(`,0,1,1aao,${year.toString(36)}`);
  expect(runOffsets(text)).toEqual([0, 1, 60_000, year]);
  expect(runOffsets(null)).toEqual([]);
  expect(runEntry(year).length).toBe(8);
});

it('a sign-in sets lastLogin and lastUpdated in their places, and nothing else', () => {
  const after = signedInAt(base, at(5000));
  expect(Object.keys(after)).toEqual(Object.keys(base));
  expect(after).toEqual({ ...base, lastUpdated: formatTimestamp(at(5000)), lastLogin: formatTimestamp(at(5000)) });
});

it('only the next version, no earlier, with only the sign-in\'s times changed, joins the run', () => {
  const next = (version: number, ms: number, doc: unknown) => ({ version, validFrom: at(ms), serialized: serialized(doc) });
  expect(extendsRun(row(), next(4, 1000, signedInAt(base, at(1000))))).toBe(true);
  // another attribute changed too, the version after next, a time before the run's last, a tombstone
  expect(extendsRun(row(), next(4, 1000, { ...signedInAt(base, at(1000)), displayName: 'Countess' }))).toBe(false);
  expect(extendsRun(row(), next(5, 1000, signedInAt(base, at(1000))))).toBe(false);
  expect(extendsRun(row(runEntry(2000)), next(5, 1000, signedInAt(base, at(1000))))).toBe(false);
  expect(extendsRun({ ...row(), snapshot: null }, next(4, 1000, signedInAt(base, at(1000))))).toBe(false);
  // the first sign-in adds lastLogin: stored whole
  const { lastLogin: _, ...never } = base;
  const first = Object.fromEntries(Object.entries(never).map(([k, v]) => [k, k === 'lastUpdated' ? formatTimestamp(at(1000)) : v]));
  expect(extendsRun({ ...row(), snapshot: never }, next(4, 1000, { ...first, lastLogin: formatTimestamp(at(1000)) }))).toBe(false);
  // the same attributes in another order is another snapshot
  const { email, ...rest } = signedInAt(base, at(1000));
  expect(extendsRun(row(), next(4, 1000, { ...rest, email }))).toBe(false);
  // a full run
  const full = Array.from({ length: RUN_LIMIT }, (_, i) => runEntry(i)).join('');
  expect(extendsRun(row(full), next(4 + RUN_LIMIT, RUN_LIMIT, signedInAt(base, at(RUN_LIMIT))))).toBe(false);
  expect(extendsRun(row(full.slice(0, full.lastIndexOf(','))), next(3 + RUN_LIMIT, RUN_LIMIT, signedInAt(base, at(RUN_LIMIT))))).toBe(true);
});

it('a stored row reads back as its versions, and a time as the version in force', () => {
  const r = row(runEntry(1000) + runEntry(1000) + runEntry(5000));
  expect(versionsOf(r).map((v) => [v.version, v.validFrom.getTime() - t0.getTime(), (v.snapshot as { lastLogin: string }).lastLogin]))
    .toEqual([[3, 0, base.lastLogin], [4, 1000, formatTimestamp(at(1000))], [5, 1000, formatTimestamp(at(1000))], [6, 5000, formatTimestamp(at(5000))]]);
  expect(lastOf(r)).toEqual({ version: 6, validFrom: at(5000) });
  expect(versionAt(r, at(999)).version).toBe(3);
  expect(versionAt(r, at(1000)).version).toBe(5);
  expect(versionAt(r, at(4999)).version).toBe(5);
  expect(versionAt(r, at(86_400_000)).version).toBe(6);
});

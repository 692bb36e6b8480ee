import { formatTimestamp } from './timestamps';
import type { Snapshot } from './storage/versions';

/**
 * Compact history (docs/versions.md#compact-history). A sign-in changes nothing of a record but its
 * `lastLogin` and `lastUpdated`, both to the time of the sign-in, so its version is known from that
 * time alone: a stored version keeps, after its snapshot, the run of sign-ins that followed it,
 * each as its time (milliseconds after the version's, base 36, each after a comma). The versions
 * of a run follow the stored one's: its version + 1, + 2, …
 *
 * Whether a new version is a sign-in is decided by its snapshot, never by the change that wrote it:
 * a version is appended to a run only when the run's last state, with both times set to the
 * version's, serializes to exactly the version's snapshot (the same attributes in the same order).
 * Anything else (an edit, the first sign-in, which adds `lastLogin`) is stored whole.
 */

type Doc = Record<string, unknown>;

/** Sign-ins kept after one stored snapshot; the next starts a new stored snapshot (about 8 bytes each, 2 KB a run). */
export const RUN_LIMIT = 256;

/** The times of a run (milliseconds after the stored version's time), oldest first; none for no run. */
export function runOffsets(encoded: string | null | undefined): number[] {
  if (!encoded) return [];
  return encoded.split(',').slice(1).map((part) => parseInt(part, 36));
}

/** One more sign-in `offset` ms after the stored version, as it is appended to the run's text. */
export const runEntry = (offset: number) => `,${offset.toString(36)}`;

/** The record as a sign-in at `at` leaves `before`: its lastLogin and lastUpdated at that time, in their places. */
export function signedInAt(before: Doc, at: Date): Doc {
  const time = formatTimestamp(at);
  return Object.fromEntries(Object.entries(before).map(([k, v]) => [k, k === 'lastLogin' || k === 'lastUpdated' ? time : v]));
}

/** A stored version with the run of sign-ins after it. */
export interface StoredRun { version: number; validFrom: Date; snapshot: Doc | null; signIns: string | null }

/** Every version a stored row holds: its own, then one per sign-in of its run. */
export function versionsOf(row: StoredRun): Snapshot[] {
  const own: Snapshot = { version: row.version, validFrom: row.validFrom, snapshot: row.snapshot };
  const offsets = runOffsets(row.signIns);
  if (offsets.length === 0 || row.snapshot === null) return [own];
  const base = row.snapshot;
  return [own, ...offsets.map((offset, i) => {
    const at = new Date(row.validFrom.getTime() + offset);
    return { version: row.version + i + 1, validFrom: at, snapshot: signedInAt(base, at) };
  })];
}

/** The version of a stored row in force at `at` (the row's own time is at or before it): only that one is made. */
export function versionAt(row: StoredRun, at: Date): Snapshot {
  const offsets = runOffsets(row.signIns);
  const within = at.getTime() - row.validFrom.getTime();
  let i = -1;
  while (i + 1 < offsets.length && offsets[i + 1] <= within) i++;
  if (i < 0 || row.snapshot === null) return { version: row.version, validFrom: row.validFrom, snapshot: row.snapshot };
  const time = new Date(row.validFrom.getTime() + offsets[i]);
  return { version: row.version + i + 1, validFrom: time, snapshot: signedInAt(row.snapshot, time) };
}

/** The number and time of the last version a stored row holds. */
export function lastOf(row: StoredRun): { version: number; validFrom: Date } {
  const offsets = runOffsets(row.signIns);
  if (offsets.length === 0) return { version: row.version, validFrom: row.validFrom };
  return { version: row.version + offsets.length, validFrom: new Date(row.validFrom.getTime() + offsets[offsets.length - 1]) };
}

/**
 * Whether `next` (version `version` at `at`, serialized as `serialized`) is a sign-in after the
 * row's last version: the version right after it, no earlier than it, with nothing else changed,
 * and room left in the run.
 */
export function extendsRun(row: StoredRun, next: { version: number; validFrom: Date; serialized: string }): boolean {
  if (row.snapshot === null) return false;
  if (runOffsets(row.signIns).length >= RUN_LIMIT) return false;
  const last = lastOf(row);
  if (next.version !== last.version + 1 || next.validFrom < last.validFrom) return false;
  return JSON.stringify(signedInAt(row.snapshot, next.validFrom)) === next.serialized;
}

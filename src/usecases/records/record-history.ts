import { differences, type HistoryEntry } from '../../domain/history';
import type { Services } from '../services';

/** How many versions a history answers at most (the newest). */
export const MAX_HISTORY = 1000;

/**
 * A record's history (docs/versions.md#a-records-history): its versions newest first, each as the
 * difference from the one before (which attribute, from what, to what) and the change that made
 * it (its event's type and actor, matched by time: a version's time is its change's). Works for a
 * deleted record too (its tombstone is the newest entry). Reads only.
 */
export async function recordHistory(deps: Pick<Services, 'db'>, command: { applicationId: number; entityId: number; limit?: number }): Promise<HistoryEntry[]> {
  const limit = Math.min(MAX_HISTORY, Math.max(1, command.limit ?? MAX_HISTORY));
  const [versions, changes] = await Promise.all([
    // one more than asked: the oldest answered is shown as its difference from the one before
    deps.db.versions.history(command.applicationId, command.entityId, limit + 1),
    deps.db.events.recordChanges(command.applicationId, command.entityId, limit * 2 + 10),
  ]);
  const byTime = new Map(changes.map((e) => [e.occurredAt.getTime(), e]));
  const entries = versions.map((v, i) => {
    // (the first of all has no version before it; the first read here, when there are older ones, is only the base of the next)
    const made = byTime.get(v.validFrom.getTime());
    return {
      version: v.version, at: v.validFrom, record: v.snapshot, changes: differences(i === 0 ? null : versions[i - 1].snapshot, v.snapshot),
      ...(made && { by: { type: made.type, actor: made.actor } }),
    };
  });
  return entries.reverse().slice(0, limit);
}

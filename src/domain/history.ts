import type { Actor, EventType } from './events';

type Doc = Record<string, unknown>;

/** One attribute a version changed: from what (undefined: it had none) to what (undefined: removed). */
export interface AttributeChange { attribute: string; from: unknown; to: unknown }

/** What the service changes with every version, not a change anyone made. */
const BOOKKEEPING = new Set(['lastUpdated']);

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The attributes whose values differ between two versions of a record (`before` null: the first
 * version; `after` null: its deletion), in the order of the later one, then those it dropped.
 */
export function differences(before: Doc | null, after: Doc | null): AttributeChange[] {
  const from = before ?? {};
  const to = after ?? {};
  const names = [...new Set([...Object.keys(to), ...Object.keys(from)])].filter((n) => !BOOKKEEPING.has(n));
  return names.filter((n) => !same(from[n], to[n])).map((n) => ({ attribute: n, from: from[n], to: to[n] }));
}

/** One version of a record in its history: when, what changed from the version before, and the change that made it (when the event store still has it). */
export interface HistoryEntry {
  version: number;
  at: Date;
  /** The record as this version left it; null for its deletion. */
  record: Doc | null;
  changes: AttributeChange[];
  by?: { type: EventType; actor: Actor };
}


/**
 * What the console's overview counts per application and day (docs/console.md#the-overview):
 * sign-ins and registrations by method, failed sign-ins by reason.
 */
export const TALLY_METRICS = ['signed_in', 'registered', 'failed'] as const;
export type TallyMetric = (typeof TALLY_METRICS)[number];

/** A count of one metric's detail (a method, a reason) on one day (YYYY-MM-DD, UTC) of one application. */
export interface DayTally { applicationId: number; day: string; metric: TallyMetric; detail: string; count: number }

/** An application's day of active accounts, as a sketch (src/domain/active-accounts.ts). */
export interface DaySketch { applicationId: number; day: string; registers: Buffer }

/** An event the tallies count: its place in the store, its application, type, account, time and data. */
export interface TallyEvent { id: number; applicationId: number; type: string; accountId: number | null; occurredAt: Date; data: Record<string, unknown> }

/** A minute of an account's counted failed sign-ins. */
export interface TallyFailure { id: number; applicationId: number; reason: string; minute: Date; count: number }

/** What a batch of rows adds: the counts, the day sketches as they now are, and the last row taken (null: none was ready, nothing moves). */
export interface Tallied { lastId: number | null; tallies: DayTally[]; sketches: DaySketch[] }

/** Reads the current sketches of these days (those that exist), in the tally's transaction. */
export type SketchesOf = (keys: readonly { applicationId: number; day: string }[]) => Promise<DaySketch[]>;

/**
 * The tallies of the kept events (docs/console.md#the-overview). Each source is read along its
 * primary key from its mark; the mark is read locked and moves in the transaction that adds what
 * was counted, so two tallies running at once (two workers) never count a row twice.
 */
export interface TallyStore {
  /**
   * In one transaction of its own: the events after the mark, at most `limit` (only the types
   * `types` carry their data), folded by `fold` into what they add; adds it, and moves the mark to
   * the last event `fold` took. Answers how many events it took.
   */
  tallyEventsAlone(limit: number, types: readonly string[], fold: (events: TallyEvent[], sketchesOf: SketchesOf) => Promise<Tallied>): Promise<number>;
  /**
   * Where tallying starts on a store that holds much already: a source never tallied (its mark at
   * 0) skips, in one transaction of its own, to its first row at `since` or later (found by
   * bisecting its primary key, a few dozen reads), so that an upgrade does not read a year of
   * events to draw thirty days.
   */
  beginAlone(since: Date): Promise<void>;
  /** The same over the counted failed sign-ins (a row per account, reason and minute). */
  tallyFailuresAlone(limit: number, fold: (failures: TallyFailure[]) => Promise<Tallied>): Promise<number>;
  /** The counts from day `from` to day `to` (both included), of one application or summed over all (applicationId 0). */
  counts(range: { from: string; to: string; applicationId?: number }): Promise<DayTally[]>;
  /** The sketches from day `from` to day `to` (both included), of one application or of all. */
  listSketches(range: { from: string; to: string; applicationId?: number }): Promise<DaySketch[]>;
}

import { addToSketch, emptySketch } from '../../domain/active-accounts';
import type { DaySketch, DayTally, Tallied, TallyEvent, TallyFailure, TallyMetric } from '../../domain/storage/tallies';
import type { Services } from '../services';

/**
 * The console's overview, counted (docs/console.md#the-overview): a maintenance job reads the
 * events and the counted failed sign-ins along their primary keys from where it stopped, and adds
 * per application and day the sign-ins and registrations by method, the failures by reason, and
 * the accounts that were active to that day's sketch. The page then reads a few hundred small rows,
 * however many events there are; the job's cost grows with the events of the minute, never with
 * those kept.
 */

/** The events tallied: what a sign-in, a registration or an active account is. */
export const TALLIED_TYPES = ['account.signed_in', 'account.registered', 'token.refreshed', 'oidc.token_refreshed'] as const;
/** The events that make an account active on their day: a sign-in, a registration by the person (which signs in), a token refreshed. */
const ACTIVE = new Set<string>(['account.signed_in', 'account.registered', 'token.refreshed', 'oidc.token_refreshed']);
/** Registrations made for the person, by the application's backend or a directory: not the person's activity. */
const MADE_FOR = new Set<unknown>(['api', 'scim']);
/**
 * How old a row must be to be counted: events are numbered when written and committed a moment
 * later, possibly after a later one, and a minute of failures keeps counting to its end. A row is
 * counted once this long has passed, so the overview is a few minutes behind, and never misses a
 * row whose transaction took less.
 */
export const SETTLE_MS = 3 * 60_000;
/** How far back a first tally starts: the overview's thirty days and a day. */
export const FIRST_TALLY_DAYS = 31;
/** Rows per transaction, and transactions per run per source: a run reads at most 200,000 events. */
const BATCH = 5_000;
const BATCHES = 40;

/** The day (UTC) of `at`, as YYYY-MM-DD. */
export const dayOf = (at: Date) => at.toISOString().slice(0, 10);

/** Counts keyed by application, day, metric and detail. */
class Counts {
  private readonly map = new Map<string, DayTally>();
  add(applicationId: number, day: string, metric: TallyMetric, detail: string, count: number): void {
    const key = `${applicationId}\u0000${day}\u0000${metric}\u0000${detail}`;
    const held = this.map.get(key);
    if (held) held.count += count;
    else this.map.set(key, { applicationId, day, metric, detail, count });
  }
  all(): DayTally[] {
    return [...this.map.values()];
  }
}

const methodOf = (data: Record<string, unknown>) => (typeof data.method === 'string' && data.method !== '' ? data.method.slice(0, 32) : 'other');

/** Folds settled events, in the store's order, into what they add; stops at the first too young. */
async function foldEvents(events: TallyEvent[], settledBefore: number, sketchesOf: (keys: { applicationId: number; day: string }[]) => Promise<DaySketch[]>): Promise<Tallied> {
  const settled: TallyEvent[] = [];
  for (const e of events) {
    if (e.occurredAt.getTime() >= settledBefore) break;
    settled.push(e);
  }
  if (settled.length === 0) return { lastId: null, tallies: [], sketches: [] };
  const counts = new Counts();
  const active: TallyEvent[] = [];
  for (const e of settled) {
    const day = dayOf(e.occurredAt);
    if (e.type === 'account.signed_in') counts.add(e.applicationId, day, 'signed_in', methodOf(e.data), 1);
    else if (e.type === 'account.registered') counts.add(e.applicationId, day, 'registered', methodOf(e.data), 1);
    if (ACTIVE.has(e.type) && e.accountId !== null && !(e.type === 'account.registered' && MADE_FOR.has(e.data.method))) active.push(e);
  }
  const keyOf = (applicationId: number, day: string) => `${applicationId}\u0000${day}`;
  const wanted = new Map(active.map((e) => [keyOf(e.applicationId, dayOf(e.occurredAt)), { applicationId: e.applicationId, day: dayOf(e.occurredAt) }]));
  const sketches = new Map((await sketchesOf([...wanted.values()])).map((s) => [keyOf(s.applicationId, s.day), s]));
  for (const e of active) {
    const key = keyOf(e.applicationId, dayOf(e.occurredAt));
    let sketch = sketches.get(key);
    if (!sketch) sketches.set(key, sketch = { applicationId: e.applicationId, day: dayOf(e.occurredAt), registers: emptySketch() });
    addToSketch(sketch.registers, e.accountId!);
  }
  return { lastId: settled[settled.length - 1]!.id, tallies: counts.all(), sketches: [...sketches.values()] };
}

/** Folds the minutes of failures that have ended, in the store's order; stops at the first that may still count. */
function foldFailures(failures: TallyFailure[], settledBefore: number): Tallied {
  const counts = new Counts();
  let lastId: number | null = null;
  for (const f of failures) {
    if (f.minute.getTime() + 60_000 >= settledBefore) break;
    counts.add(f.applicationId, dayOf(f.minute), 'failed', f.reason, f.count);
    lastId = f.id;
  }
  return { lastId, tallies: counts.all(), sketches: [] };
}

/** One run of the tally: the events and failures settled since the last, in bounded batches. Answers how many of each it counted. */
export async function tallyActivity(deps: Pick<Services, 'db' | 'clock'>): Promise<{ events: number; failures: number }> {
  const { db } = deps;
  const now = deps.clock.now().getTime();
  const settledBefore = now - SETTLE_MS;
  await db.tallies.beginAlone(new Date(now - FIRST_TALLY_DAYS * 86_400_000));
  const taken = { events: 0, failures: 0 };
  for (let i = 0; i < BATCHES; i++) {
    const n = await db.tallies.tallyEventsAlone(BATCH, TALLIED_TYPES, (events, sketchesOf) => foldEvents(events, settledBefore, sketchesOf));
    taken.events += n;
    if (n < BATCH) break;
  }
  for (let i = 0; i < BATCHES; i++) {
    const n = await db.tallies.tallyFailuresAlone(BATCH, async (failures) => foldFailures(failures, settledBefore));
    taken.failures += n;
    if (n < BATCH) break;
  }
  return taken;
}

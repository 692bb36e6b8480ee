import { randomUUID } from 'node:crypto';
import { addToSketch, emptySketch, mergeSketch, sketchCount } from '../../src/domain/active-accounts';
import type { StoredEvent } from '../../src/domain/storage/events';
import { consoleOverview, OVERVIEW_DAYS } from '../../src/usecases/operators/console-overview';
import { registerWithPassword } from '../../src/usecases/login/register';
import { signIn } from '../../src/usecases/login/sign-in';
import { dayOf, SETTLE_MS, tallyActivity } from '../../src/usecases/upkeep/tally-activity';
import { manualClock, startTestApp, type TestApp } from '../helpers/backend';
import { loginCall, notPaused } from '../helpers/usecases';

// The console's overview (docs/console.md#the-overview) from the tallies the maintenance job keeps:
// its counts equal the events the test made, read back from the event store; a row is counted
// once, however many tallies run at once; a first tally skips what is older than the overview
// shows; and the active accounts' sketch counts distinct accounts.

const PASSWORD = 'correct horse battery';
const DAY = 86_400_000;
// forty days ago: the first events fall outside the overview's thirty days
const clock = manualClock(new Date(Date.now() - 40 * DAY));
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ clock, env: { LOGIN_LIMIT_ACCOUNT: '1000/60', LOGIN_LIMIT_ADDRESS: '1000/60' } });
});
afterAll(() => t.close());

const form = (email: string, password = PASSWORD) => ({ form: { values: { signInEmailAddress: email, currentPassword: password } } });
async function register(): Promise<string> {
  const email = `${randomUUID()}@example.com`;
  notPaused(await registerWithPassword(await loginCall(t), {
    form: { values: { emailAddress: email, newPassword: PASSWORD, newPasswordConfirm: PASSWORD, firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada' } },
  }));
  return email;
}
/** The application's events of `type` in the store, from `since` on. */
const stored = async (type: string, since: Date): Promise<StoredEvent[]> => {
  const local = (await t.runtime.db.applications.findByName('local'))!;
  return (await t.runtime.db.events.latest(local.id, 10_000)).filter((e) => e.type === type && e.occurredAt >= since);
};

it('counts what the events say, once, from thirty days back; the failures by reason; the active accounts', async () => {
  const local = (await t.runtime.db.applications.findByName('local'))!;
  // long ago: a registration and a sign-in the overview never shows (and a first tally never reads)
  const old = await register();
  notPaused(await signIn(await loginCall(t), form(old)));
  clock.advance(38 * DAY);
  const since = clock.now();

  // two days ago and today: registrations, sign-ins (one account twice), wrong passwords
  const emails = [await register(), await register(), await register()];
  notPaused(await signIn(await loginCall(t), form(emails[0]!)));
  await expect(signIn(await loginCall(t), form(emails[1]!, 'wrong horse battery'))).rejects.toMatchObject({ reason: 'wrong_credentials' });
  clock.advance(2 * DAY);
  notPaused(await signIn(await loginCall(t), form(emails[0]!)));
  notPaused(await signIn(await loginCall(t), form(emails[2]!)));
  await expect(signIn(await loginCall(t), form(emails[2]!, 'wrong horse battery'))).rejects.toMatchObject({ reason: 'wrong_credentials' });
  await expect(signIn(await loginCall(t), form(emails[2]!, 'still wrong'))).rejects.toMatchObject({ reason: 'wrong_credentials' });

  // nothing is counted before it has settled
  await tallyActivity(t.runtime.services);
  const early = await consoleOverview(t.runtime.services, { app: local });
  expect(early.days.at(-1)).toMatchObject({ signedIn: 0, failed: 0 });
  clock.advance(SETTLE_MS + 61_000);

  // two tallies at once (two workers): each row counted once
  const runs = await Promise.all([tallyActivity(t.runtime.services), tallyActivity(t.runtime.services)]);
  // (the two failures of one account in one minute are one row, counted by one of them)
  expect(runs.map((r) => r.failures).sort()).toEqual([0, 1]);
  expect(await tallyActivity(t.runtime.services)).toEqual({ events: 0, failures: 0 });
  const signedIn = await stored('account.signed_in', since);
  const registered = await stored('account.registered', since);

  const o = await consoleOverview(t.runtime.services, { app: local });
  expect(o.days).toHaveLength(OVERVIEW_DAYS);
  expect(o.days.at(-1)!.day).toBe(dayOf(clock.now()));
  const perDay = (events: StoredEvent[]) => events.reduce<Record<string, number>>((m, e) => ({ ...m, [dayOf(e.occurredAt)]: (m[dayOf(e.occurredAt)] ?? 0) + 1 }), {});
  const shown = (key: 'signedIn' | 'registered' | 'failed') => Object.fromEntries(o.days.filter((d) => d[key] > 0).map((d) => [d.day, d[key]]));
  expect(shown('signedIn')).toEqual(perDay(signedIn));
  expect(shown('registered')).toEqual(perDay(registered));
  expect(signedIn).toHaveLength(3);
  expect(shown('failed')).toEqual({ [dayOf(since)]: 1, [dayOf(clock.now())]: 2 });
  expect(o.failureReasons).toEqual([{ reason: 'wrong_password', count: 3 }]);
  expect(o.registrationMethods).toEqual([{ method: 'password', count: 3 }]);
  expect(o.signInMethods.reduce((n, m) => n + m.count, 0)).toBe(signedIn.length);
  // active today: the two accounts that signed in today; over the thirty days, the three that registered
  expect(o.activeToday).toBe(2);
  expect(o.activeMonth).toBe(3);
  // every application: the same, as only "local" has had any
  const all = await consoleOverview(t.runtime.services, {});
  expect(all.days).toEqual(o.days);
  expect([all.activeToday, all.activeMonth]).toEqual([2, 3]);
});

it('the sketch counts distinct accounts: exactly when few, within 5 % when many, and merged as a union', () => {
  const a = emptySketch();
  const b = emptySketch();
  for (let id = 1; id <= 30; id++) addToSketch(a, id);
  for (let id = 1; id <= 30; id++) addToSketch(a, id);
  expect(sketchCount(a)).toBe(30);
  for (let id = 100_001; id <= 150_000; id++) addToSketch(b, id);
  expect(Math.abs(sketchCount(b) - 50_000) / 50_000).toBeLessThan(0.05);
  mergeSketch(b, a);
  expect(Math.abs(sketchCount(b) - 50_030) / 50_030).toBeLessThan(0.05);
  expect(sketchCount(emptySketch())).toBe(0);
});

import { emptySketch, mergeSketch, sketchCount } from '../../domain/active-accounts';
import type { Application } from '../../domain/storage/applications';
import { dayOf } from '../upkeep/tally-activity';
import { endpointView, type EndpointView } from '../webhooks/endpoints';
import type { Services } from '../services';

/**
 * The console's first page (docs/console.md#the-overview): what happened over the last thirty
 * days, for one application or for all, from the tallies the maintenance job keeps of the events
 * (src/usecases/upkeep/tally-activity.ts). It reads at most thirty days of counts and sketches,
 * the applications' webhook endpoints and the jobs failed for good: its cost does not grow with
 * the events kept.
 */

/** The days the overview covers, today (UTC) included. */
export const OVERVIEW_DAYS = 30;

export interface OverviewDay { day: string; signedIn: number; registered: number; failed: number }

export interface Overview {
  /** The days, oldest first, today last. */
  days: OverviewDay[];
  /** Distinct accounts that signed in, registered or refreshed a token today (UTC), and over the thirty days (estimated: exact to one or two up to a few hundred, within about 2 % beyond). */
  activeToday: number;
  activeMonth: number;
  /** Over the thirty days, most used first. */
  signInMethods: { method: string; count: number }[];
  registrationMethods: { method: string; count: number }[];
  failureReasons: { reason: string; count: number }[];
  /** Endpoints failing or disabled, with their application. */
  webhooksFailing: { application: string; endpoint: EndpointView }[];
  /** Jobs failed for good over the thirty days, by application and queue. */
  jobsFailed: { application: string; queue: string; failed: number }[];
}

const ranked = <K extends string>(key: K, counts: Map<string, number>) =>
  [...counts].map(([k, count]) => ({ [key]: k, count }) as { [P in K]: string } & { count: number }).sort((a, b) => b.count - a.count);

/** The overview of `app`, or of every application (none named). */
export async function consoleOverview(deps: Pick<Services, 'clock' | 'db'>, command: { app?: Application }): Promise<Overview> {
  const { db } = deps;
  const now = deps.clock.now();
  const days = Array.from({ length: OVERVIEW_DAYS }, (_, i) => dayOf(new Date(now.getTime() - (OVERVIEW_DAYS - 1 - i) * 86_400_000)));
  const range = { from: days[0]!, to: days[days.length - 1]!, ...(command.app && { applicationId: command.app.id }) };
  const apps = command.app ? [command.app] : await db.applications.list();
  const names = new Map(apps.map((a) => [a.id, a.name]));
  const [counts, sketches, endpoints, failedJobs] = await Promise.all([
    db.tallies.counts(range),
    db.tallies.listSketches(range),
    Promise.all(apps.map(async (a) => (await db.webhooks.list(a.id)).map((e) => ({ application: a.name, endpoint: endpointView(e) })))),
    db.outbox.countFailed(new Date(`${days[0]!}T00:00:00Z`)),
  ]);
  const byDay = new Map(days.map((day) => [day, { day, signedIn: 0, registered: 0, failed: 0 }]));
  const signIn = new Map<string, number>();
  const registration = new Map<string, number>();
  const reasons = new Map<string, number>();
  for (const c of counts) {
    const day = byDay.get(c.day);
    if (!day) continue;
    if (c.metric === 'signed_in') day.signedIn += c.count, signIn.set(c.detail, (signIn.get(c.detail) ?? 0) + c.count);
    else if (c.metric === 'registered') day.registered += c.count, registration.set(c.detail, (registration.get(c.detail) ?? 0) + c.count);
    else day.failed += c.count, reasons.set(c.detail, (reasons.get(c.detail) ?? 0) + c.count);
  }
  const today = emptySketch();
  const month = emptySketch();
  for (const s of sketches) {
    mergeSketch(month, s.registers);
    if (s.day === range.to) mergeSketch(today, s.registers);
  }
  return {
    days: [...byDay.values()],
    activeToday: sketchCount(today),
    activeMonth: sketchCount(month),
    signInMethods: ranked('method', signIn),
    registrationMethods: ranked('method', registration),
    failureReasons: ranked('reason', reasons),
    webhooksFailing: endpoints.flat().filter((e) => e.endpoint.disabledAt !== null || e.endpoint.failingSince !== null),
    jobsFailed: failedJobs.filter((j) => names.has(j.applicationId))
      .map((j) => ({ application: names.get(j.applicationId)!, queue: j.queue, failed: j.failed })).sort((a, b) => b.failed - a.failed),
  };
}

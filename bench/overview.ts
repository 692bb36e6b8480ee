import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../src/config';
import { sqlTime } from '../src/db/models';
import { createLogger } from '../src/logger';
import { createRuntime } from '../src/runtime';
import { consoleOverview } from '../src/usecases/operators/console-overview';
import { SETTLE_MS, tallyActivity } from '../src/usecases/upkeep/tally-activity';
import { freshDatabase, onEachEngine, timed } from './queries';

/*
 * The console's overview at BENCH_EVENTS (1,000,000) events over thirty days, on the embedded
 * default and, when DATABASE_URL names MariaDB/MySQL, there too:   npm run bench:overview
 * The events (sign-ins by three methods, registrations, refreshes of 100,000 accounts) and 50,000
 * minutes of failed sign-ins are written straight into the event store. Then: the maintenance
 * job's tally catching up with all of them (events per second, what a million a day needs of it);
 * the overview page (the use case the page runs) BENCH_QUERIES (50) times, its median ÷ the same
 * page on an empty store (the yardstick: flat cost is a ratio near 1); and beside it, in the same
 * run, what the page would cost computed from the events themselves (one GROUP BY over thirty days
 * and a COUNT(DISTINCT) of the accounts), which grows with every event.
 */
const events = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const failures = Math.round(events / 20);
const accounts = 100_000;
const queries = Number(process.env.BENCH_QUERIES ?? 50);
const bin = path.join(__dirname, '../../bin/gatehouse.js');
const DAY = 86_400_000;

async function measure(engine: 'sqlite' | 'mysql', dir: string): Promise<string[]> {
  const env = await freshDatabase(engine, dir, 'gatehouse_bench_overview');
  const cli = (args: string[]) => {
    const ran = spawnSync(process.execPath, [bin, ...args], { env, encoding: 'utf8' });
    if (ran.status !== 0) throw new Error(`gatehouse ${args.join(' ')}: ${ran.stderr}`);
  };
  cli(['migrate']);
  cli(['apps:create', 'bench']);
  const runtime = createRuntime(loadConfig(env), createLogger('silent'));
  const { services } = runtime;
  const app = (await runtime.db.applications.findByName('bench'))!;
  const page = () => consoleOverview(services, { app });
  const empty = await timed(page, queries);

  // the store filled: thirty days up to ten minutes ago, in order of time (as ids grow)
  const now = Date.now();
  const start = now - 30 * DAY;
  const span = 30 * DAY - 10 * 60_000;
  const q = runtime.db.sequelize;
  const time = (ms: number) => sqlTime(engine, new Date(ms));
  const seeding = performance.now();
  const BATCH = 2_000;
  for (let from = 0; from < events; from += BATCH) {
    const rows: string[] = [];
    const values: unknown[] = [];
    for (let i = from; i < Math.min(events, from + BATCH); i++) {
      const r = (i * 2654435761) % 100;
      const [type, data] = r < 56 ? ['account.signed_in', '{"method":"password"}'] : r < 72 ? ['account.signed_in', '{"method":"passkey"}']
        : r < 80 ? ['account.signed_in', '{"method":"social"}'] : r < 85 ? ['account.registered', '{"method":"password"}'] : ['token.refreshed', '{}'];
      const account = 1 + ((i * 7919) % accounts);
      rows.push('(?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)');
      values.push(`bench-${i}`, app.id, type, account, 'account', String(account), 'record', String(account), time(start + (span * i) / events), data);
    }
    const insert = `INSERT INTO events (uid, application_id, type, version, account_id, actor_kind, actor_id, subject_kind, subject_id, occurred_at, data) VALUES ${rows.join(', ')}`;
    await q.query(insert, { replacements: values });
  }
  for (let from = 0; from < failures; from += BATCH) {
    const rows: string[] = [];
    const values: unknown[] = [];
    for (let i = from; i < Math.min(failures, from + BATCH); i++) {
      const minute = Math.floor((start + (span * i) / failures) / 60_000) * 60_000;
      rows.push('(?, ?, ?, ?, ?, ?, ?)');
      values.push(app.id, 1 + ((i * 104729) % accounts), i % 10 === 0 ? 'wrong_code' : 'wrong_password', time(minute), time(minute + 1_000), time(minute + 2_000), 1 + (i % 3));
    }
    await q.query(`INSERT INTO sign_in_failures (application_id, account_id, reason, minute, first_at, last_at, count) VALUES ${rows.join(', ')}`, { replacements: values });
  }
  const seeded = (performance.now() - seeding) / 1000;

  // the maintenance job, run until it has caught up: a few minutes on, so that the application's own first events
  // (made just now, before the back-dated ones by id) have settled
  const later = { ...services, clock: { now: () => new Date(Date.now() + SETTLE_MS + 60_000) } };
  const tallying = performance.now();
  let tallied = 0;
  for (;;) {
    const run = await tallyActivity(later);
    tallied += run.events;
    if (run.events === 0 && run.failures === 0) break;
  }
  const tallySeconds = (performance.now() - tallying) / 1000;
  const full = await timed(page, queries);
  const shown = full.last.days.reduce((n, d) => n + d.signedIn + d.registered, 0);

  // the same figures read from the events themselves, as a page without tallies would
  const since = time(start);
  const direct = () => q.query(
    `SELECT SUBSTR(occurred_at, 1, 10) AS day, type, COUNT(*) AS n, COUNT(DISTINCT account_id) AS accounts FROM events
     WHERE application_id = ? AND occurred_at >= ? AND type IN ('account.signed_in', 'account.registered', 'token.refreshed') GROUP BY 1, 2`,
    { replacements: [app.id, since] },
  );
  const computed = await timed(direct, Math.max(5, Math.floor(queries / 10)));
  await runtime.close();
  return [`### ${engine === 'sqlite' ? 'SQLite (embedded default)' : 'MariaDB'}`, '',
    `${events.toLocaleString('en')} events and ${failures.toLocaleString('en')} minutes of failures over thirty days, written in ${seeded.toFixed(0)} s; the tally counted ${tallied.toLocaleString('en')} events`
      + ` (${shown.toLocaleString('en')} sign-ins and registrations shown; ${full.last.activeMonth.toLocaleString('en')} active accounts estimated of ${accounts.toLocaleString('en')}).`, '',
    '| | median ms | p99 ms | ÷ yardstick (median) |', '|---|---|---|---|',
    `| yardstick: the overview, empty store | ${empty.median.toFixed(2)} | ${empty.p99.toFixed(2)} | 1.0 |`,
    `| the overview at ${events.toLocaleString('en')} events | ${full.median.toFixed(2)} | ${full.p99.toFixed(2)} | ${(full.median / empty.median).toFixed(1)} |`,
    `| beside it: the same counts computed from the events | ${computed.median.toFixed(0)} | ${computed.p99.toFixed(0)} | ${(computed.median / empty.median).toFixed(0)} |`, '',
    `The tally caught up in ${tallySeconds.toFixed(1)} s: ${Math.round(tallied / tallySeconds).toLocaleString('en')} events per second, `
      + `${((1_000_000 / (tallied / tallySeconds)) / 86_400 * 100).toFixed(3)} % of one core's day for a million events a day.`];
}

onEachEngine('overview', measure);

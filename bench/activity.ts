import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { loadConfigOrExit } from '../src/config';
import { openDatabase } from '../src/db';
import { migrate } from '../src/db/migrate';
import { ACTIVITY_TYPES, cursorOf } from '../src/domain/activity';
import { timed } from './queries';

/*
 * An account's activity at scale, on MariaDB (DATABASE_URL, SECRET_KEY):   npm run bench:activity
 * - seeds one account with BENCH_EVENTS events (default 100,000) and BENCH_FAILURES minutes of
 *   failed sign-ins (default 10,000), beside as many events of 1,000 other accounts, by SQL on the
 *   server (INSERT … SELECT);
 * - times the first page of /entity.activity's query (50 entries, every activity type), a page deep
 *   in the history (by its cursor), and a page narrowed to one type and a week, BENCH_QUERIES times
 *   each (default 200), against the yardstick of a primary-key read of one event;
 * - prints what MariaDB's EXPLAIN says of each (the index it uses, the rows it reads).
 */
const events = Number(process.env.BENCH_EVENTS ?? 100_000);
const failures = Number(process.env.BENCH_FAILURES ?? 10_000);
const queries = Number(process.env.BENCH_QUERIES ?? 200);
const T0 = Date.UTC(2026, 0, 1);

const sqlTime = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

async function main() {
  const config = loadConfigOrExit();
  if (config.database.dialect !== 'mysql') throw new Error('bench:activity measures MariaDB: set DATABASE_URL=mysql://…');
  const db = openDatabase(config.database);
  await migrate(db);
  const q = (sql: string, bind: unknown[] = []) => db.sequelize.query(sql, { bind });
  const app = await db.transaction((tx) => db.applications.create(`bench-activity-${randomUUID().slice(0, 8)}`, new Date(), tx));
  const account = await db.transaction((tx) => db.records.insert({
    applicationId: app.id, typeName: 'user', uuid: randomUUID(), email: `${randomUUID()}@bench.example`, username: null, passwordHash: null, emailVerified: null, attributes: {},
  }, new Date(), tx));
  const digits = 'SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9';
  const numbers = `(SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d AS i FROM (${digits}) a, (${digits}) b, (${digits}) c, (${digits}) e, (${digits}) f)`;
  const started = performance.now();
  // the account's events, one a minute, of the activity's types in turn; as many of other accounts beside them
  const types = ACTIVITY_TYPES.filter((t) => t !== 'account.sign_in_failed');
  const typeCase = `ELT(1 + MOD(i, ${types.length}), ${types.map((t) => `'${t}'`).join(', ')})`;
  for (let from = 0; from < events; from += 100_000) {
    for (const [who, offset] of [[String(account.id), 0], ['1000000 + MOD(i, 1000)', 30]] as const) {
      await q(`INSERT INTO events (application_id, type, version, account_id, actor_kind, actor_id, client_id, subject_kind, subject_id, address, user_agent, request_id, occurred_at, data)
        SELECT $1, ${typeCase}, 1, ${who}, 'account', ${who}, 'bench-client', 'record', ${who}, '198.51.100.7',
          'Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0', NULL, TIMESTAMPADD(SECOND, $3 + 60 * i, $2), '{"method":"password"}'
        FROM ${numbers} s WHERE i + $4 < $5`, [app.id, sqlTime(T0), offset, from, events]);
    }
  }
  await q(`INSERT INTO sign_in_failures (application_id, account_id, reason, minute, first_at, last_at, count, client_id, address, user_agent)
    SELECT $1, $2, 'wrong_password', TIMESTAMPADD(MINUTE, 7 * i, $3), TIMESTAMPADD(MINUTE, 7 * i, $3), TIMESTAMPADD(MINUTE, 7 * i, $3), 3, 'bench-client', '203.0.113.9', NULL
    FROM ${numbers} s WHERE i < $4`, [app.id, account.id, sqlTime(T0), failures]);
  await q('ANALYZE TABLE events, sign_in_failures');
  const seeded = (performance.now() - started) / 1000;

  const first = await db.events.activity({ applicationId: app.id, accountId: account.id, types: ACTIVITY_TYPES, limit: 51 });
  // a page deep in the history: after the 50,000th entry
  const deep = (await db.events.activity({ applicationId: app.id, accountId: account.id, types: ACTIVITY_TYPES, limit: Math.min(50_000, events) })).at(-1)!;
  const [anyEvent] = await db.sequelize.query('SELECT id FROM events WHERE account_id = ? LIMIT 1', { replacements: [account.id], type: 'SELECT' }) as { id: number }[];
  const scenarios: [string, () => Promise<unknown>][] = [
    ['yardstick: one event by its primary key', () => db.sequelize.query('SELECT * FROM events WHERE id = ?', { replacements: [anyEvent.id], type: 'SELECT' })],
    ['first page (50 entries, every type)', () => db.events.activity({ applicationId: app.id, accountId: account.id, types: ACTIVITY_TYPES, limit: 51 })],
    ['a page after 50,000 entries (its cursor)', () => db.events.activity({
      applicationId: app.id, accountId: account.id, types: ACTIVITY_TYPES, limit: 51, after: { at: deep.at, kind: deep.kind, id: deep.id },
    })],
    ['one type in one week', () => db.events.activity({
      applicationId: app.id, accountId: account.id, types: ['account.signed_in'], limit: 51, since: new Date(T0 + 30 * 86_400_000), until: new Date(T0 + 37 * 86_400_000),
    })],
  ];
  const out: string[] = [`${events.toLocaleString('en')} events of one account, ${events.toLocaleString('en')} of 1,000 others, ${failures.toLocaleString('en')} minutes of failures; seeded in ${seeded.toFixed(0)} s; cursor of the first page: ${cursorOf(first[49])}`, '',
    '| query | median ms | p99 ms | ÷ yardstick (median) |', '|---|---|---|---|'];
  let yardstick = 0;
  for (const [name, run] of scenarios) {
    const { median, p99 } = await timed(run, queries);
    if (yardstick === 0) yardstick = median;
    out.push(`| ${name} | ${median.toFixed(2)} | ${p99.toFixed(2)} | ${(median / yardstick).toFixed(1)} |`);
  }
  const explain = await db.sequelize.query(
    `EXPLAIN SELECT * FROM events FORCE INDEX (events_account) WHERE application_id = ? AND account_id = ? AND type IN (${ACTIVITY_TYPES.map(() => '?').join(', ')}) ORDER BY occurred_at DESC, id DESC LIMIT 51`,
    { replacements: [app.id, account.id, ...ACTIVITY_TYPES], type: 'SELECT' },
  ) as { key: string; rows: number; Extra: string }[];
  out.push('', `EXPLAIN of the first page's events: key ${explain[0].key}, rows ${explain[0].rows}, ${explain[0].Extra}`);
  process.stdout.write(`${out.join('\n')}\n`);
  await db.close();
}

main().catch((e: Error) => {
  process.stderr.write(`${e.stack}\n`);
  process.exit(1);
});

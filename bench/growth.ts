import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { closedLoop, type LoopResult } from './closed-loop';
import { snapshotOf, type Snapshot } from './cpu';
import { form, root, startBenchServer, startBenchWorker, stopBenchWorker, type BenchApp, type CreatedApp } from './harness';
import { loadConfig } from '../src/config';
import { openDatabase } from '../src/db';
import { DEFAULT_MAINTENANCE } from '../src/jobs/maintenance';

/*
 * What a request costs as the accounts grow:   npm run bench:growth   (needs REDIS_URL and Debian's
 * mariadb-server; it starts a MariaDB of its own, on 127.0.0.1, with its data in BENCH_GROWTH_DIR,
 * default a new folder in the system's temporary folder, removed at the end unless BENCH_GROWTH_KEEP is set).
 *
 * For each size of BENCH_GROWTH_SIZES (default 5000,158000,5000000 accounts), in a database of its own:
 * 1. one account is made through the API (a record of about 1 KB, signed in, an edit, a token pair),
 *    and familyName declared an indexed attribute and built;
 * 2. the population is loaded from that account's rows by the database itself (INSERT … SELECT,
 *    20,000 accounts a statement): records of 1-3 KB, each with its password's hash (the
 *    template's, made once: no hash a row), one in five with a social identity, five credentials
 *    (two live refresh tokens, two access tokens, one spent refresh token), a year of history as
 *    the versions store keeps it (a first snapshot, the first sign-in's, a run of 1-8 sign-ins,
 *    an edit for one in three), the events of every registration, sign-in and edit, the indexed
 *    familyName, and a week's finished outbox rows (one for ten accounts);
 * 3. MariaDB restarts with its buffer pool at BENCH_GROWTH_POOL (default 1G, no dump loaded),
 *    durable commits and a binary log; the bytes of each table are read; after a warm-up (each
 *    secondary index read once, as a running primary holds what is hot, then BENCH_WARMUP seconds
 *    of mixed reads), each scenario runs BENCH_SECONDS (default 20) at
 *    BENCH_CONNECTIONS (default 8), every request for an account drawn uniformly from the whole
 *    population: a password sign-in, the refresh_token grant, /entity by its key (email),
 *    /entity.find on familyName (indexed), /versions/entity at a random time of the account's
 *    history; with the worker stopped, so that the api alone is measured;
 * 4. the worker starts and records the sign-ins' versions (rows/s from its start to the last), and
 *    the sweeper deletes BENCH_SWEEP (default 20,000, or every account's when fewer) expired
 *    credentials of accounts drawn without replacement (rows/s of the store's sweep alone).
 * Each figure is printed with its ratio to the smallest size.
 * Hashes are cheap (ARGON2_MEMORY_KIB=8192, one pass) so that a sign-in measures the database, not argon2.
 */
const sizes = (process.env.BENCH_GROWTH_SIZES ?? '5000,158000,5000000').split(',').map(Number);
const bufferPool = process.env.BENCH_GROWTH_POOL ?? '1G';
const loadPool = process.env.BENCH_GROWTH_LOAD_POOL ?? '8G';
const dir = process.env.BENCH_GROWTH_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-growth-'));
/** What the benchmark removes at the end: the folder it made, or in one it was given the database's files and binary logs. */
const removable = () => process.env.BENCH_GROWTH_DIR
  ? [path.join(dir, 'db'), ...(fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.startsWith('bin.')).map((f) => path.join(dir, f)) : [])]
  : [dir];
const connections = Number(process.env.BENCH_CONNECTIONS ?? 8);
const seconds = Number(process.env.BENCH_SECONDS ?? 20);
const warmup = Number(process.env.BENCH_WARMUP ?? 20);
const sweepCount = Number(process.env.BENCH_SWEEP ?? 20_000);
const CHUNK = 20_000;
const PASSWORD = 'growth bench password 42';
const ABOUT = 'Mathematician and writer, known for her notes on the Analytical Engine, the first published algorithm. ';

const say = (line = '') => process.stdout.write(`${line}\n`);
const note = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

// ---------------------------------------------------------------------------------------------
// A MariaDB of the benchmark's own: loaded fast (no doublewrite, lazy log flushes, a large pool),
// measured as a primary runs (durable commits, a binary log, the pool given, cold).

interface Server { url: string; child: ChildProcess; stop(): Promise<void> }

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

async function startMariadb(mode: 'load' | 'measure'): Promise<Server> {
  const data = path.join(dir, 'db');
  if (!fs.existsSync(data)) {
    fs.mkdirSync(dir, { recursive: true });
    const installed = spawnSync('mariadb-install-db', ['--no-defaults', `--datadir=${data}`, '--user=root', '--auth-root-authentication-method=normal', '--skip-test-db'], { encoding: 'utf8' });
    if (installed.status !== 0) throw new Error(`mariadb-install-db: ${installed.stderr}`);
  }
  const port = await freePort();
  const args = [
    '--no-defaults', `--datadir=${data}`, `--socket=${path.join(dir, 'db.sock')}`, `--port=${port}`, '--bind-address=127.0.0.1', '--user=root',
    '--max-connections=300', '--innodb-log-file-size=1G', '--max-allowed-packet=64M',
    '--innodb-buffer-pool-load-at-startup=OFF', '--innodb-buffer-pool-dump-at-shutdown=OFF',
    ...(mode === 'load'
      ? [`--innodb-buffer-pool-size=${loadPool}`, '--innodb-flush-log-at-trx-commit=0', '--innodb-doublewrite=0', '--skip-log-bin']
      : [`--innodb-buffer-pool-size=${bufferPool}`, '--server-id=1', `--log-bin=${path.join(dir, 'bin')}`, '--binlog-format=ROW']),
  ];
  const child = spawn('mariadbd', args, { stdio: ['ignore', 'ignore', fs.openSync(path.join(dir, 'mariadb.log'), 'a')] });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const url = `mysql://root@127.0.0.1:${port}/`;
  for (let i = 0; ; i++) {
    try {
      const c = await mysql.createConnection({ host: '127.0.0.1', port, user: 'root' });
      await c.end();
      break;
    } catch (e) {
      if (child.exitCode !== null || i > 600) {
        child.kill('SIGKILL');
        throw new Error(`MariaDB did not start (${(e as Error).message}); see ${dir}/mariadb.log`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return {
    url, child,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A connection to the server of `url`, and its database if it names one. */
const connect = (url: string) => {
  const u = new URL(url);
  return mysql.createConnection({ host: u.hostname, port: Number(u.port), user: 'root', database: u.pathname.slice(1) || undefined, timezone: 'Z' });
};

// ---------------------------------------------------------------------------------------------
// The population, derived from the account number n (1..N) by the database: the same expressions
// give the benchmark its tokens and times.

/** Sign-ins in the year (1-8), whether the account was edited (one in three). */
const SIGN_INS = '(1 + (a.n * 7) % 8)';
const EDITED = '((a.n % 3) = 0)';
const YEAR_MS = 365 * 86_400_000;
/** Registered some time in the first 200 days of the year (ms after its start); its first sign-in an hour later; sign-ins spread over 100 days; the edit a day after the last. */
const CREATED_MS = (n: bigint) => Number((n * 2654435761n) % 17_280_000_000n);
const ms = (base: string, offset: string) => `(${base} + INTERVAL ((${offset}) * 1000) MICROSECOND)`;
const CREATED = ms('@y0', '(a.n * 2654435761) % 17280000000');
const FIRST = ms(CREATED, '3600000');
const GAP = `FLOOR(8640000000 / ${SIGN_INS})`;
const LAST = ms(FIRST, `(${SIGN_INS} - 1) * ${GAP}`);
const EDIT = ms(LAST, '86400000');
const recordTime = (x: string) => `DATE_FORMAT(${x}, '%Y-%m-%d %H:%i:%s.%f +0000')`;
const isoTime = (x: string) => `CONCAT(DATE_FORMAT(${x}, '%Y-%m-%dT%H:%i:%s.'), LEFT(DATE_FORMAT(${x}, '%f'), 3), 'Z')`;
const uuidOf = (seed: string) => {
  const h = `MD5(${seed})`;
  return `CONCAT(SUBSTR(${h},1,8),'-',SUBSTR(${h},9,4),'-4',SUBSTR(${h},14,3),'-a',SUBSTR(${h},18,3),'-',SUBSTR(${h},21,12))`;
};
/** The run of sign-ins after the first one: the offsets G, 2G, … (S-1)G, base 36, each after a comma (docs/versions.md#compact-history). */
const RUN = `NULLIF(CONCAT(${Array.from({ length: 7 }, (_, i) => `IF(${SIGN_INS} > ${i + 1}, CONCAT(',', LOWER(CONV(${GAP} * ${i + 1}, 10, 36))), '')`).join(', ')}), '')`;
/** The account's k-th token (40 hex digits, as the API makes them) and its stored hash. */
const tokenOf = (n: number, k: number) => createHash('sha256').update(`growth-${n}-${k}`).digest('hex').slice(0, 40);
const TOKEN_HASH = (k: number) => `SHA2(LEFT(SHA2(CONCAT('growth-', a.n, '-', ${k}), 256), 40), 256)`;

type Sql = { sql: string; params: unknown[] };
/** `text` with each literal replaced by an expression, as nested REPLACEs. */
function subst(text: string, pairs: [string, string][]): Sql {
  let sql = '?';
  const params: unknown[] = [text];
  for (const [literal, expr] of pairs) {
    if (!text.includes(literal)) continue;
    sql = `REPLACE(${sql}, ?, ${expr})`;
    params.push(literal);
  }
  return { sql, params };
}

/** INSERT … SELECT of `row`'s table: each column the template's value unless an expression is given. */
function copy(table: string, row: Record<string, unknown>, exprs: Record<string, string | Sql>, from: Sql): Sql {
  const columns = Object.keys(row);
  const params: unknown[] = [];
  const select = columns.map((c) => {
    const e = exprs[c];
    if (e === undefined) {
      params.push(row[c]);
      return '?';
    }
    if (typeof e === 'string') return e;
    params.push(...e.params);
    return e.sql;
  });
  return { sql: `INSERT INTO ${table} (${columns.map((c) => `\`${c}\``).join(', ')}) SELECT ${select.join(', ')} ${from.sql}`, params: [...params, ...from.params] };
}

interface Template {
  entityId: number; uuid: string;
  /** The template's times: registered, signed in, edited. */
  times: Date[];
  entity: Record<string, unknown>;
  versions: Record<string, unknown>[];
  credentials: Record<string, Record<string, unknown>>;
  events: { created: Record<string, unknown>[]; signedIn: Record<string, unknown>[]; edited: Record<string, unknown>[] };
  outbox: Record<string, unknown>;
  attributeId: number;
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The template account, made through the API on an empty database, and its rows as stored. */
async function makeTemplate(app: BenchApp, databaseUrl: string): Promise<Template> {
  const db = await connect(databaseUrl);
  const worker = await startBenchWorker({ DATABASE_URL: databaseUrl });
  try {
    const maxEvent = async () => Number(((await db.query('SELECT COALESCE(MAX(id), 0) AS m FROM events')) as unknown as [{ m: number }[]])[0][0].m);
    const attributes = {
      email: 'growth-zzNzz@bench.example', password: PASSWORD, displayName: 'Person zzNzz', givenName: 'Ada', familyName: 'Family-zzFzz', birthdate: '1815-12-10',
      phone: '+44 20 7946 0000', locale: 'en-GB', timezone: 'Europe/London',
      primaryAddress: { street: 'zzNzz Analytical Engine Road', city: 'London', zip: 'W1 4AB', country: 'GB', region: 'Greater London' },
      preferences: Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`notify_topic_${i}`, i % 3 === 0])),
      marketing: { newsletter: true, partners: false, consentedAt: '2025-03-01T10:00:00Z', source: 'signup-form-v3' },
      about: 'zzABOUTzz',
    };
    const indexed = await form('/attributes/index', { type_name: 'user', name: 'familyName' }, app.owner, app.base);
    if (indexed.stat !== 'ok') throw new Error(`attributes/index: ${JSON.stringify(indexed)}`);
    const e0 = await maxEvent();
    const made = await form('/entity.bulkCreate', { type_name: 'user', all_attributes: JSON.stringify([attributes]) }, app.owner, app.base);
    if (made.stat !== 'ok') throw new Error(`bulkCreate: ${JSON.stringify(made)}`);
    const { id: entityId, uuid } = made.results[0] as { id: number; uuid: string };
    const e1 = await maxEvent();
    const signIn = await form('/oauth/auth_native_traditional', { client_id: app.loginId, locale: 'en-US', signInEmailAddress: attributes.email, currentPassword: PASSWORD }, undefined, app.base);
    if (signIn.stat !== 'ok') throw new Error(`sign-in: ${JSON.stringify(signIn)}`);
    const e2 = await maxEvent();
    const edit = await form('/entity.update', { type_name: 'user', id: String(entityId), attributes: JSON.stringify({ displayName: 'Edited zzNzz' }) }, app.owner, app.base);
    if (edit.stat !== 'ok') throw new Error(`edit: ${JSON.stringify(edit)}`);
    const e3 = await maxEvent();
    const code = await form('/access/getAuthorizationCode', { type_name: 'user', uuid, redirect_uri: 'https://bench.example.com/', lifetime: '600', for_client_id: app.loginId }, app.owner, app.base);
    const pair = await form('/oauth/token', { grant_type: 'authorization_code', code: code.authorizationCode, redirect_uri: 'https://bench.example.com/' }, app.login, app.base);
    if (!pair.refresh_token) throw new Error(`token: ${JSON.stringify(pair)}`);
    // the worker records the versions and builds the (nearly empty) index
    await waitFor('the template\'s versions and index', async () => {
      const [[o]] = await db.query("SELECT COUNT(*) AS n FROM outbox WHERE queue = 'versions' AND status <> 'done'") as unknown as [{ n: number }[]];
      const [[i]] = await db.query("SELECT COUNT(*) AS n FROM indexed_attributes WHERE state <> 'ready'") as unknown as [{ n: number }[]];
      return Number(o.n) === 0 && Number(i.n) === 0;
    }, 60_000);
    const rows = async (sql: string, params: unknown[] = []) => (await db.query(sql, params))[0] as Record<string, unknown>[];
    const [entity] = await rows('SELECT * FROM entities WHERE id = ?', [entityId]);
    const versions = await rows('SELECT * FROM entity_versions WHERE entity_id = ? ORDER BY version', [entityId]);
    if (versions.length !== 3) throw new Error(`the template has ${versions.length} stored versions, not 3: ${JSON.stringify(versions)}`);
    const credentials = Object.fromEntries((await rows("SELECT * FROM credentials WHERE entity_id = ? AND kind IN ('access_token', 'refresh_token') ORDER BY id", [entityId])).map((r) => [r.kind as string, r]));
    const events = async (from: number, to: number) => rows('SELECT * FROM events WHERE id > ? AND id <= ? AND account_id = ? ORDER BY id', [from, to, entityId]);
    const [outbox] = await rows("SELECT * FROM outbox WHERE queue = 'versions' AND entity_id = ? ORDER BY created_at DESC LIMIT 1", [entityId]);
    const [attribute] = await rows('SELECT id FROM indexed_attributes WHERE name = ?', ['familyName']);
    return {
      entityId, uuid, times: versions.map((v) => v.valid_from as Date), entity, versions, credentials,
      events: { created: await events(e0, e1), signedIn: await events(e1, e2), edited: await events(e2, e3) },
      outbox, attributeId: Number(attribute.id),
    };
  } finally {
    await stopBenchWorker(worker);
    await db.end();
  }
}

/** Loads accounts 1..count from the template, CHUNK accounts a statement per table; the id before the first credential loaded (account n's k-th is that + (n - 1) * 5 + k + 1). */
async function load(databaseUrl: string, t: Template, count: number): Promise<number> {
  const db = await connect(databaseUrl);
  try {
    await db.query("SET SESSION unique_checks = 0, foreign_key_checks = 0, time_zone = '+00:00'");
    await db.query('SET @y0 = UTC_TIMESTAMP(3) - INTERVAL 365 DAY');
    await db.query('CREATE TABLE bench_seq (i INT PRIMARY KEY)');
    const digits = '(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)';
    await db.query(`INSERT INTO bench_seq SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d FROM ${digits} a, ${digits} b, ${digits} c, ${digits} e, ${digits} f`);
    await db.query('CREATE TABLE bench_k (k INT PRIMARY KEY)');
    await db.query('INSERT INTO bench_k VALUES (1), (2), (3), (4), (5), (6), (7), (8)');
    const [[{ c: creds }]] = await db.query('SELECT COALESCE(MAX(id), 0) AS c FROM credentials') as unknown as [{ c: number }[]];
    const id = `(${t.entityId} + a.n)`;
    const uuid = uuidOf("CONCAT('growth-', a.n)");
    const [t0, t1, t2] = t.times;
    const rec = (d: Date) => `${d.toISOString().replace('T', ' ').replace('Z', '')}000 +0000`;
    const common: [string, string][] = [
      [t.uuid, uuid], [`"id":${t.entityId},`, `CONCAT('"id":', ${id}, ',')`], ['zzNzz', 'a.n'], ['zzFzz', 'a.n DIV 4'],
      ['zzABOUTzz', `REPEAT('${ABOUT}', 1 + a.n % 17)`],
    ];
    const stats = [t0, t1, t2].map(rec);
    for (let from = 1; from <= count; from += CHUNK) {
      const size = Math.min(CHUNK, count - from + 1);
      const accounts = (where = '', join = ''): Sql => ({ sql: `FROM (SELECT ? + i AS n FROM bench_seq WHERE i < ?) a ${join} ${where}`, params: [from, size] });
      const run = async (q: Sql) => db.query(q.sql, q.params);
      const e = t.entity;
      const attributesText = String(e.attributes);
      const attrs = subst(attributesText, [...common, [t1.toISOString(), isoTime(LAST)]]);
      await run(copy('entities', e, {
        id, uuid, email: `CONCAT('growth-', a.n, '@bench.example')`, email_key: `CONCAT('growth-', a.n, '@bench.example')`,
        attributes: { sql: `IF(${EDITED}, ${attrs.sql}, REPLACE(${attrs.sql}, 'Edited ', 'Person '))`, params: [...attrs.params, ...attrs.params] },
        created: CREATED, last_updated: `IF(${EDITED}, ${EDIT}, ${LAST})`, version: `1 + ${SIGN_INS} + ${EDITED}`,
      }, accounts()));
      const [v1, v2, v3] = t.versions;
      const version = (row: Record<string, unknown>, times: [string, string][], extra: Record<string, string>, where = '') =>
        run(copy('entity_versions', { ...row, id: undefined }, {
          id: 'NULL', entity_id: id, entity_uuid: uuid, snapshot: subst(String(row.snapshot), [...common, ...times]), ...extra,
        }, accounts(where)));
      await version(v1, [[stats[0], recordTime(CREATED)]], { valid_from: CREATED });
      await version(v2, [[stats[0], recordTime(CREATED)], [stats[1], recordTime(FIRST)]], { valid_from: FIRST, sign_ins: RUN });
      await version(v3, [[stats[0], recordTime(CREATED)], [stats[1], recordTime(LAST)], [stats[2], recordTime(EDIT)]], { valid_from: EDIT, version: `2 + ${SIGN_INS}` }, `WHERE ${EDITED}`);
      // five credentials: two live refresh tokens (two devices), two access tokens, a refresh token spent in the last hour
      const refresh = t.credentials.refresh_token;
      const access = t.credentials.access_token;
      const lifetime = (row: Record<string, unknown>) => (row.expires_at as Date).getTime() - (row.created_at as Date).getTime();
      const cred = (k: number, row: Record<string, unknown>, createdAgo: string, family: string, usedAt = 'NULL') => {
        const created = `(UTC_TIMESTAMP(3) - INTERVAL (${createdAgo}) SECOND)`;
        return run(copy('credentials', row, {
          id: `${creds} + (a.n - 1) * 5 + ${k + 1}`, value_hash: TOKEN_HASH(k), entity_id: id, family: `LEFT(MD5(CONCAT('family-', a.n, '-', ${family})), 32)`,
          created_at: created, expires_at: ms(created, String(lifetime(row))), used_at: usedAt === 'NULL' ? 'NULL' : ms(created, usedAt),
        }, accounts()));
      };
      await cred(0, refresh, 'a.n % 86400', '0');
      await cred(1, refresh, '(a.n * 13) % 86400', '1');
      await cred(2, access, 'a.n % 3000', '2');
      await cred(3, access, '(a.n * 7) % 3000', '3');
      await cred(4, refresh, '1800 + a.n % 1800', '0', '1000');
      // events: the registration's, each sign-in's, the edit's
      const event = (row: Record<string, unknown>, at: string, key: string, join = '', where = '') => run(copy('events', { ...row, id: undefined }, {
        id: 'NULL', uid: uuidOf(`CONCAT('event-', a.n, '-', ${key})`), account_id: id, subject_id: `CAST(${id} AS CHAR)`,
        request_id: `LEFT(MD5(CONCAT('request-', a.n, '-', ${key})), 16)`, occurred_at: at, data: subst(String(row.data), common),
      }, accounts(where, join)));
      for (const [i, row] of t.events.created.entries()) await event(row, CREATED, `'c${i}'`);
      for (const [i, row] of t.events.signedIn.entries()) await event(row, ms(FIRST, `(k.k - 1) * ${GAP}`), `CONCAT('s${i}-', k.k)`, `JOIN bench_k k ON k.k <= ${SIGN_INS}`);
      for (const [i, row] of t.events.edited.entries()) await event(row, EDIT, `'e${i}'`, '', `WHERE ${EDITED}`);
      // a week of finished jobs: one row for ten accounts
      const o = t.outbox;
      const jobAt = '(UTC_TIMESTAMP(3) - INTERVAL (a.n * 61) % 604800 SECOND)';
      await run(copy('outbox', o, {
        id: uuidOf("CONCAT('outbox-', a.n)"), event_id: uuidOf("CONCAT('outbox-event-', a.n)"), entity_id: id, status: "'done'",
        payload: subst(String(o.payload), common), created_at: jobAt, updated_at: jobAt,
      }, accounts('WHERE a.n % 10 = 0')));
      // one in five signed up with a social identity
      await run({
        sql: `INSERT INTO profiles (application_id, entity_id, provider, identifier, data, created_at) SELECT ?, ${id}, 'google', CONCAT('https://accounts.google.com/', 100000000000000000000 + a.n),
          CONCAT('{"identifier":"https://accounts.google.com/', 100000000000000000000 + a.n, '","providerName":"Google","displayName":"Person ', a.n, '","email":"growth-', a.n,
          '@bench.example","verifiedEmail":"growth-', a.n, '@bench.example","photo":"https://lh3.googleusercontent.com/a/', MD5(a.n), '=s96-c","locale":"en-GB"}'), ${CREATED} ${accounts('WHERE a.n % 5 = 0').sql}`,
        params: [e.application_id, from, size],
      });
      await run({ sql: `INSERT INTO attribute_values (attribute_id, entity_id, kind, text_value, number_value) SELECT ?, ${id}, 1, CONCAT('Family-', a.n DIV 4), NULL ${accounts().sql}`, params: [t.attributeId, from, size] });
      if ((from - 1) % (CHUNK * 25) === 0 || from + CHUNK > count) note(`  loaded ${from + size - 1} of ${count} accounts`);
    }
    await db.query('DROP TABLE bench_seq');
    await db.query('DROP TABLE bench_k');
    return Number(creds);
  } finally {
    await db.end();
  }
}

/** Bytes of data and indexes per table (InnoDB's pages, after ANALYZE TABLE), largest first. */
async function tableBytes(databaseUrl: string): Promise<{ table: string; data: number; index: number; rows: number }[]> {
  const db = await connect(databaseUrl);
  try {
    const [tables] = await db.query("SELECT table_name AS t FROM information_schema.TABLES WHERE table_schema = DATABASE() AND engine = 'InnoDB'") as unknown as [{ t: string }[]];
    for (const { t } of tables) await db.query(`ANALYZE TABLE \`${t}\``);
    const [rows] = await db.query(`SELECT table_name AS t, data_length AS d, index_length AS i, table_rows AS r FROM information_schema.TABLES
      WHERE table_schema = DATABASE() AND engine = 'InnoDB' ORDER BY data_length + index_length DESC`) as unknown as [{ t: string; d: number; i: number; r: number }[]];
    return rows.map((r) => ({ table: r.t, data: Number(r.d), index: Number(r.i), rows: Number(r.r) }));
  } finally {
    await db.end();
  }
}

// ---------------------------------------------------------------------------------------------

interface Measured {
  size: number;
  bytes: { table: string; data: number; index: number; rows: number }[];
  loadSeconds: number;
  scenarios: Map<string, LoopResult>;
  versionsPerSecond: number;
  versionsRows: number;
  sweptPerSecond: number;
  innodbReads: Map<string, number>;
  /** CPU ms per request of the api (all its threads) and of MariaDB; per version recorded of the worker and MariaDB. */
  cpu: Map<string, { api: number; db: number }>;
  /** Rows each request added to events and credentials (their ids' growth). */
  written: Map<string, { events: number; credentials: number }>;
}

/** CPU ms in `after` since `before` of the processes whose label starts with `label`. */
const cpuMs = (before: Snapshot, after: Snapshot, label: string) =>
  [...after].filter(([name]) => name.startsWith(label)).reduce((sum, [name, a]) => sum + a.cpuMs - (before.get(name)?.cpuMs ?? 0), 0);

async function measureSize(size: number): Promise<Measured> {
  const name = `gatehouse_growth_${size}`;
  let server = await startMariadb('load');
  let app: BenchApp | undefined;
  let worker: ChildProcess | undefined;
  try {
    const admin = await connect(server.url);
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.query(`CREATE DATABASE ${name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
    await admin.end();
    const databaseUrl = `${server.url}${name}`;
    const port = 3940;
    app = await startBenchServer({ release: { root, port, databaseUrl } });
    const created: CreatedApp = app.created;
    note(`${size}: the template account`);
    const template = await makeTemplate(app, databaseUrl);
    await app.stop();
    app = undefined;
    note(`${size}: loading`);
    const started = Date.now();
    const credentialBase = await load(databaseUrl, template, size);
    const loadSeconds = (Date.now() - started) / 1000;
    note(`${size}: loaded in ${loadSeconds.toFixed(0)} s; restarting MariaDB with a ${bufferPool} buffer pool`);
    await server.stop();
    server = undefined as unknown as Server;
    server = await startMariadb('measure');
    const url = `${server.url}${name}`;
    const bytes = await tableBytes(url);
    app = await startBenchServer({ release: { root, port, databaseUrl: url }, app: created });
    const live = app;
    const db = await connect(url);
    const innodbReads = new Map<string, number>();
    const reads = async () => Number(((await db.query("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_reads'")) as unknown as [{ Value: string }[]])[0][0].Value);

    const draw = () => 1 + Math.floor(Math.random() * size);
    const y0 = Date.now() - YEAR_MS;
    const post = (pathname: string, params: Record<string, string>, auth?: string) => ({
      method: 'POST' as const, path: pathname, body: new URLSearchParams(params).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(auth && { authorization: auth }) },
    });
    const ok = (_c: unknown, status: number, body: string) => status === 200 && body.includes('"stat":"ok"');
    const entityId = (n: number) => String(template.entityId + n);
    const scenarios: [string, Parameters<typeof closedLoop<{ n: number }>>[0]['request'], Parameters<typeof closedLoop<{ n: number }>>[0]['answer']][] = [];
    const current = new Map<number, string>();
    const inFlight = new Set<number>();
    scenarios.push(['password sign-in', () => post('/oauth/auth_native_traditional', {
      client_id: live.loginId, locale: 'en-US', signInEmailAddress: `growth-${draw()}@bench.example`, currentPassword: PASSWORD,
    }), ok]);
    scenarios.push(['refresh_token grant', (c) => {
      do c.n = draw(); while (inFlight.has(c.n));
      inFlight.add(c.n);
      return post('/oauth/token', { grant_type: 'refresh_token', refresh_token: current.get(c.n) ?? tokenOf(c.n, 0) }, live.login);
    }, (c, status, body) => {
      inFlight.delete(c.n);
      if (status !== 200) return false;
      current.set(c.n, (JSON.parse(body) as { refresh_token: string }).refresh_token);
      return true;
    }]);
    scenarios.push(['/entity by key (email)', () => post('/entity', { type_name: 'user', key_attribute: 'email', key_value: JSON.stringify(`growth-${draw()}@bench.example`) }, live.owner), ok]);
    scenarios.push(['/entity.find familyName = (indexed)', () => post('/entity.find', {
      type_name: 'user', filter: `familyName = 'Family-${Math.floor(draw() / 4)}'`, attributes: '["uuid","familyName"]',
    }, live.owner), (_c, status, body) => status === 200 && body.includes('"stat":"ok"') && !body.includes('"result_count":0')]);
    scenarios.push(['/versions/entity at a past time', () => {
      const n = draw();
      const created = y0 + CREATED_MS(BigInt(n)) + 1000;
      const at = new Date(created + Math.random() * (Date.now() - created)).toISOString();
      return post('/versions/entity', { type_name: 'user', id: entityId(n), timestamp: at }, live.owner);
    }, ok]);

    // a primary that has run for a while holds its hottest pages: with accounts drawn uniformly, every
    // page of a secondary index is as hot as any other, so each is read once (what fits stays)
    note(`${size}: reading the secondary indexes, then ${warmup} s of mixed reads`);
    const [indexes] = await db.query(`SELECT DISTINCT table_name AS t, index_name AS i FROM information_schema.STATISTICS
      WHERE table_schema = DATABASE() AND index_name <> 'PRIMARY' AND table_name IN ('credentials', 'events', 'entities', 'entity_versions', 'attribute_values', 'profiles')`) as unknown as [{ t: string; i: string }[]];
    for (const { t, i } of indexes) await db.query(`SELECT COUNT(*) FROM \`${t}\` FORCE INDEX (\`${i}\`)`);
    await closedLoop({ url: live.base, connections, seconds: warmup, context: () => ({ n: 0, i: 0 }), request: (c) => scenarios[2 + (c.i++ % 3)][1](c), answer: () => true });
    const results = new Map<string, LoopResult>();
    const cpu = new Map<string, { api: number; db: number }>();
    const written = new Map<string, { events: number; credentials: number }>();
    const lastIds = async () => {
      const [[r]] = await db.query('SELECT (SELECT MAX(id) FROM events) AS e, (SELECT MAX(id) FROM credentials) AS c') as unknown as [{ e: number; c: number }[]];
      return { events: Number(r.e), credentials: Number(r.c) };
    };
    const watched = () => snapshotOf([...live.pids.map((pid) => ({ label: 'api', pid, node: true })), { label: 'mariadb', pid: server.child.pid! }]);
    for (const [label, request, answer] of scenarios) {
      const before = await reads();
      const idsBefore = await lastIds();
      const cpuBefore = watched();
      const r = await closedLoop({ url: live.base, connections, seconds, context: () => ({ n: 0 }), request, answer });
      const cpuAfter = watched();
      cpu.set(label, { api: cpuMs(cpuBefore, cpuAfter, 'api') / Math.max(1, r.total), db: cpuMs(cpuBefore, cpuAfter, 'mariadb') / Math.max(1, r.total) });
      innodbReads.set(label, (await reads() - before) / Math.max(1, r.total));
      const idsAfter = await lastIds();
      written.set(label, { events: (idsAfter.events - idsBefore.events) / Math.max(1, r.total), credentials: (idsAfter.credentials - idsBefore.credentials) / Math.max(1, r.total) });
      results.set(label, r);
      note(`${size}: ${label}: ${r.rps.toFixed(0)}/s p50 ${r.p50} ms p99 ${r.p99} ms, ${innodbReads.get(label)!.toFixed(2)} pages read per request${r.failed ? `, ${r.failed} failed: ${r.firstFailure}` : ''}`);
      if (r.failed > 0) throw new Error(`${label} at ${size}: ${r.failed} failed, first: ${r.firstFailure}`);
    }
    await live.stop();
    app = undefined;

    // the versions worker: the sign-ins' versions, from its start to the last one recorded
    const pending = async () => Number(((await db.query("SELECT COUNT(*) AS n FROM outbox WHERE queue = 'versions' AND status <> 'done'")) as unknown as [{ n: number }[]])[0][0].n);
    const versionsRows = await pending();
    const workerStarted = Date.now();
    worker = await startBenchWorker({ DATABASE_URL: url });
    const workerBefore = snapshotOf([{ label: 'worker', pid: worker.pid!, node: true }, { label: 'mariadb', pid: server.child.pid! }]);
    await waitFor('the versions worker', async () => (await pending()) === 0);
    const versionsPerSecond = versionsRows / ((Date.now() - workerStarted) / 1000);
    const workerAfter = snapshotOf([{ label: 'worker', pid: worker.pid!, node: true }, { label: 'mariadb', pid: server.child.pid! }]);
    cpu.set('versions worker', { api: cpuMs(workerBefore, workerAfter, 'worker') / Math.max(1, versionsRows), db: cpuMs(workerBefore, workerAfter, 'mariadb') / Math.max(1, versionsRows) });
    await stopBenchWorker(worker);
    worker = undefined;

    // the sweeper: sweepCount access tokens of random accounts expired two days ago, deleted by the use case
    // (drawn without replacement: sweepCount accounts, or every one when there are fewer)
    const pool = Array.from({ length: size }, (_, i) => i + 1);
    for (let i = 0; i < Math.min(sweepCount, size); i++) {
      const j = i + Math.floor(Math.random() * (size - i));
      [pool[i], pool[j]] = [pool[j], pool[i]];
    }
    const expire = pool.slice(0, Math.min(sweepCount, size));
    for (let i = 0; i < expire.length; i += 1000) {
      // each account's fourth credential (k = 3), an access token
      const ids = expire.slice(i, i + 1000).map((n) => credentialBase + (n - 1) * 5 + 4);
      await db.query(`UPDATE credentials SET expires_at = UTC_TIMESTAMP(3) - INTERVAL 2 DAY WHERE id IN (${ids.join(',')})`);
    }
    const config = loadConfig({ ...process.env, DATABASE_URL: url });
    const storage = openDatabase(config.database);
    const t = Date.now();
    let swept = 0;
    try {
      // the sweep's credentials half alone (the use case also purges outbox rows, events and the rest)
      const cutoff = new Date(Date.now() - DEFAULT_MAINTENANCE.credentialRetentionMs);
      for (let n = -1; n !== 0;) {
        n = await storage.credentials.sweepAlone(cutoff, DEFAULT_MAINTENANCE.batchSize);
        swept += n;
      }
    } finally {
      await storage.close();
    }
    const sweptPerSecond = swept / ((Date.now() - t) / 1000);
    if (swept < expire.length) throw new Error(`the sweeper deleted ${swept} credentials of ${expire.length} expired`);
    await db.end();
    return { size, bytes, loadSeconds, scenarios: results, versionsPerSecond, versionsRows, sweptPerSecond, innodbReads, cpu, written };
  } finally {
    if (app) await app.stop();
    if (worker) await stopBenchWorker(worker);
    if (!process.env.BENCH_GROWTH_KEEP && server) {
      const admin = await connect(server.url).catch(() => undefined);
      await admin?.query(`DROP DATABASE IF EXISTS ${name}`);
      await admin?.end();
    }
    await server?.stop();
  }
}

const mb = (b: number) => (b / 1048576).toFixed(b < 10 * 1048576 ? 1 : 0);

async function main(): Promise<void> {
  if (!process.env.REDIS_URL) throw new Error('the growth benchmark needs REDIS_URL (its api and worker use Redis as in production)');
  Object.assign(process.env, { ARGON2_MEMORY_KIB: '8192', ARGON2_ITERATIONS: '1', REDIS_PREFIX: `benchgrowth${Date.now().toString(36)}` });
  const all: Measured[] = [];
  try {
    for (const size of sizes) all.push(await measureSize(size));
  } finally {
    if (!process.env.BENCH_GROWTH_KEEP) for (const f of removable()) fs.rmSync(f, { recursive: true, force: true });
  }
  const first = all[0];
  say(`Growth: ${sizes.join(', ')} accounts; InnoDB buffer pool ${bufferPool}; ${connections} connections, ${seconds} s a scenario; node ${process.version}`);
  say();
  say(`| scenario | ${all.map((m) => `${m.size.toLocaleString('en-US')}: req/s (p99 ms)`).join(' | ')} | ${all.slice(1).map((m) => `ratio at ${m.size.toLocaleString('en-US')}`).join(' | ')} | pages read per request |`);
  say(`|---|${all.map(() => '---|').join('')}${all.slice(1).map(() => '---|').join('')}---|`);
  for (const label of first.scenarios.keys()) {
    const cells = all.map((m) => `${m.scenarios.get(label)!.rps.toFixed(0)} (${m.scenarios.get(label)!.p99})`);
    const ratios = all.slice(1).map((m) => (m.scenarios.get(label)!.rps / first.scenarios.get(label)!.rps).toFixed(2));
    say(`| ${label} | ${cells.join(' | ')} | ${ratios.join(' | ')} | ${all.map((m) => m.innodbReads.get(label)!.toFixed(2)).join(' / ')} |`);
  }
  const rate = (label: string, f: (m: Measured) => number) =>
    say(`| ${label} | ${all.map((m) => f(m).toFixed(0)).join(' | ')} | ${all.slice(1).map((m) => (f(m) / f(first)).toFixed(2)).join(' | ')} | |`);
  rate('versions worker, rows/s', (m) => m.versionsPerSecond);
  rate('sweeper, expired credentials/s', (m) => m.sweptPerSecond);
  say();
  say('CPU ms per request (per version recorded for the worker): the api or worker + MariaDB');
  say();
  say(`| scenario | ${all.map((m) => m.size.toLocaleString('en-US')).join(' | ')} |`);
  say(`|---|${all.map(() => '---|').join('')}`);
  for (const label of first.cpu.keys()) say(`| ${label} | ${all.map((m) => `${m.cpu.get(label)!.api.toFixed(2)} + ${m.cpu.get(label)!.db.toFixed(2)}`).join(' | ')} |`);
  say();
  const last = all[all.length - 1];
  say(`Rows each request adds at ${last.size.toLocaleString('en-US')}: ${[...last.written].map(([label, w]) => `${label} ${w.events.toFixed(2)} events, ${w.credentials.toFixed(2)} credentials`).join('; ')}`);
  say();
  for (const m of all) {
    const total = m.bytes.reduce((s, b) => s + b.data + b.index, 0);
    say(`${m.size.toLocaleString('en-US')} accounts: loaded in ${m.loadSeconds.toFixed(0)} s; ${mb(total)} MB on disk (buffer pool ${bufferPool}: ${(total / parseSize(bufferPool)).toFixed(1)}× it), ${(total / m.size).toFixed(0)} bytes per account`);
    say('| table | rows | data MB | index MB | bytes per account |');
    say('|---|---|---|---|---|');
    for (const b of m.bytes.filter((x) => x.data + x.index > 1048576 || x.rows > m.size / 10)) {
      say(`| ${b.table} | ${b.rows.toLocaleString('en-US')} | ${mb(b.data)} | ${mb(b.index)} | ${((b.data + b.index) / m.size).toFixed(0)} |`);
    }
    say();
  }
}

function parseSize(s: string): number {
  const m = /^(\d+)([KMG]?)$/i.exec(s);
  if (!m) return Number(s);
  return Number(m[1]) * ({ '': 1, K: 1024, M: 1048576, G: 1073741824 } as Record<string, number>)[m[2].toUpperCase()];
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});

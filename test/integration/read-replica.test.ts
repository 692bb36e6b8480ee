import { createHmac, randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import request from 'supertest';
import { formatTimestamp } from '../../src/domain/timestamps';
import { createLogger } from '../../src/logger';
import { buildApp } from '../../src/app';
import { createRuntime, type Runtime } from '../../src/runtime';
import { basic, onMysql, replicaServerPid, replicaServerUrl, serverUrl, skipUnless, startTestApp, type TestApp } from '../helpers/backend';

/**
 * DATABASE_READ_URL (docs/scaling.md#read-replicas): the lag-tolerant reads go to the replica and
 * nothing else does. The replica of the CI is a second behind its primary; while a test holds its
 * SQL thread it is behind for as long as the test likes, which makes both halves exact: what must
 * come from the replica shows the replica's state, and what must not (tokens, revocations, reuse
 * detection, a record read by its key) behaves as on the primary however far behind it is.
 */
const PASSWORD = 'correct horse battery';
const ROUNDS = 10;

let t: TestApp;
let owner: string;
let loginId: string;
const call = (path: string, params: Record<string, string>, auth = owner) => request(t.app).post(path).set('Authorization', auth).type('form').send(params);
const count = async () => (await call('/entity.count', { type_name: 'user' })).body.total_count as number;
const readOwn = (token: string) => request(t.app).post('/entity').set('Authorization', `OAuth ${token}`).type('form').send({});
const post = (path: string, body: Record<string, string>) => request(t.app).post(path).type('form').send(body);

const signIn = async (email: string, refreshSecret: string) => (await post('/oauth/auth_native_traditional', {
  signInEmailAddress: email, currentPassword: PASSWORD, client_id: loginId, locale: 'en-US', response_type: 'token', refresh_secret: refreshSecret,
})).body as { stat: string; access_token: string };
/** The mobile SDKs' refresh (signature over the date and the token with the refresh secret). */
const refresh = async (accessToken: string, refreshSecret: string) => {
  const date = new Date().toISOString().slice(0, 19).replace('T', ' ');
  const signature = createHmac('sha1', refreshSecret).update(`refresh_access_token\n${date}\n${accessToken}\n`).digest('base64');
  return (await post('/oauth/refresh_access_token', { access_token: accessToken, signature, date, client_id: loginId, locale: 'en-US' })).body;
};
const register = async (email: string) => {
  const res = await post('/oauth/register_native_traditional', {
    client_id: loginId, locale: 'en-US', emailAddress: email, newPassword: PASSWORD, newPasswordConfirm: PASSWORD,
    firstName: 'Ada', lastName: 'Lovelace', displayName: email.split('@')[0],
  });
  expect(res.body.stat).toBe('ok');
};

/** Waits until `replica` has applied everything `primary` has written so far. */
async function waitForReplica(primary: mysql.Connection, replica: mysql.Connection): Promise<void> {
  const [[status]] = await primary.query('SHOW MASTER STATUS') as unknown as [{ File: string; Position: number }[]];
  const [[waited]] = await replica.query('SELECT MASTER_POS_WAIT(?, ?, 20) AS w', [status.File, status.Position]) as unknown as [{ w: number | null }[]];
  if (waited.w === null || waited.w < 0) {
    // NULL: the replica's SQL thread is not running; -1: it did not catch up in 20 s. Say why.
    const why = await (replica.query('SHOW SLAVE STATUS') as unknown as Promise<[Record<string, unknown>[]]>).then(([[slave]]) => {
      const { Slave_IO_Running, Slave_SQL_Running, Last_IO_Error, Last_SQL_Errno, Last_SQL_Error, Seconds_Behind_Master } = slave ?? {};
      return JSON.stringify({ Slave_IO_Running, Slave_SQL_Running, Last_IO_Error, Last_SQL_Errno, Last_SQL_Error, Seconds_Behind_Master });
    }, (err: Error) => `SHOW SLAVE STATUS failed too: ${err.message}`);
    throw new Error(`the replica did not catch up with ${status.File}:${status.Position} (MASTER_POS_WAIT gave ${waited.w}): ${why}`);
  }
}

/** Runs `work` while `replica` applies nothing (as far behind as it takes), then lets it catch up. */
async function holdingBack<T>(replica: mysql.Connection, work: () => Promise<T>): Promise<T> {
  await replica.query('STOP SLAVE SQL_THREAD');
  try {
    return await work();
  } finally {
    await replica.query('START SLAVE SQL_THREAD');
  }
}

skipUnless(onMysql && replicaServerUrl !== undefined, 'the read-replica tests need REPLICA_SERVER_URL, a replica of the DATABASE_URL server (.ci/services.sh starts one)')(
  'DATABASE_READ_URL on a replica behind its primary', () => {
    let primary: mysql.Connection;
    let replica: mysql.Connection;
    const caughtUp = () => waitForReplica(primary, replica);
    const heldBack = <T>(work: () => Promise<T>) => holdingBack(replica, work);

    beforeAll(async () => {
      // the replica is behind by a second: wait for it before the first read (see caughtUp)
      t = await startTestApp({ replicated: true, logger: createLogger(process.env.TEST_LOG ?? 'silent'), env: { LOGIN_LIMIT_ACCOUNT: '1000/60' } });
      owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
      loginId = t.local.clients.login.client_id;
      primary = await mysql.createConnection(serverUrl());
      replica = await mysql.createConnection(replicaServerUrl!);
      // before any read: a replica without the database yet would be left alone for a few seconds
      await caughtUp();
      await register('ada@example.com');
      await caughtUp();
    }, 60_000);
    afterAll(async () => {
      await primary?.end();
      await replica?.end();
      await t?.close();
    });

    it('entity.count, entity.find and /versions/entity answer from the replica: a record created meanwhile shows once it has applied it', async () => {
      const before = await count();
      const created = await heldBack(async () => {
        const res = await call('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: 'grace@example.com', displayName: 'Grace' }) });
        expect(res.body.stat).toBe('ok');
        // by its key, from the primary: there at once
        expect((await call('/entity', { type_name: 'user', uuid: res.body.uuid })).body.result).toMatchObject({ email: 'grace@example.com' });
        // the lag-tolerant reads: not yet
        expect(await count()).toBe(before);
        expect((await call('/entity.find', { type_name: 'user', filter: "email = 'grace@example.com'" })).body).toMatchObject({ stat: 'ok', result_count: 0 });
        expect((await call('/versions/entity', { type_name: 'user', uuid: res.body.uuid, timestamp: formatTimestamp(new Date(Date.now() + 60_000)) })).body)
          .toMatchObject({ stat: 'error', code: 310 });
        return res.body as { uuid: string };
      });
      await caughtUp();
      expect(await count()).toBe(before + 1);
      expect((await call('/entity.find', { type_name: 'user', filter: "email = 'grace@example.com'" })).body).toMatchObject({ result_count: 1 });
      expect((await call('/versions/entity', { type_name: 'user', uuid: created.uuid, timestamp: formatTimestamp(new Date(Date.now() + 60_000)) })).body.result)
        .toMatchObject({ email: 'grace@example.com' });
    });

    it('/clients/list shows a secret reset a moment ago (it carries secrets: read from the primary, never the replica)', async () => {
      const added = await call('/clients/add', { description: 'reset me', features: JSON.stringify(['access_issuer']) });
      expect(added.body.stat).toBe('ok');
      await caughtUp();
      await heldBack(async () => {
        const reset = await call('/clients/reset_secret', { for_client_id: added.body.client_id });
        expect(reset.body.stat).toBe('ok');
        const listed = (await call('/clients/list', {})).body.results as { client_id: string; client_secret: string }[];
        expect(listed.find((c) => c.client_id === added.body.client_id)?.client_secret).toBe(reset.body.new_secret);
      });
      await caughtUp();
    });

    it('a flow version imported a moment ago is served at once (the primary has it), without waiting for the replica', async () => {
      await heldBack(async () => {
        const app = (await t.runtime.db.applications.findByName('local'))!;
        const stored = await t.runtime.db.flows.find(app.id, 'standard', 1);
        const next = await t.runtime.db.transaction((tx) => t.runtime.db.flows.insertNextVersion(app.id, 'standard', { ...(stored!.definition as object), imported: randomBytes(4).toString('hex') }, randomBytes(16).toString('hex'), new Date(), tx));
        const res = await request(t.app).get(`/widget_data/flows/local/standard/${next.version}/en-US.json`);
        expect(res.status).toBe(200);
      });
      await caughtUp();
    });

    it(`fresh tokens, refreshes, reuse detection and a deletion's revocation hold with the replica behind (${ROUNDS} rounds)`, async () => {
      await heldBack(async () => {
        for (let round = 0; round < ROUNDS; round++) {
          const email = `user${round}@example.com`;
          await register(email);
          const secret = randomBytes(20).toString('hex');
          const first = await signIn(email, secret);
          expect(first.stat).toBe('ok');
          expect((await readOwn(first.access_token)).body.result).toMatchObject({ email }); // a fresh token works at once
          const renewed = await refresh(first.access_token, secret);
          expect(renewed).toMatchObject({ stat: 'ok' });
          expect((await readOwn(renewed.access_token)).body.stat).toBe('ok');
          // the spent token presented again: refused, and the session it leaked ends at once
          expect(await refresh(first.access_token, secret)).toMatchObject({ stat: 'error', code: 413 });
          expect((await readOwn(renewed.access_token)).body).toMatchObject({ stat: 'error', code: 413 });
          // a record deleted: its tokens stop working at once
          const other = await signIn(email, randomBytes(20).toString('hex'));
          const uuid = (await readOwn(other.access_token)).body.result.uuid as string;
          expect((await call('/entity.delete', { type_name: 'user', uuid })).body.stat).toBe('ok');
          expect((await readOwn(other.access_token)).body).toMatchObject({ stat: 'error', code: 413 });
        }
      });
      await caughtUp();
    }, 120_000);

    it('an update is read back at once through the record\'s key, and by every sign-in', async () => {
      await register('linus@example.com');
      await heldBack(async () => {
        for (let round = 0; round < ROUNDS; round++) {
          expect((await call('/entity.update', { type_name: 'user', key_attribute: 'email', key_value: '"linus@example.com"', attributes: JSON.stringify({ displayName: `linus ${round}` }) })).body.stat).toBe('ok');
          expect((await call('/entity', { type_name: 'user', key_attribute: 'email', key_value: '"linus@example.com"' })).body.result.displayName).toBe(`linus ${round}`);
        }
        expect((await call('/entity.update', { type_name: 'user', key_attribute: 'email', key_value: '"linus@example.com"', attributes: JSON.stringify({ email: 'torvalds@example.com' }) })).body.stat).toBe('ok');
        expect((await signIn('torvalds@example.com', randomBytes(20).toString('hex'))).stat).toBe('ok');
      });
      await caughtUp();
    });
  },
);

/** Milliseconds `work` took, and what it answered; a failure once it has taken `capMs` (a request that waits for a hung server may wait for ever). */
async function timed<T>(work: () => Promise<T>, capMs = 10_000): Promise<[number, T]> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const cap = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${capMs} ms`)), capMs);
  });
  try {
    const answer = await Promise.race([work(), cap]);
    return [Math.round(performance.now() - started), answer];
  } finally {
    clearTimeout(timer);
  }
}

skipUnless(
  onMysql && replicaServerUrl !== undefined && replicaServerPid !== undefined,
  'the hung-replica tests need REPLICA_SERVER_URL and REPLICA_SERVER_PID, the process id of that replica server, which they stop with SIGSTOP (.ci/services.sh exports both)',
)('DATABASE_READ_URL on a replica that hangs (SIGSTOP: it takes connections and answers nothing)', () => {
  /**
   * What one request may take while the replica hangs: a statement's own limit (ENTITY_QUERY_TIMEOUT_MS,
   * 500 ms here) and REPLICA_ANSWER_MS (1.5 s) beyond it on the replica, then the primary's answer.
   */
  const BOUND_MS = 3_000;
  /**
   * The same for the first request of a pod just made: its pools, its first connection to the primary and
   * its caches besides (a second on a busy two-core machine); a read that waited for the replica twice
   * (2 s each) still takes longer.
   */
  const NEW_POD_BOUND_MS = BOUND_MS + 1_000;
  /** Well under REPLICA_ANSWER_MS: a read that took less did not wait for the replica. */
  const NO_WAIT_MS = 1_000;
  const pid = replicaServerPid!;
  let frozen = false;
  const freeze = () => {
    process.kill(pid, 'SIGSTOP');
    frozen = true;
  };
  const thaw = () => {
    process.kill(pid, 'SIGCONT');
    frozen = false;
  };
  const lines: string[] = [];
  const logger = createLogger('info', { write: (line: string) => void lines.push(line) } as never);
  const said = (what: string) => lines.filter((l) => l.includes(what)).map((l) => JSON.parse(l) as Record<string, unknown>);
  let h: TestApp;
  let auth: string;
  let login: string;
  let freshVersion: number;
  let uuid: string;
  let primary: mysql.Connection;
  let replica: mysql.Connection;
  const pods: Runtime[] = [];
  /** The api of `runtime` with its readiness (what server.ts builds). */
  const apiOf = (runtime: Runtime) => buildApp({ services: runtime.services, defaultApp: 'local', readiness: () => runtime.readiness() });
  /** Another pod of the same deployment: a replica state and client cache of its own, no flow version cached. */
  const pod = () => {
    const runtime = createRuntime(h.backend.config, logger);
    pods.push(runtime);
    return apiOf(runtime);
  };
  let api: ReturnType<typeof buildApp>;
  const admin = (app: typeof api, path: string, params: Record<string, string>) => request(app).post(path).set('Authorization', auth).type('form').send(params);
  const find = (app: typeof api) => admin(app, '/entity.find', { type_name: 'user', filter: "email = 'hung@example.com'" });
  const counted = async (app: typeof api) => (await admin(app, '/entity.count', { type_name: 'user' })).body.total_count as number;
  const readyz = async (app: typeof api) => (await request(app).get('/readyz')).body as { stat: string; checks: Record<string, unknown> };

  beforeAll(async () => {
    h = await startTestApp({ replicated: true, logger, env: { ENTITY_QUERY_TIMEOUT_MS: '500', LOGIN_LIMIT_ACCOUNT: '1000/60' } });
    api = apiOf(h.runtime);
    auth = basic(h.local.clients.owner.client_id, h.local.clients.owner.client_secret);
    login = h.local.clients.login.client_id;
    primary = await mysql.createConnection(serverUrl());
    replica = await mysql.createConnection(replicaServerUrl!);
    await waitForReplica(primary, replica);
    const registered = await request(api).post('/oauth/register_native_traditional').type('form').send({
      client_id: login, locale: 'en-US', emailAddress: 'hung@example.com', newPassword: PASSWORD, newPasswordConfirm: PASSWORD,
      firstName: 'Ada', lastName: 'Lovelace', displayName: 'hung',
    });
    expect(registered.body.stat).toBe('ok');
    uuid = (await admin(api, '/entity', { type_name: 'user', key_attribute: 'email', key_value: '"hung@example.com"' })).body.result.uuid;
    // a flow version no pod has read yet: a sign-in that names it reads it (from the replica, when it answers)
    const app = (await h.runtime.db.applications.findByName('local'))!;
    const stored = await h.runtime.db.flows.find(app.id, 'standard', 1);
    freshVersion = (await h.runtime.db.transaction((tx) => h.runtime.db.flows.insertNextVersion(app.id, 'standard', { ...(stored!.definition as object), imported: 'hung' }, randomBytes(16).toString('hex'), new Date(), tx))).version;
    await waitForReplica(primary, replica);
  }, 60_000);
  afterAll(async () => {
    if (frozen) thaw();
    for (const runtime of pods) await runtime.close();
    await primary?.end();
    await replica?.end();
    await h?.close();
  });

  it('each read answers within the bound from the primary, the replica is left alone (not waited for again by every read), and /readyz says so', async () => {
    // the replica answers: its connections are in this pod's pool
    expect(await counted(api)).toBe(1);
    const figures: Record<string, number> = {};
    freeze();
    try {
      const failedAt = performance.now();
      // a statement on a pooled connection the replica never answers: its limit and 1.5 s, then the primary
      const [findMs, found] = await timed(() => find(api));
      figures['entity.find (pooled connection)'] = findMs;
      expect(found.body).toMatchObject({ stat: 'ok', result_count: 1 });
      expect(findMs).toBeLessThan(BOUND_MS);
      // the replica is left alone: the next reads go straight to the primary
      for (let i = 0; i < 5; i++) {
        const [ms, n] = await timed(() => counted(api));
        expect(n).toBe(1);
        expect(ms).toBeLessThan(NO_WAIT_MS);
        figures[`entity.count again (${i + 1})`] = ms;
      }
      const ready = await readyz(api);
      expect(ready.stat).toBe('ok');
      expect(ready.checks).toMatchObject({ database: true, replicas: { degraded: expect.stringMatching(/^replica 1 of 1 did not answer in time \(1 try in a row\): the primary answers its reads/) } });
      // pods that have not met the hung replica yet: each first read waits for a connection it never greets
      const firstReads: [string, (app: typeof api) => Promise<request.Response>, (res: request.Response) => void][] = [
        ['entity.count', (app) => admin(app, '/entity.count', { type_name: 'user' }), (res) => expect(res.body).toEqual({ stat: 'ok', total_count: 1 })],
        ['clients/list', (app) => admin(app, '/clients/list', {}), (res) => expect(res.body.results).toHaveLength(2)],
        ['flow document (HEAD)', (app) => request(app).get('/widget_data/flows/local/standard/HEAD/en-US.json'), (res) => expect(res.status).toBe(200)],
        ['sign-in, flow version read by no pod yet', (app) => request(app).post('/oauth/auth_native_traditional').type('form').send({
          signInEmailAddress: 'hung@example.com', currentPassword: PASSWORD, client_id: login, locale: 'en-US', response_type: 'token',
          flow: 'standard', flow_version: String(freshVersion),
        }), (res) => expect(res.body).toMatchObject({ stat: 'ok' })],
        ['versions/entity', (app) => admin(app, '/versions/entity', { type_name: 'user', uuid, timestamp: formatTimestamp(new Date(Date.now() + 60_000)) }),
          (res) => expect(res.body.result).toMatchObject({ email: 'hung@example.com' })],
        ['providers/list', (app) => admin(app, '/providers/list', {}), (res) => expect(res.body).toEqual({ stat: 'ok', results: [] })],
      ];
      for (const [name, send, check] of firstReads) {
        const [ms, res] = await timed(() => send(pod()));
        check(res);
        figures[`${name} (new pod)`] = ms;
      }
      expect(Object.entries(figures).filter(([name, ms]) => ms >= (name.endsWith('(new pod)') ? NEW_POD_BOUND_MS : BOUND_MS))).toEqual([]);
      // the first pause (5 s) over, one read tries the replica again, waits its bound, and the pause doubles
      await new Promise((r) => setTimeout(r, Math.max(0, 5_100 - (performance.now() - failedAt))));
      const [retryMs, again] = await timed(() => find(api));
      figures['entity.find after the pause (tries the replica)'] = retryMs;
      expect(again.body).toMatchObject({ stat: 'ok', result_count: 1 });
      expect(retryMs).toBeLessThan(BOUND_MS);
      expect((await readyz(api)).checks.replicas).toEqual({ degraded: expect.stringMatching(/\(2 tries in a row\): the primary answers its reads, and a read tries it again in 1\d s/) });
      const [afterMs] = await timed(() => counted(api));
      expect(afterMs).toBeLessThan(NO_WAIT_MS);
    } finally {
      thaw();
    }
    process.stdout.write(`hung replica (SIGSTOP), ms per request: ${JSON.stringify(figures)}\n`);
    // the log says so once per pause of each pod, naming the replica without its credentials
    const warned = said('replica cannot answer');
    expect(warned.map((w) => w.failures)).toEqual([1, 1, 1, 1, 1, 1, 2]); // this pod's two, and the first reads of five pods (/clients/list reads no replica)
    expect(lines.join('\n')).not.toMatch(/mysql:\/\//);
  }, 90_000);

  it('once it answers again, a read tries it when its pause is over and the reads go to it again', async () => {
    await waitForReplica(primary, replica);
    const before = await counted(api);
    const thawed = performance.now();
    await holdingBack(replica, async () => {
      // created on the primary while the replica applies nothing: the primary counts it, the replica not yet
      expect((await admin(api, '/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: 'later@example.com' }) })).body.stat).toBe('ok');
      let n = await counted(api);
      while (n !== before && performance.now() - thawed < 40_000) {
        await new Promise((r) => setTimeout(r, 250));
        n = await counted(api);
      }
      expect(n).toBe(before); // the replica's answer
      process.stdout.write(`hung replica: reads went to it again ${((performance.now() - thawed) / 1000).toFixed(1)} s after this test began\n`);
    });
    expect((await readyz(api)).checks.replicas).toBe(true);
    expect(said('replica answers again').length).toBeGreaterThanOrEqual(1);
    await waitForReplica(primary, replica);
  }, 60_000);
});

skipUnless(onMysql, 'the read-replica fallback tests need a mysql: DATABASE_URL')('DATABASE_READ_URL naming a replica that cannot answer', () => {
  let down: TestApp;
  const warnings: string[] = [];
  beforeAll(async () => {
    // a port nothing listens on, and a server without this database (a replica that does not copy it)
    const closed = 'mysql://root@127.0.0.1:9/gatehouse';
    const missing = new URL('gh_not_copied', serverUrl()).toString();
    const logger = createLogger('warn', { write: (line: string) => void warnings.push(line) } as never);
    down = await startTestApp({ logger, env: { DATABASE_READ_URL: `${closed},${missing}` } });
  });
  afterAll(() => down?.close());

  it('the primary answers its reads, and the log says so once per pause without the replica\'s credentials', async () => {
    const auth = basic(down.local.clients.owner.client_id, down.local.clients.owner.client_secret);
    for (let i = 0; i < 4; i++) {
      const created = await request(down.app).post('/entity.create').set('Authorization', auth).type('form')
        .send({ type_name: 'user', attributes: JSON.stringify({ email: `n${i}@example.com` }) });
      expect(created.body.stat).toBe('ok');
      expect((await request(down.app).post('/entity.count').set('Authorization', auth).type('form').send({ type_name: 'user' })).body)
        .toEqual({ stat: 'ok', total_count: i + 1 });
    }
    const failures = warnings.filter((w) => w.includes('replica cannot answer'));
    const primaryServer = new URL(serverUrl());
    expect(failures.map((w) => JSON.parse(w).replica).sort()).toEqual([`${primaryServer.hostname}:${primaryServer.port}/gh_not_copied`, '127.0.0.1:9/gatehouse'].sort());
    expect(warnings.join('\n')).not.toMatch(/mysql:\/\//);
  });
});

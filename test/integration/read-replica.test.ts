import { createHmac, randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import request from 'supertest';
import { formatTimestamp } from '../../src/domain/timestamps';
import { createLogger } from '../../src/logger';
import { basic, onMysql, replicaServerUrl, serverUrl, skipUnless, startTestApp, type TestApp } from '../helpers/backend';

/**
 * DATABASE_READ_URL (docs/scaling.md#read-replicas): the lag-tolerant reads go to the replica and
 * nothing else does. The replica of the CI is a second behind its primary; while a test holds its
 * SQL thread it is behind for as long as the test likes, which makes both halves exact: what must
 * come from the replica shows the replica's state, and what must not (tokens, revocations, reuse
 * detection, a record read by its key) behaves as on the primary however far behind it is.
 */
const PASSWORD = 'correct horse';
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

skipUnless(onMysql && replicaServerUrl !== undefined, 'the read-replica tests need REPLICA_SERVER_URL, a replica of the DATABASE_URL server (.ci/services.sh starts one)')(
  'DATABASE_READ_URL on a replica behind its primary', () => {
    let primary: mysql.Connection;
    let replica: mysql.Connection;
    /** Waits until the replica has applied everything the primary has written so far. */
    const caughtUp = async () => {
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
    };
    /** Runs `work` while the replica applies nothing (as far behind as it takes), then lets it catch up. */
    const heldBack = async <T>(work: () => Promise<T>): Promise<T> => {
      await replica.query('STOP SLAVE SQL_THREAD');
      try {
        return await work();
      } finally {
        await replica.query('START SLAVE SQL_THREAD');
      }
    };

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

    it('a flow version imported a moment ago is served at once (the primary has it), without waiting for the replica', async () => {
      await heldBack(async () => {
        const app = (await t.runtime.db.applications.findByName('local'))!;
        const stored = await t.runtime.db.flows.find(app.id, 'standard', 1);
        const next = await t.runtime.db.flows.insertNextVersion(app.id, 'standard', { ...(stored!.definition as object), imported: randomBytes(4).toString('hex') }, randomBytes(16).toString('hex'), new Date());
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

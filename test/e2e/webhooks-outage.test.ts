import http from 'node:http';
import { Webhook } from 'standardwebhooks';
import { basic, createTestBackend, onMysql, skipUnless, type TestBackend } from '../helpers/backend';
import { cli, freePort, SERVER, startNode, until, WORKER, type Started, ownRedis, redisServerInstalled as redisServer } from '../helpers/processes';

/**
 * Webhooks across real processes (docs/webhooks.md#deliveries): an api and a worker on MariaDB and
 * a Redis of the test's own. One receiver answers 503, then refuses connections, while Redis is
 * killed and started empty, and the worker is killed (SIGKILL) in the middle of deliveries and
 * started again; another receiver stays up all along. Afterwards every event has arrived at both,
 * verified by the standardwebhooks package, each account's in the order it happened, a repeat only
 * with the same webhook-id and the same body; the receiver that stayed up had each within seconds.
 */


interface Got { id: string; type: string; user: string; step: string; at: number; body: string }

/** A receiver verifying every delivery with the reference implementation; `mode` says how it answers. */
function receiver(secret: () => string) {
  const got: Got[] = [];
  let mode: 'ok' | 'unavailable' | 'slow' = 'ok';
  let server: http.Server | undefined;
  let port = 0;
  const handle = (req: http.IncomingMessage, res: http.ServerResponse) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (mode === 'unavailable') return void res.writeHead(503).end('down for maintenance');
      const headers = { 'webhook-id': String(req.headers['webhook-id']), 'webhook-timestamp': String(req.headers['webhook-timestamp']), 'webhook-signature': String(req.headers['webhook-signature']) };
      let verified: { type: string; data: Record<string, any> };
      try {
        verified = new Webhook(secret()).verify(body, headers) as typeof verified;
      } catch {
        return void res.writeHead(400).end('not verified');
      }
      got.push({ id: headers['webhook-id'], type: verified.type, user: verified.data.user_id, step: (verified.data.attributes ?? []).join(','), at: Date.now(), body });
      if (mode === 'slow') setTimeout(() => res.writeHead(204).end(), 4_000);
      else res.writeHead(204).end();
    });
  };
  return {
    got,
    setMode: (m: typeof mode) => (mode = m),
    url: () => `http://127.0.0.1:${port}/hook`,
    async listen(at = 0) {
      server = http.createServer(handle);
      port = await new Promise<number>((resolve) => server!.listen(at, '127.0.0.1', () => resolve((server!.address() as { port: number }).port)));
    },
    async close() {
      server?.closeAllConnections();
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      server = undefined;
    },
    port: () => port,
  };
}

skipUnless(onMysql && redisServer, 'the webhooks outage test needs DATABASE_URL (MariaDB) and the redis-server program')('webhooks through a receiver outage, Redis restarted empty and a killed worker', () => {
  let backend: TestBackend;
  let redis: ReturnType<typeof ownRedis>;
  let api: Started;
  let worker: Started | undefined;
  let base: string;
  let owner: string;
  const secrets: Record<string, string> = {};
  const flaky = receiver(() => secrets.flaky);
  const steady = receiver(() => secrets.steady);
  const post = async (route: string, params: Record<string, string>) => {
    const res = await fetch(`${base}${route}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', Authorization: owner }, body: new URLSearchParams(params) });
    return (await res.json()) as Record<string, any>;
  };
  const startWorker = async () => {
    worker = startNode(WORKER, { cwd: backend.dir, env: backend.env });
    await worker.waitFor(/worker ready/);
  };

  beforeAll(async () => {
    const redisPort = await freePort();
    redis = ownRedis(redisPort);
    await redis.start();
    await Promise.all([flaky.listen(), steady.listen()]);
    backend = await createTestBackend({
      env: { REDIS_URL: `redis://127.0.0.1:${redisPort}`, REDIS_PREFIX: 'ghwebhooks', WEBHOOKS_ALLOW_PRIVATE: 'true', OUTBOX_RELAY_AFTER_SECONDS: '2', LOG_LEVEL: 'info' },
    });
    expect(cli(['migrate'], { cwd: backend.dir, env: backend.env }).status).toBe(0);
    const local = JSON.parse(cli(['apps:create', 'local', '--json'], { cwd: backend.dir, env: backend.env }).stdout);
    owner = basic(local.clients.owner.client_id, local.clients.owner.client_secret);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    api = startNode(SERVER, { cwd: backend.dir, env: { ...backend.env, PORT: String(port) } });
    await api.waitFor(/api listening/);
    await startWorker();
  }, 120_000);
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
    await redis?.kill();
    await flaky.close();
    await steady.close();
    await backend?.cleanup();
  });

  it('delivers every event to both receivers, in each account\'s order, after the outage, Redis\'s restart and a killed worker', async () => {
    for (const [name, r] of [['flaky', flaky], ['steady', steady]] as const) {
      const added = await post('/webhooks/add', { url: r.url(), events: 'user.created,user.updated' });
      expect(added.stat).toBe('ok');
      secrets[name] = added.result.secret;
    }
    // both endpoints' first seconds read back (their pings go out then): from now on deliveries flow
    for (const r of [flaky, steady]) {
      const listed = await post('/webhooks/list', {});
      const id = (listed.results as { id: string; url: string }[]).find((e) => e.url === r.url())!.id;
      expect((await post('/webhooks/test', { id })).stat).toBe('ok');
    }
    await until('both endpoints got their ping', () => flaky.got.some((g) => g.type === 'ping') && steady.got.some((g) => g.type === 'ping'), 60_000);
    const users: string[] = [];
    const madeAt = new Map<string, number>();
    let step = 0;
    /** Each account changed once more (`step<n>`): a user.updated naming that attribute. */
    const changeAll = async () => {
      step++;
      for (const uuid of users) {
        expect((await post('/entity.update', { type_name: 'user', uuid, attributes: JSON.stringify({ [`step${step}`]: true }) })).stat).toBe('ok');
        madeAt.set(`${uuid} step${step}`, Date.now());
      }
    };

    // the receiver answers 503: accounts made and changed
    flaky.setMode('unavailable');
    for (let i = 0; i < 8; i++) {
      const made = await post('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: `outage-${i}-${Date.now()}@example.com` }) });
      expect(made.stat).toBe('ok');
      users.push(made.uuid);
    }
    await changeAll();
    // then refuses connections
    await flaky.close();
    await changeAll();
    // Redis killed, changes made while it is down, then started again empty
    await redis.kill();
    await changeAll();
    await redis.start();
    await changeAll();
    // the receiver back, answering slowly; the worker killed while deliveries are in flight, then started again
    await flaky.listen(flaky.port());
    flaky.setMode('slow');
    const before = flaky.got.length;
    await until('a delivery is in flight at the receiver', () => flaky.got.length > before, 90_000);
    worker!.child.kill('SIGKILL');
    await new Promise((r) => worker!.child.once('exit', r));
    flaky.setMode('ok');
    await changeAll();
    await startWorker();

    const expected = users.length * (1 + step);
    const arrived = (r: typeof flaky) => new Set(r.got.filter((g) => g.type !== 'ping').map((g) => g.id)).size;
    await until(`all ${expected} events arrive at both receivers`, () => arrived(flaky) === expected && arrived(steady) === expected, 180_000)
      .catch((e: Error) => { throw new Error(`${e.message}: flaky ${arrived(flaky)}, steady ${arrived(steady)}; worker said:\n${worker!.output().slice(-4000)}`); });

    for (const r of [flaky, steady]) {
      // a repeat only with the same webhook-id, and the same body
      const bodies = new Map<string, string>();
      for (const g of r.got) {
        if (bodies.has(g.id)) expect(JSON.parse(g.body)).toEqual(JSON.parse(bodies.get(g.id)!));
        bodies.set(g.id, g.body);
      }
      // each account's in the order it happened: created, then step1, step2, …
      for (const uuid of users) {
        const firsts = [...new Map(r.got.filter((g) => g.user === uuid).map((g) => [g.id, g] as const)).values()];
        expect(firsts.map((g) => (g.type === 'user.created' ? 'created' : g.step))).toEqual(['created', ...Array.from({ length: step }, (_, k) => `step${k + 1}`)]);
      }
    }
    // the receiver that stayed up had the events of the first two rounds (no outage of Gatehouse's own) within seconds
    for (const k of [1, 2]) {
      for (const uuid of users) {
        const g = steady.got.find((x) => x.user === uuid && x.step === `step${k}`)!;
        expect(g.at - madeAt.get(`${uuid} step${k}`)!).toBeLessThan(5_000);
      }
    }
  }, 400_000);
});

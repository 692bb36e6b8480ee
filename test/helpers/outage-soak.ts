import type { TestBackend } from './backend';
import { basic } from './backend';
import { cli, freePort, SERVER, type Started, startNode, until, WORKER } from './processes';
import type { startSmtp } from './smtp';
import { figures, sampleFor, type Sample, terminate } from './soak';

// An outage soak of a dependency the test stops and starts itself (test/e2e/database-outage.test.ts,
// test/e2e/redis-sentinel-outage.test.ts): two api pods and two workers on `backend`; one pod and
// one worker are soaked through the whole outage (memory and CPU read from /proc, idle and then
// under a light load) and must be ready again once the dependency is back, without a restart; the
// other pod and worker get SIGTERM at the end of the outage and must stop within their drain
// (15 s and 30 s) with code 0.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Answer { route: string; status: number; ms: number; retryAfter: string | null; body: Record<string, any> }

export interface OutageSoak {
  /** What is down, for the lines the test prints. */
  what: string;
  backend: TestBackend;
  smtp: Awaited<ReturnType<typeof startSmtp>>;
  /** Stops the dependency (and returns once it is gone). */
  down(): Promise<void>;
  /** Starts it again (and returns once it serves). */
  up(): Promise<void>;
  /** How long the outage lasts at least, from `down` to `up` (ms). */
  outageMs: number;
  /** Sampling windows: with no traffic, then under the light load (ms). */
  idleMs: number;
  loadMs: number;
}

export interface OutageFigures {
  outageMs: number;
  idle: { api: ReturnType<typeof figures>; worker: ReturnType<typeof figures> };
  loaded: { api: ReturnType<typeof figures>; worker: ReturnType<typeof figures> };
  sigterm: { api: { code: number | null; ms: number }; worker: { code: number | null; ms: number } };
  readyAfterMs: number;
  answers: Answer[];
  delivered: string[];
  registered: string[];
}

/** Runs the soak; the caller checks the figures it returns (the helper itself checks nothing about them). */
export async function runOutageSoak(o: OutageSoak): Promise<OutageFigures> {
  const { backend, smtp } = o;
  const env = backend.env;
  const migrated = cli(['migrate'], { cwd: backend.dir, env });
  if (migrated.status !== 0) throw new Error(`migrate failed: ${migrated.stderr}`);
  const local = JSON.parse(cli(['apps:create', 'local', '--json'], { cwd: backend.dir, env }).stdout);
  const owner = basic(local.clients.owner.client_id, local.clients.owner.client_secret);
  const ports = [await freePort(), await freePort()];
  const metricsPorts = [await freePort(), await freePort()];
  // pod 0 and worker 0 are soaked and live through the outage; pod 1 and worker 1 get SIGTERM in it
  const pods = ports.map((port) => startNode(SERVER, { cwd: backend.dir, env: { ...env, PORT: String(port) } }));
  const workers = metricsPorts.map((port) => startNode(WORKER, { cwd: backend.dir, env: { ...env, METRICS_PORT: String(port) } }));
  const all: Started[] = [...pods, ...workers];

  const post = async (route: string, body: Record<string, string>, authorization?: string): Promise<Answer> => {
    const t0 = Date.now();
    const r = await fetch(`http://127.0.0.1:${ports[0]}${route}`, {
      method: 'POST', body: new URLSearchParams(body),
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(authorization && { authorization }) },
      signal: AbortSignal.timeout(30_000),
    });
    return { route, status: r.status, retryAfter: r.headers.get('retry-after'), body: (await r.json()) as Record<string, any>, ms: Date.now() - t0 };
  };
  const status = (url: string) => fetch(url, { signal: AbortSignal.timeout(10_000) }).then((r) => r.status, () => 0);
  const podReady = (pod: number) => status(`http://127.0.0.1:${ports[pod]}/readyz`);
  const workerReady = (worker: number) => status(`http://127.0.0.1:${metricsPorts[worker]}/readyz`);
  const allReady = async () => (await Promise.all([podReady(0), podReady(1), workerReady(0), workerReady(1)])).every((s) => s === 200);
  const soakedReady = async () => (await podReady(0)) === 200 && (await workerReady(0)) === 200;
  const noneReady = async () => (await Promise.all([podReady(0), podReady(1), workerReady(0), workerReady(1)])).every((s) => s === 503);
  const flow = { client_id: local.clients.login.client_id as string, locale: 'en-US' };
  const registered: string[] = [];
  const register = async (email: string) => {
    const answer = await post('/oauth/register_native_traditional', {
      ...flow, emailAddress: email, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'Ada', lastName: 'Lovelace', displayName: 'Ada',
    });
    if (answer.body.stat === 'ok') registered.push(email);
    return answer;
  };
  const delivered = () => smtp.mails.map((m) => (m.to as { text: string }).text);
  const withLogs = (e: Error): never => {
    throw new Error(`${e.message}; pod 0 printed:\n${pods[0].output().slice(-3000)}\nworker 0 printed:\n${workers[0].output().slice(-3000)}`);
  };

  try {
    await Promise.all([...pods.map((p) => p.waitFor(/api listening/)), ...workers.map((w) => w.waitFor(/worker ready/))]);
    await until('both pods and both workers are ready', allReady, 30_000).catch(withLogs);
    for (const n of [1, 2, 3]) expect((await register(`before${n}@example.com`)).body.stat).toBe('ok');
    await until('the emails committed before the outage are delivered', () => delivered().length === 3, 30_000).catch(withLogs);

    const watched = { api: pods[0].child.pid!, worker: workers[0].child.pid! };
    const samples = { idle: { api: [] as Sample[], worker: [] as Sample[] }, load: { api: [] as Sample[], worker: [] as Sample[] } };
    const answers: Answer[] = [];

    await o.down();
    const outage = Date.now();
    await until(`no pod and no worker is ready with ${o.what} down`, noneReady, 20_000).catch(withLogs);
    await sleep(Math.max(0, outage + 10_000 - Date.now())); // the first reconnection attempts settle

    // no traffic
    await sampleFor(o.idleMs, watched, samples.idle);

    // a light load, about two requests a second and at most 400 in all: registrations, wrong
    // passwords, a client-authenticated call and the readiness checks
    let loading = true;
    const load = (async () => {
      for (let i = 0; loading && i < 400; i++) {
        if (i % 3 === 0) answers.push(await register(`during${i}@example.com`));
        if (i % 3 === 1) answers.push(await post('/oauth/auth_native_traditional', { ...flow, signInEmailAddress: 'before1@example.com', currentPassword: `wrong ${i}` }));
        answers.push(await post('/clients/list', {}, owner));
        await podReady(0);
        await workerReady(0);
        await sleep(1_000);
      }
    })();
    await sampleFor(o.loadMs, watched, samples.load);
    loading = false;
    await load;

    // SIGTERM at the end of the outage: pod 1 and worker 1
    await sleep(Math.max(0, outage + o.outageMs - 2_000 - Date.now()));
    const [apiStop, workerStop] = await Promise.all([terminate(pods[1]), terminate(workers[1])]);
    await sleep(Math.max(0, outage + o.outageMs - Date.now()));
    const outageMs = Date.now() - outage;

    // back: the soaked pod and worker are ready again without a restart
    await o.up();
    const back = Date.now();
    await until(`the pod and the worker are ready again once ${o.what} is back`, soakedReady, 60_000).catch(withLogs);
    const readyAfterMs = Date.now() - back;

    // an email committed after it goes out too, and every email once
    expect((await register('after@example.com')).body.stat).toBe('ok');
    await until('every welcome email is delivered', () => registered.every((r) => delivered().includes(r)), 90_000).catch(withLogs);
    await sleep(2_000); // (a second delivery of any of them would show now)

    const result: OutageFigures = {
      outageMs,
      idle: { api: figures(samples.idle.api), worker: figures(samples.idle.worker) },
      loaded: { api: figures(samples.load.api, samples.idle.api), worker: figures(samples.load.worker, samples.idle.worker) },
      sigterm: { api: apiStop, worker: workerStop },
      readyAfterMs,
      answers,
      delivered: delivered(),
      registered: [...registered],
    };
    const slowest = Math.max(...answers.map((a) => a.ms));
    process.stdout.write(`${o.what} down for ${Math.round(outageMs / 1000)} s: `
      + `no traffic (${o.idleMs / 1000} s) api ${JSON.stringify(result.idle.api)}, worker ${JSON.stringify(result.idle.worker)}; `
      + `under load (${o.loadMs / 1000} s, growth from the idle start) api ${JSON.stringify(result.loaded.api)}, worker ${JSON.stringify(result.loaded.worker)}; `
      + `${answers.length} requests, statuses ${JSON.stringify([...new Set(answers.map((a) => a.status))])}, slowest ${slowest} ms; `
      + `SIGTERM: api ${JSON.stringify(apiStop)}, worker ${JSON.stringify(workerStop)}; ready again ${readyAfterMs} ms after it was back\n`);

    // and the soaked ones stop as usual
    for (const p of [pods[0], workers[0]]) expect(await terminate(p)).toEqual({ code: 0, ms: expect.any(Number) });
    return result;
  } finally {
    await Promise.all(all.map((p) => p.stop()));
  }
}

/** The checks every outage soak makes on its figures. */
export function expectSoakWithinBounds(f: OutageFigures, minOutageMs: number) {
  expect(f.outageMs).toBeGreaterThanOrEqual(minOutageMs);
  for (const figure of [f.idle.api, f.idle.worker, f.loaded.api, f.loaded.worker]) {
    expect(figure.growthMb).toBeLessThan(20);
    expect(figure.cpuPercent).toBeLessThan(10);
  }
  // SIGTERM in the outage: an api pod within 15 s, a worker within its 30 s, each with code 0
  expect(f.sigterm.api.code).toBe(0);
  expect(f.sigterm.api.ms).toBeLessThan(15_000);
  expect(f.sigterm.worker.code).toBe(0);
  expect(f.sigterm.worker.ms).toBeLessThan(30_000);
  // every email committed delivered exactly once
  expect([...f.delivered].sort()).toEqual([...f.registered].sort());
}

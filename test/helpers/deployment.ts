import type { TestBackend } from './backend';
import { cli, freePort, SERVER, startNode, WORKER } from './processes';

/**
 * A deployment as the Redis topology tests run one: `migrate`, the application `local`, two api
 * pods and a worker, all on `backend`'s environment. Call `started` before the first request and
 * `stop` in a `finally`.
 */
export async function startPodsAndWorker(backend: TestBackend) {
  const env = backend.env;
  const migrated = cli(['migrate'], { cwd: backend.dir, env });
  if (migrated.status !== 0) throw new Error(`migrate failed: ${migrated.stderr}`);
  const local = JSON.parse(cli(['apps:create', 'local', '--json'], { cwd: backend.dir, env }).stdout);
  const ports = [await freePort(), await freePort()];
  const pods = ports.map((port) => startNode(SERVER, { cwd: backend.dir, env: { ...env, PORT: String(port) } }));
  const worker = startNode(WORKER, { cwd: backend.dir, env });
  /** A form POST to pod `pod % 2`: its status and JSON body. */
  const call = (pod: number, p: string, body: Record<string, string>) => fetch(`http://127.0.0.1:${ports[pod % 2]}${p}`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(body),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));
  const ready = (pod: number) => fetch(`http://127.0.0.1:${ports[pod]}/readyz`)
    .then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, any> }));
  const shared = { client_id: local.clients.login.client_id as string, locale: 'en-US' };
  const register = (pod: number, email: string) => call(pod, '/oauth/register_native_traditional', {
    ...shared, emailAddress: email, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'Ada', lastName: 'Lovelace', displayName: 'Ada',
  });
  return {
    pods, worker, call, ready, shared, register,
    started: () => Promise.all([...pods.map((p) => p.waitFor(/api listening/)), worker.waitFor(/worker ready/)]),
    /** Both pods answer /readyz with 200. */
    bothReady: async () => (await ready(0)).status === 200 && (await ready(1)).status === 200,
    /** For a delivery that timed out: the error again, with the end of the worker's log (the relay's routine lines left out). */
    withWorkerLog: (e: Error): never => {
      const lines = worker.output().split('\n').filter((l) => !/outbox relay enqueued/.test(l));
      throw new Error(`${e.message}; the worker printed:\n${lines.join('\n').slice(-6000)}`);
    },
    stop: () => Promise.all([...pods.map((p) => p.stop()), worker.stop()]),
  };
}

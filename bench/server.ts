import cluster from 'node:cluster';
import express from 'express';
import { buildApp, drained } from '../src/app';
import { loadConfigOrExit } from '../src/config';
import { createLogger } from '../src/logger';
import { createRuntime } from '../src/runtime';

/**
 * The api exactly as src/server.ts builds it, plus GET /bench/baseline: a static {"stat":"ok"}
 * behind the same middleware, the yardstick every scenario is measured against in the same run.
 * BENCH_API_PROCESSES=N runs N api processes behind one port (node's cluster: the primary accepts
 * connections and hands them round-robin to the workers), as N pods behind a load balancer.
 */
async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const runtime = createRuntime(config, createLogger(config.logLevel));
  const stored = runtime.services.passwords.hash('correct horse battery');
  const app = buildApp({
    services: runtime.services,
    defaultApp: config.defaultApp,
    extend: (a) => {
      a.get('/bench/baseline', (_req, res) => void res.json({ stat: 'ok' }));
      // HTTP + form body + one argon2 verify and nothing else: the floor under a sign-in
      a.post('/bench/verify', express.urlencoded({ extended: false }), async (req, res) => {
        const ok = await runtime.services.passwords.verify(await stored, String(req.body.currentPassword));
        res.json({ stat: ok ? 'ok' : 'error' });
      });
    },
  });
  const server = app.listen(config.port, '127.0.0.1', () => process.stdout.write(`bench server listening on ${config.port} pid=${process.pid}\n`));
  process.on('SIGTERM', () => {
    server.close(() => void drained(app).then(() => runtime.close()).then(() => process.exit(0)));
    server.closeIdleConnections();
  });
}

const processes = Number(process.env.BENCH_API_PROCESSES ?? 1);
if (processes > 1 && cluster.isPrimary) {
  const pids: number[] = [];
  for (let i = 0; i < processes; i++) {
    const worker = cluster.fork();
    worker.on('listening', () => {
      pids.push(worker.process.pid!);
      if (pids.length === processes) process.stdout.write(`bench server listening pid=${pids.join(',')}\n`);
    });
  }
  process.on('SIGTERM', () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    cluster.on('exit', () => Object.keys(cluster.workers ?? {}).length === 0 && process.exit(0));
  });
} else {
  void main();
}

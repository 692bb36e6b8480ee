import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { Queue } from 'bullmq';
import mjml2html from 'mjml';
import { SMTPServer } from 'smtp-server';
import { loadConfigOrExit } from '../src/config';
import { mail } from '../src/usecases/subscribers/mail';
import { event, recordSubject } from '../src/domain/events';
import { SecretBox } from '../src/domain/secrets';
import { createLogger } from '../src/logger';
import { migrate } from '../src/db/migrate';
import { openDatabase } from '../src/db';
import { loadMailTemplates } from '../src/jobs/mail-templates';
import { root } from './harness';

/*
 * Emails per second one worker process renders and hands to a local SMTP sink over its pooled
 * connection, beside the cost of compiling MJML and of filling a precompiled template, measured
 * in the same run. Needs DATABASE_URL, REDIS_URL and SECRET_KEY:
 *   npm run build && node dist/bench/mail.js          (BENCH_EMAILS, default 3000)
 */
const count = Number(process.env.BENCH_EMAILS ?? 3000);

function perCall(fn: () => unknown, n: number): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn();
  return Number(process.hrtime.bigint() - started) / 1e6 / n;
}

async function main(): Promise<void> {
  const config = loadConfigOrExit();
  if (!config.redisUrl || config.database.dialect !== 'mysql') throw new Error('the mail benchmark needs DATABASE_URL (MySQL/MariaDB) and REDIS_URL');
  const logger = createLogger('warn');

  // the yardsticks: compiling MJML (what the worker does once per template and locale at start) and filling a compiled template
  const source = fs.readFileSync(path.join(root, 'templates/welcome/email.mjml'), 'utf8');
  const compileRuns = 50;
  const startedCompile = process.hrtime.bigint();
  for (let i = 0; i < compileRuns; i++) await mjml2html(source, { validationLevel: 'skip' });
  const compileMs = Number(process.hrtime.bigint() - startedCompile) / 1e6 / compileRuns;
  const templates = await loadMailTemplates(path.join(root, 'templates'), logger);
  const values = { appName: 'bench', name: 'Ada <Lovelace>', email: 'ada@example.com', link: 'https://bench.example/verify?verification_code=abc', expiresIn: '7 days' };
  const fillMs = perCall(() => templates.render('welcome', 'fr-FR', values), 5000);

  // a local SMTP sink
  let received = 0;
  let lastAt = 0;
  const sink = new SMTPServer({
    authOptional: true, disabledCommands: ['STARTTLS', 'AUTH'], logger: false,
    onData(stream, _s, cb) {
      stream.on('data', () => undefined);
      stream.on('end', () => {
        received++;
        lastAt = Date.now();
        cb();
      });
    },
  });
  await new Promise<void>((r) => sink.listen(2526, '127.0.0.1', r));

  const db = openDatabase(config.database);
  await migrate(db);
  const prefix = `benchmail${Date.now().toString(36)}`;
  const queue = new Queue('mail', { connection: { url: config.redisUrl }, prefix });
  const appName = `benchmail${Date.now().toString(36)}`;
  const app = await db.transaction((tx) => db.applications.create(appName, new Date(), tx));
  const box = new SecretBox(config.secretKey);
  // the rows the mail subscriber makes of the events that carry these emails
  const subscriber = mail(box);
  const jobs = Array.from({ length: count }, (_, i) => subscriber.jobs!(event('account.verification_requested', app.id, new Date(), { actor: { kind: 'system' }, origin: {} }, recordSubject(i + 1), {}, { mail: {
    app, template: 'welcome', locale: ['en-US', 'fr-FR', 'de-DE', 'es-ES'][i % 4], to: `user${i}@example.com`, name: `User ${i}`,
    link: `https://bench.example/verify?verification_code=${i}`, expiresIn: 604_800,
  } }))[0]);
  for (let i = 0; i < jobs.length; i += 500) await db.transaction((tx) => db.outbox.insert(jobs.slice(i, i + 500), new Date(), tx));

  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean); // e.g. --cpu-prof
  const worker = spawn(process.execPath, [...nodeArgs, path.join(root, 'dist/workers/main.js')], {
    env: { ...process.env, REDIS_PREFIX: prefix, SMTP_URL: 'smtp://127.0.0.1:2526', LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve) => worker.stdout.on('data', (d) => String(d).includes('worker ready') && resolve()));

  const started = Date.now();
  for (let i = 0; i < jobs.length; i += 1000) {
    await queue.addBulk(jobs.slice(i, i + 1000).map((j) => ({ name: 'send', data: { outboxId: j.id }, opts: { jobId: j.id } })));
  }
  const deadline = Date.now() + 120_000;
  while (received < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const seconds = (lastAt - started) / 1000;
  worker.kill('SIGTERM');
  await new Promise((r) => worker.on('exit', r));

  process.stdout.write(`\n${count} emails (welcome, four locales), one worker process, node ${process.version}\n\n`);
  process.stdout.write('| measure | value |\n|---|---|\n');
  process.stdout.write(`| MJML compile of the welcome template | ${compileMs.toFixed(2)} ms |\n`);
  process.stdout.write(`| fill of the precompiled template | ${(fillMs * 1000).toFixed(1)} µs |\n`);
  process.stdout.write(`| received by the SMTP sink | ${received} of ${count} |\n`);
  process.stdout.write(`| worker throughput (render + SMTP + outbox update) | ${(received / seconds).toFixed(0)} emails/s |\n`);
  process.stdout.write(`| compiling per message instead would cap it at | ${(1000 / compileMs).toFixed(0)} emails/s |\n`);
  await queue.close();
  await db.close();
  await new Promise<void>((r) => sink.close(() => r()));
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});

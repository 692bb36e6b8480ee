import { loadCommonPasswords } from './domain/common-passwords';
import { buildApp, drained } from './app';
import { loadConfigOrExit, NO_MAIL_TRANSPORT } from './config';
import { ApplicationExistsError } from './domain/applications';
import { findFlowDirectories, loadFlowDirectory } from './domain/flow-definition';
import { createApplication } from './usecases/applications/create-application';
import { signingKeys } from './usecases/keys/signing-keys';
import { isOpenIdProvider } from './domain/settings';
import { banner } from './banner';
import { answerHelp } from './entry-help';
import { holdDataDir } from './data-dir-lock';
import { createHttpServer } from './http-server';
import { createLogger, type Logger } from './logger';
import { serveMetrics } from './metrics';
import { createRuntime, prepareSchema, projectRoot, type Runtime } from './runtime';
import path from 'node:path';

/** How long a stop keeps accepting connections (some wait in the backlog), and then gives a silent one to deliver its request. */
const STOP_GRACE_MS = 1_000;
/** What GET /readyz says from the stop signal on. */
const STOPPING = 'is stopping: it finishes the requests in flight; send new ones elsewhere';

/**
 * The embedded first start creates the default application, as `gatehouse apps:create` would, and
 * its OpenID signing keys (docs/openid-connect.md#keys): its discovery document and JWKS answer
 * from the first request.
 */
async function seedDefaultApplication(runtime: Runtime, logger: Logger): Promise<void> {
  const { config } = runtime;
  if (config.database.dialect !== 'sqlite') return;
  try {
    const flows = () => findFlowDirectories(path.join(projectRoot(), 'flows')).map(loadFlowDirectory);
    const created = await createApplication(runtime.services, { name: config.defaultApp, flows, acting: { actor: { kind: 'system' }, origin: {} } });
    process.stdout.write(banner(created, `http://localhost:${config.port}`, process.stdout.isTTY === true));
  } catch (e) {
    if (!(e instanceof ApplicationExistsError)) throw e;
    logger.info({ app: config.defaultApp }, `application exists; list its clients with: npx gatehouse clients:list --app ${config.defaultApp}`);
  }
  const app = await runtime.db.applications.findByName(config.defaultApp);
  if (app && isOpenIdProvider(app)) await signingKeys(runtime.services, app.id);
}

/** The console's server and its queue dashboard's connection, listening; a port it cannot take stops the process. */
async function serveConsole(runtime: Runtime, settings: NonNullable<Runtime['config']['console']>, logger: Logger): Promise<{ close(): Promise<void> }> {
  const { config } = runtime;
  // loaded only where a console runs
  const { buildConsole } = await import('./console/console');
  const queues = config.redisUrl ? (await import('./queue/board')).queueBoard(config.redisUrl, config.redisPrefix, logger.child({ part: 'console' }), '/queues') : undefined;
  const app = buildConsole({ services: runtime.services, operatorsApp: settings.app, publicUrl: settings.publicUrl, trustProxy: config.trustProxy, queues, logger: logger.child({ part: 'console' }) });
  const server = createHttpServer(app, config.http, logger);
  await new Promise<void>((resolve) => {
    server.once('error', (err) => {
      logger.fatal({ err, port: settings.port }, 'cannot listen for the console');
      process.exit(1);
    });
    server.listen(settings.port, config.host, resolve);
  });
  logger.info({ port: settings.port, url: settings.publicUrl, operators: settings.app }, 'console listening');
  return {
    async close() {
      await server.closeGracefully(STOP_GRACE_MS);
      await queues?.close();
    },
  };
}

async function main(): Promise<void> {
  answerHelp('gatehouse api (npm start)', 'the API and the hosted pages on PORT (3000)');
  const config = loadConfigOrExit();
  const logger = createLogger(config.logLevel, undefined, config.logFormat);
  if (!config.redisUrl && !config.mailTransport) {
    // without Redis this process sends the emails itself
    process.stderr.write(`gatehouse: ${NO_MAIL_TRANSPORT}\n`);
    process.exit(78);
  }
  // one embedded instance per data folder: its database, its in-process jobs and its emails
  const held = config.embedded ? holdDataDir(config.varDir, config.publicBaseUrl) : undefined;
  if (held) {
    process.stderr.write(`gatehouse: ${held}\n`);
    process.exit(1);
  }
  const runtime = createRuntime(config, logger);
  try {
    const applied = await prepareSchema(config, runtime.db);
    if (applied.length > 0) logger.info({ migrations: applied }, 'migrations applied');
    await seedDefaultApplication(runtime, logger);
    // with Redis, worker processes own the recurring jobs; in-process, this process does
    if (!config.redisUrl) await runtime.scheduleMaintenance();
  } catch (e) {
    logger.fatal({ err: e }, (e as Error).message);
    await runtime.close().catch(() => undefined);
    process.exit(1);
  }

  let stopping = false;
  // a stopping process says so at once, so that a load balancer sends new requests elsewhere while it finishes
  const readiness = async () => (stopping ? { process: STOPPING } : runtime.readiness());
  const app = buildApp({ services: runtime.services, defaultApp: config.defaultApp, trustProxy: config.trustProxy, readiness, metrics: runtime.metrics });
  // Prometheus metrics on a port of their own: API clients never reach them
  const metricsServer = config.metricsPort === undefined ? undefined : await serveMetrics(runtime.metrics, config.metricsPort, config.host, logger)
    .then((s) => (logger.info({ port: config.metricsPort }, 'metrics listening'), s))
    .catch((err: Error) => {
      logger.fatal({ err: err.message, port: config.metricsPort }, 'cannot listen for metrics');
      process.exit(1);
    });
  // the operators' console on a port of its own (docs/console.md): operators reach it, API clients never do
  const consoleServer = config.console === undefined ? undefined : await serveConsole(runtime, config.console, logger);
  // the list of common passwords, before the first request that sets a password waits for it
  loadCommonPasswords();
  const server = createHttpServer(app, config.http, logger);
  server.listen(config.port, config.host, () =>
    logger.info({ host: config.host, port: config.port, database: config.database.dialect, queue: config.redisUrl ? 'bullmq' : 'in-process' }, 'gatehouse api listening'));
  server.on('error', (err) => {
    logger.fatal({ err }, 'cannot listen');
    process.exit(1);
  });

  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: finishing requests in flight');
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    metricsServer?.close();
    void Promise.all([server.closeGracefully(STOP_GRACE_MS), consoleServer?.close()]).then(async () => {
      // clients that hung up leave their requests running: let them finish before the database closes
      await drained(app);
      await runtime.close();
      logger.info('stopped');
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

void main();

import { peerBudgetKey } from './domain/addresses';
import express, { type NextFunction, type Request, type Response } from 'express';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { loadConfigOrExit, type Config } from './config';
import { safeEqual } from './domain/secrets';
import { answerHelp } from './entry-help';
import { createHttpServer } from './http-server';
import { createLogger, type Logger } from './logger';
import { queueBoard } from './queue/board';

/** Failed sign-ins allowed per client address per minute, before 429. */
const FAILURES_PER_MINUTE = 10;

/**
 * The queue dashboard (`npm run dashboard`): bull-board over the mail, versions, maintenance and webhooks
 * queues, on a port of its own, behind the operator credential from the environment
 * (DASHBOARD_USER, DASHBOARD_PASSWORD; HTTP Basic). Operators see waiting, active, failed and
 * completed jobs and retry or remove failed ones. A job holds its outbox id and what it is for
 * (template, locale, application): no email address, link, code or token is ever shown. The outbox backlog is in the metrics
 * (`gatehouse_outbox_pending`, `gatehouse_outbox_oldest_pending_seconds`).
 */
export function buildDashboard(config: Config, logger: Logger): { app: express.Express; close(): Promise<void> } {
  const { user, password } = config.dashboard;
  if (!config.redisUrl || !password) throw new Error('the dashboard needs REDIS_URL and DASHBOARD_PASSWORD');
  const board = queueBoard(config.redisUrl, config.redisPrefix, logger, '/');

  const failures = new RateLimiterMemory({ points: FAILURES_PER_MINUTE, duration: 60 });
  const expected = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  const authenticate = async (req: Request, res: Response, next: NextFunction) => {
    const address = peerBudgetKey(req.ip);
    const given = req.headers.authorization ?? '';
    if (given) {
      // an attempt is taken before the comparison, and given back when it was right: past the
      // limit even the right password waits, so guessing gains nothing
      try {
        await failures.consume(address);
      } catch (e) {
        if (e instanceof RateLimiterRes) {
          res.setHeader('Retry-After', String(Math.ceil(e.msBeforeNext / 1000)));
          return void res.status(429).json({ stat: 'error', error_description: 'too many failed sign-ins from this address; wait a minute' });
        }
        return next(e);
      }
      if (safeEqual(given, expected)) {
        await failures.reward(address, 1);
        return next();
      }
      logger.warn({ address }, 'dashboard sign-in failed');
    }
    res.setHeader('WWW-Authenticate', 'Basic realm="Gatehouse queues", charset="UTF-8"');
    res.status(401).json({ stat: 'error', error_description: 'the dashboard needs the operator credential (DASHBOARD_USER and DASHBOARD_PASSWORD)' });
  };

  const app = express();
  app.disable('x-powered-by');
  if (config.trustProxy !== undefined) app.set('trust proxy', config.trustProxy === 'true' ? true : config.trustProxy);
  app.use((_req, res, next) => {
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cache-Control', 'no-store');
    next();
  });
  // liveness and readiness for the container's health checks, without the credential
  app.get('/healthz', (_req, res) => void res.json({ stat: 'ok' }));
  app.get('/readyz', async (_req, res) => {
    const ok = await board.ready();
    res.status(ok ? 200 : 503).json(ok ? { stat: 'ok', checks: { redis: true } } : {
      stat: 'error', checks: { redis: 'is unreachable' }, error_description: 'not ready: Redis is unreachable',
    });
  });
  app.use(authenticate, board.router);
  return { app, close: () => board.close() };
}

function main(): void {
  answerHelp('gatehouse dashboard (npm run dashboard)', 'the queue dashboard on DASHBOARD_PORT (3100), behind DASHBOARD_USER and DASHBOARD_PASSWORD');
  const config = loadConfigOrExit();
  const logger = createLogger(config.logLevel, undefined, config.logFormat).child({ process: 'dashboard' });
  // said on stderr whatever LOG_LEVEL is: the process cannot start
  if (!config.redisUrl) {
    process.stderr.write('gatehouse dashboard: set REDIS_URL (the dashboard shows the BullMQ queues; without Redis, jobs run inside the api and there are no queues to show)\n');
    process.exit(78);
  }
  if (!config.dashboard.password) {
    process.stderr.write('gatehouse dashboard: set DASHBOARD_PASSWORD (at least 12 characters; DASHBOARD_USER defaults to "operator"): the dashboard never runs without a credential\n');
    process.exit(78);
  }
  const { app, close } = buildDashboard(config, logger);
  // the api's HTTP limits: slow clients are cut off, not held for Node's 300 s
  const server = createHttpServer(app, config.http, logger);
  server.listen(config.dashboard.port, config.host, () =>
    logger.info({ host: config.host, port: config.dashboard.port }, 'gatehouse dashboard listening'));
  server.on('error', (err) => {
    logger.fatal({ err }, 'cannot listen');
    process.exit(1);
  });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(1), 15_000).unref();
    void server.closeGracefully(1_000).then(close).then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (require.main === module) main();

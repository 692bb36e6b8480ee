import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { buildApp } from '../../src/app';
import { type Config, loadConfig } from '../../src/config';
import { migrate } from '../../src/db/migrate';
import type { Clock } from '../../src/domain/clients';
import { createLogger, type Logger } from '../../src/logger';
import { createRuntime, projectRoot, type Runtime } from '../../src/runtime';
import type { CreatedApplication } from '../../src/domain/applications';
import { findFlowDirectories, loadFlowDirectory } from '../../src/domain/flow-definition';
import { createApplication } from '../../src/usecases/applications/create-application';
import { importFlows } from '../../src/usecases/applications/import-flows';

/** True when the suite runs against MariaDB/MySQL (DATABASE_URL set), else SQLite. */
export const onMysql = /^(mysql|mariadb):/.test(process.env.DATABASE_URL ?? '');
export const redisUrl = process.env.REDIS_URL || undefined;
/** The flows a new application gets (flows/ of the project). */
export const SHIPPED_FLOWS = path.join(projectRoot(), 'flows');

/**
 * The flows the tests' applications are made with: the standard flow as it was first released,
 * which the applications made before keep and the original clients were written for: the shipped
 * flow with the forms of then (test/fixtures/first-release-forms.json: a registration asking for
 * names, a display name and a confirmation of the password), written into a folder of the test
 * process's own when a test file loads. New applications get the shipped flows/ (a short registration), which its own
 * tests check.
 */
export const FLOWS = (() => {
  const root = path.join(os.tmpdir(), `gatehouse-first-release-flows-${process.pid}`);
  const dir = path.join(root, 'standard');
  const { '//': _about, ...forms } = JSON.parse(fs.readFileSync(path.join(projectRoot(), 'test/fixtures/first-release-forms.json'), 'utf8')) as Record<string, unknown>;
  const flow = JSON.parse(fs.readFileSync(path.join(SHIPPED_FLOWS, 'standard/flow.json'), 'utf8')) as { forms: Record<string, unknown> };
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'flow.json'), JSON.stringify({ ...flow, forms: { ...flow.forms, ...forms } }, null, 2));
  fs.copyFileSync(path.join(SHIPPED_FLOWS, 'standard/translations.json'), path.join(dir, 'translations.json'));
  return root;
})();

/** DATABASE_URL without its database: the server the tests make their databases on. */
export function serverUrl(): string {
  const server = new URL(process.env.DATABASE_URL!);
  server.pathname = '/';
  return server.toString();
}

/**
 * The names of this run's test databases begin with this (`gh_test_<run>_`): the run's global
 * teardown drops every one of them, even those of a test file that failed before its own cleanup.
 */
export const testDatabasePrefix = () => `gh_test_${process.env.GATEHOUSE_TEST_RUN ?? 'norun'}_`;

export interface TestBackend {
  /** Environment for this backend: pass it to child processes. */
  env: NodeJS.ProcessEnv;
  config: Config;
  dir: string;
  cleanup(): Promise<void>;
}

/**
 * The server of a replica of DATABASE_URL's server (.ci/services.sh starts one, a second behind):
 * it copies only the databases a backend made with `replicated` names.
 */
export const replicaServerUrl = process.env.REPLICA_SERVER_URL || undefined;
/** The process id of that replica's server (.ci/services.sh exports it), for the tests that freeze it with SIGSTOP. */
export const replicaServerPid = /^\d+$/.test(process.env.REPLICA_SERVER_PID ?? '') ? Number(process.env.REPLICA_SERVER_PID) : undefined;

/**
 * A fresh, empty database for one test file: a temporary SQLite file, or a new database on the
 * MariaDB server of DATABASE_URL (dropped afterwards). `redis` adds REDIS_URL (when the run has
 * one) with a prefix of its own, so test files never see one another's jobs. `replicated` names the
 * database so that the replica of REPLICA_SERVER_URL copies it, and sets DATABASE_READ_URL to its copy.
 */
export async function createTestBackend(options: { redis?: boolean; replicated?: boolean; env?: NodeJS.ProcessEnv } = {}): Promise<TestBackend> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-test-'));
  const suffix = randomBytes(4).toString('hex');
  let databaseUrl = `sqlite:${path.join(dir, 'gatehouse.sqlite')}`;
  let readUrl: string | undefined;
  let dropDatabase = async () => {};
  if (onMysql) {
    // the server of DATABASE_URL: the database it names need not exist
    const name = `${testDatabasePrefix()}${options.replicated ? 'replica_' : ''}${suffix}`;
    const admin = await mysql.createConnection(serverUrl());
    await admin.query(`CREATE DATABASE ${name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
    await admin.end();
    const url = new URL(process.env.DATABASE_URL!);
    url.pathname = `/${name}`;
    databaseUrl = url.toString();
    if (options.replicated) readUrl = new URL(name, replicaServerUrl).toString();
    dropDatabase = async () => {
      const conn = await mysql.createConnection(serverUrl());
      await conn.query(`DROP DATABASE IF EXISTS ${name}`);
      await conn.end();
    };
  }
  const env: NodeJS.ProcessEnv = {
    DATABASE_URL: databaseUrl,
    SECRET_KEY: randomBytes(32).toString('hex'),
    LOG_LEVEL: 'silent',
    MAIL_TRANSPORT: 'file',
    // suites register many accounts from one address; the limit has tests of its own
    REGISTER_LIMIT_ADDRESS: '100000/3600',
    // the run's choice of stored procedures on MariaDB (the CI runs the suite both ways)
    ...(process.env.DATABASE_PROCEDURES && { DATABASE_PROCEDURES: process.env.DATABASE_PROCEDURES }),
    ...(options.redis && redisUrl ? { REDIS_URL: redisUrl, REDIS_PREFIX: `ghtest-${suffix}` } : {}),
    ...(readUrl && { DATABASE_READ_URL: readUrl }),
    ...options.env,
  };
  return {
    env,
    config: loadConfig(env, dir),
    dir,
    async cleanup() {
      await dropDatabase();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Who the tests act as when they set up applications and flows: an operator, as the CLI does. */
const TEST_OPERATOR = { actor: { kind: 'operator' as const, name: 'test' }, origin: {} };

/** An application created as `gatehouse apps:create` creates it, with the flows of `flowsRoot` (the project's by default). */
export function createApp(runtime: Runtime, name: string, flowsRoot = FLOWS): Promise<CreatedApplication> {
  return createApplication(runtime.services, { name, flows: findFlowDirectories(flowsRoot).map(loadFlowDirectory), acting: TEST_OPERATOR });
}

/** Flows imported as `gatehouse flows:import` imports them. */
export function importFlowsInto(runtime: Runtime, applicationName: string, dir: string) {
  return importFlows(runtime.services, { applicationName, flows: findFlowDirectories(dir).map(loadFlowDirectory), acting: TEST_OPERATOR });
}

export interface TestApp {
  backend: TestBackend;
  runtime: Runtime;
  app: ReturnType<typeof buildApp>;
  /** The application "local" created as `gatehouse apps:create local` creates it. */
  local: CreatedApplication;
  close(): Promise<void>;
}

/**
 * The Express app on a fresh migrated database with the application "local" created; `clock`
 * and `logger` replace the system clock and the silent logger.
 */
export async function startTestApp(options: { redis?: boolean; replicated?: boolean; env?: NodeJS.ProcessEnv; clock?: Clock; logger?: Logger } = {}): Promise<TestApp> {
  const backend = await createTestBackend(options);
  const runtime = createRuntime(backend.config, options.logger ?? createLogger('silent'), options.clock);
  await migrate(runtime.db);
  const local = await createApp(runtime, 'local');
  const app = buildApp({ services: runtime.services, defaultApp: 'local', trustProxy: backend.config.trustProxy });
  return {
    backend,
    runtime,
    app,
    local,
    async close() {
      await runtime.close();
      await backend.cleanup();
    },
  };
}

/** A clock tests move by hand; caches and token lifetimes read it instead of the system clock. */
export function manualClock(start = new Date()): Clock & { advance(ms: number): void } {
  let t = start.getTime();
  return { now: () => new Date(t), advance: (ms) => void (t += ms) };
}

/** Says why a suite that needs a service is skipped, instead of skipping it silently. */
export function skipUnless(condition: boolean, why: string): jest.Describe {
  if (!condition) process.stdout.write(`skipped: ${why}\n`);
  return condition ? describe : describe.skip;
}

export const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

/**
 * A login client of `local` with no default flow, as an earlier release's /clients/add made them (one
 * made now gets the application's flow): what the flow parameters and the pages say without one.
 */
export async function loginClientWithoutFlow(t: TestApp): Promise<{ clientId: string; secret: string }> {
  const { insertClient } = await import('../../src/usecases/clients/add-client');
  const app = (await t.runtime.db.applications.findByName('local'))!;
  const { client, secret } = await t.runtime.services.work.run((uow) => insertClient(t.runtime.services, uow, { actor: { kind: 'system' }, origin: {} }, app.id, { description: 'no flow', features: ['login_client'] }));
  return { clientId: client.clientId, secret };
}

import { randomUUID } from 'node:crypto';
import { loadConfig } from '../../src/config';
import { openDatabase, type Database } from '../../src/db';
import { migrate } from '../../src/db/migrate';
import { createTestBackend, onMysql, skipUnless, type TestBackend } from './backend';

// The engines every store's contract runs on: SQLite, (when the run has a mysql: DATABASE_URL)
// MariaDB with the stored procedures and MariaDB with plain statements (DATABASE_PROCEDURES=off),
// and (when GALERA_URLS names the nodes of a Galera cluster) every node a writer at once: a race is
// spread over the nodes, as pods on different nodes would run it.

const galeraUrls = process.env.GALERA_URLS?.split(',').filter(Boolean) ?? [];
export const ENGINES = [
  { name: 'SQLite', mysql: false, procedures: 'off', nodes: [] as string[] },
  { name: 'MariaDB with stored procedures', mysql: true, procedures: 'on', nodes: [] },
  { name: 'MariaDB without stored procedures', mysql: true, procedures: 'off', nodes: [] },
  { name: 'Galera, a writer on every node, with stored procedures', mysql: true, procedures: 'on', nodes: galeraUrls },
  { name: 'Galera, a writer on every node, without stored procedures', mysql: true, procedures: 'off', nodes: galeraUrls },
] as const;

/** One engine's database for a contract suite: `db`, the same database on every node (`on(i)`), and an application of its own. */
export interface ContractStorage {
  db: Database;
  /** The database through node i mod n (one node on a single server). */
  on(i: number): Database;
  appId: number;
}

/**
 * Runs `body` once per engine, each on a fresh migrated database with one application: how every
 * store's contract file is written. `storage()` is ready inside tests and hooks.
 */
export function forEveryEngine(store: string, body: (storage: () => ContractStorage) => void): void {
  for (const engine of ENGINES) {
    const galera = engine.name.startsWith('Galera');
    const suite = galera ? skipUnless(onMysql && galeraUrls.length > 1, `the ${store} contract on ${engine.name} needs GALERA_URLS`)
      : engine.mysql ? skipUnless(onMysql, `the ${store} contract on ${engine.name} needs a mysql: DATABASE_URL`) : describe;
    suite(`${store} contract: ${engine.name}`, () => {
      let backend: TestBackend;
      let ready: ContractStorage | undefined;
      let nodes: Database[] = [];
      beforeAll(async () => {
        backend = await createTestBackend({ env: { DATABASE_PROCEDURES: engine.procedures } });
        const db = openDatabase(loadConfig(backend.env, backend.dir).database);
        await migrate(db);
        nodes = engine.nodes.length === 0 ? [db] : engine.nodes.map((node) => {
          const url = new URL(node);
          url.pathname = new URL(backend.env.DATABASE_URL!).pathname;
          return openDatabase(loadConfig({ ...backend.env, DATABASE_URL: url.toString() }, backend.dir).database);
        });
        const appId = (await db.transaction((tx) => db.applications.create('contract', new Date(), tx))).id;
        ready = { db, appId, on: (i) => nodes[i % nodes.length] };
      });
      afterAll(async () => {
        for (const node of nodes) if (node !== ready?.db) await node.close();
        await ready?.db.close();
        await backend?.cleanup();
      });
      body(() => {
        if (!ready) throw new Error('the contract storage is not ready yet');
        return ready;
      });
    });
  }
}

/**
 * The outbox rows of a record as stored (status and payload text), oldest first: what no store
 * method answers, read here once for the contract files, never by a test of the API.
 */
export async function outboxRowsOf(db: Database, entityId: number): Promise<{ status: string; payload: string }[]> {
  return (await db.sequelize.query(
    'SELECT status, payload FROM outbox WHERE entity_id = ? ORDER BY created_at', { replacements: [entityId], type: 'SELECT' },
  )) as { status: string; payload: string }[];
}

/** A new user record of the suite's application (a random email, nothing else), committed. */
export async function newAccount(storage: ContractStorage) {
  const { db, appId } = storage;
  return db.transaction((tx) => db.records.insert({
    applicationId: appId, typeName: 'user', uuid: randomUUID(), email: `${randomUUID()}@example.com`, username: null,
    passwordHash: null, emailVerified: null, attributes: {},
  }, new Date(), tx));
}

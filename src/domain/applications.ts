import type { BaseUrls } from './base-urls';
import type { Storage, Tx } from './storage';
import type { Application } from './storage/applications';
import { type Clock, type ClientService } from './clients';
import { findFlowDirectories, loadFlowDirectory } from './flow-definition';

export type { Application };

export const APP_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export class ApplicationExistsError extends Error {}

export interface CreatedApplication {
  app: string;
  flow: { name: string; version: number };
  flows: { name: string; version: number }[];
  clients: { owner: { client_id: string; client_secret: string }; login: { client_id: string; client_secret: string } };
}

/**
 * Application management for the CLI and the embedded first start: an application is created
 * with every flow of `flowsRoot` imported, an owner client, and a login client whose settings
 * point at the default flow and at the pages of the application's own base URL (base-urls.ts). All of it commits together or not at all.
 */
export function createApplicationService(deps: { db: Storage; clients: ClientService; clock: Clock; baseUrls: BaseUrls }) {
  const { db, clients, clock, baseUrls } = deps;

  async function importFlowDirs(applicationId: number, root: string, tx?: Tx) {
    const imported = [];
    for (const dir of findFlowDirectories(root)) {
      const { definition, checksum } = loadFlowDirectory(dir);
      const stored = await db.flows.insertNextVersion(applicationId, definition.name, definition, checksum, clock.now(), tx);
      imported.push({ name: stored.name, version: stored.version, ...(stored.unchanged && { unchanged: true as const }) });
    }
    return imported;
  }

  return {
    async create(name: string, flowsRoot: string): Promise<CreatedApplication> {
      if (!APP_NAME.test(name)) {
        throw new Error(`"${name}" is not a valid application name: use a DNS label (lowercase letters, digits, inner hyphens; at most 63 characters)`);
      }
      if (await db.applications.findByName(name)) throw new ApplicationExistsError(`application "${name}" already exists`);
      return db.transaction(async (tx) => {
        const app = await db.applications.create(name, clock.now(), tx);
        const flows = await importFlowDirs(app.id, flowsRoot, tx);
        const standard = flows.find((f) => f.name === 'standard') ?? flows[0];
        const owner = await clients.create(app.id, { description: `${name} owner`, features: ['owner'] }, tx);
        const login = await clients.create(app.id, {
          description: `${name} login client`,
          features: ['login_client'],
          settings: {
            default_flow_name: standard.name,
            default_flow_version: String(standard.version),
            password_recover_url: `${baseUrls.of(name)}/reset-password`,
            verify_email_url: `${baseUrls.of(name)}/verify-email`,
          },
        }, tx);
        return {
          app: name,
          flow: standard,
          flows,
          clients: {
            owner: { client_id: owner.client.clientId, client_secret: owner.secret },
            login: { client_id: login.client.clientId, client_secret: login.secret },
          },
        };
      });
    },

    /**
     * Imports the flows under `root` into the application as new immutable versions; a flow
     * identical to its newest version keeps that version (`unchanged`).
     */
    async importFlows(appName: string, root: string): Promise<{ name: string; version: number; unchanged?: true }[]> {
      const app = await db.applications.findByName(appName);
      if (!app) throw new Error(`there is no application "${appName}"; create it with: gatehouse apps:create ${appName}`);
      return db.transaction((tx) => importFlowDirs(app.id, root, tx));
    },
  };
}
export type ApplicationService = ReturnType<typeof createApplicationService>;

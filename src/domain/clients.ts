import type { ClientStore } from './storage/clients';
import type { Tx } from './storage';
import type { StoredClient } from './storage/clients';
import { errors } from '../errors';
import type { ClientChanges } from './ports';
import { randomToken, safeEqual, SecretBox } from './secrets';

/** The client kinds of docs/api.md#client-kinds (the original calls them features). */
export const FEATURES = ['owner', 'access_issuer', 'direct_access', 'direct_read_access', 'login_client'] as const;
export type Feature = (typeof FEATURES)[number];

export interface Client {
  id: number;
  applicationId: number;
  clientId: string;
  description: string;
  features: Feature[];
  settings: Record<string, string>;
}

export interface Clock { now(): Date }
export const systemClock: Clock = { now: () => new Date() };

const toClient = ({ secretSealed: _sealed, ...c }: StoredClient): Client => ({ ...c, features: c.features as Feature[] });

/** Parses the `features` JSON parameter: an array of known feature names, each once. */
export function parseFeatures(raw: unknown, argument = 'features'): Feature[] {
  if (!Array.isArray(raw) || raw.some((f) => typeof f !== 'string')) {
    throw errors.invalidArgument(argument, 'must be a JSON array of feature names, such as ["login_client"]');
  }
  const unknown = raw.filter((f) => !FEATURES.includes(f as Feature));
  if (unknown.length > 0) {
    throw errors.invalidArgument(argument, `unknown feature ${unknown.map((f) => JSON.stringify(f)).join(', ')}; known features are ${FEATURES.join(', ')}`);
  }
  return [...new Set(raw as Feature[])];
}

/**
 * Every authenticated request looks its client up and decrypts the secret. Both are cached for a
 * few seconds (found clients only, so unknown ids cannot fill memory). A change drops the entry in
 * this process at once and, through `changes`, in every other process; a process whose
 * subscription to changes is not live does not cache at all. Answers the lookup and the store
 * whose changes do that.
 */
function cachedClients(deps: { clients: ClientStore; box: SecretBox; clock: Clock; cacheMs?: number; changes?: ClientChanges }) {
  const { clients: queries, box, clock, changes } = deps;
  const cacheMs = deps.cacheMs ?? 5_000;
  const cache = new Map<string, { stored: StoredClient; secret: string; until: number }>();
  const key = (applicationId: number, clientId: string) => `${applicationId}:${clientId}`;
  const forget = (applicationId: number, clientId: string) => cache.delete(key(applicationId, clientId));
  const subscription = changes?.subscribe({ forget, forgetAll: () => cache.clear() });
  const caching = () => subscription === undefined || subscription.live();
  async function lookup(applicationId: number, clientId: string): Promise<{ stored: StoredClient; secret: string } | undefined> {
    const k = key(applicationId, clientId);
    const now = clock.now().getTime();
    const hit = cache.get(k);
    if (hit && hit.until > now && caching()) return hit;
    const stored = await queries.find(applicationId, clientId);
    if (!stored) return undefined;
    const entry = { stored, secret: box.open(stored.secretSealed, stored.clientId), until: now + cacheMs };
    if (caching()) {
      if (cache.size >= 10_000) cache.delete(cache.keys().next().value!); // the oldest entry
      cache.set(k, entry);
    }
    return entry;
  }
  /** Drops the client from every process's cache, after the change is committed. */
  const changed = async (applicationId: number, clientId: string) => {
    forget(applicationId, clientId);
    await changes?.publish(applicationId, clientId);
  };
  const clients = {
    ...queries,
    mutate: async (...args: Parameters<ClientStore['mutate']>) => {
      forget(args[0], args[1]);
      const result = await queries.mutate(...args);
      await changed(args[0], args[1]);
      return result;
    },
    remove: async (applicationId: number, clientId: string) => {
      forget(applicationId, clientId);
      const removed = await queries.remove(applicationId, clientId);
      await changed(applicationId, clientId);
      return removed;
    },
  };

  return { lookup, clients };
}

/** What an owner client changes of the application's clients: features, deletion, secret, settings. */
function clientAdministration(clients: ClientStore, box: SecretBox, clock: Clock) {
  return {
    async setFeatures(applicationId: number, caller: Client, forClientId: string, features: Feature[]): Promise<void> {
      if (forClientId === caller.clientId && caller.features.includes('owner') && !features.includes('owner')) {
        throw errors.invalidArgument('features', 'the owner client cannot remove its own owner feature; use another owner client to do it');
      }
      const updated = await clients.mutate(applicationId, forClientId, () => ({ features }), clock.now());
      if (!updated) throw errors.invalidArgument('for_client_id', `no client ${forClientId} in this application`);
    },

    async remove(applicationId: number, caller: Client, clientId: string): Promise<void> {
      if (clientId === caller.clientId) {
        throw errors.invalidArgument('client_id_for_deletion', 'a client cannot delete itself; use another owner client');
      }
      if (!(await clients.remove(applicationId, clientId))) {
        throw errors.invalidArgument('client_id_for_deletion', `no client ${clientId} in this application`);
      }
    },

    async resetSecret(applicationId: number, forClientId: string): Promise<string> {
      const secret = randomToken(16);
      const updated = await clients.mutate(applicationId, forClientId, (c) => ({ secretSealed: box.seal(secret, c.clientId) }), clock.now());
      if (!updated) throw errors.invalidArgument('for_client_id', `no client ${forClientId} in this application`);
      return secret;
    },

    /** Applies `change` to the client's settings; returns the settings before the change. */
    async changeSettings(
      applicationId: number,
      clientId: string,
      change: (settings: Record<string, string>) => Record<string, string>,
    ): Promise<Record<string, string>> {
      let before: Record<string, string> = {};
      const updated = await clients.mutate(applicationId, clientId, (c) => {
        before = c.settings;
        return { settings: change({ ...c.settings }) };
      }, clock.now());
      if (!updated) throw errors.invalidArgument('for_client_id', `no client ${clientId} in this application`);
      return before;
    },
  };
}

/**
 * API clients of one application: creation, credentials (sealed at rest, compared in constant
 * time), features and settings. Every operation is scoped to the application it is given.
 */
export function createClientService(deps: { clients: ClientStore; box: SecretBox; clock: Clock; cacheMs?: number; changes?: ClientChanges }) {
  const { box, clock } = deps;
  // Compared against when the client_id is unknown, so a miss costs what a hit costs.
  const decoy = box.seal(randomToken(16), 'decoy');
  const decoySecret = box.open(decoy, 'decoy');

  const { lookup, clients } = cachedClients(deps);
  const reveal = (c: StoredClient) => box.open(c.secretSealed, c.clientId);

  return {
    async create(
      applicationId: number,
      input: { description: string; features: Feature[]; settings?: Record<string, string> },
      tx?: Tx,
    ): Promise<{ client: Client; secret: string }> {
      const clientId = randomToken(16);
      const secret = randomToken(16);
      const stored = await clients.insert(
        {
          applicationId,
          clientId,
          secretSealed: box.seal(secret, clientId),
          description: input.description,
          features: input.features,
          settings: input.settings ?? {},
        },
        clock.now(),
        tx,
      );
      return { client: toClient(stored), secret };
    },

    /** The client when `secret` is its secret; undefined otherwise (same work either way). */
    async authenticate(applicationId: number, clientId: string, secret: string): Promise<Client | undefined> {
      const found = await lookup(applicationId, clientId);
      const ok = safeEqual(found ? found.secret : decoySecret, secret);
      return found && ok ? toClient(found.stored) : undefined;
    },

    /** The client with its plain secret, for verifying a `Signature`; undefined when unknown. */
    async withSecret(applicationId: number, clientId: string): Promise<{ client: Client; secret: string } | undefined> {
      const found = await lookup(applicationId, clientId);
      return found ? { client: toClient(found.stored), secret: found.secret } : undefined;
    },

    async find(applicationId: number, clientId: string): Promise<Client | undefined> {
      const found = await lookup(applicationId, clientId);
      return found ? toClient(found.stored) : undefined;
    },

    /**
     * The application's clients with all of `hasFeatures`, with their secrets: always read from the
     * primary, never a replica, whose copy of a secret just reset would be the old one.
     */
    async list(applicationId: number, hasFeatures: Feature[] = []): Promise<(Client & { secret: string })[]> {
      const all = await clients.list(applicationId);
      return all
        .filter((c) => hasFeatures.every((f) => c.features.includes(f)))
        .map((c) => ({ ...toClient(c), secret: reveal(c) }));
    },

    ...clientAdministration(clients, box, clock),
  };
}
export type ClientService = ReturnType<typeof createClientService>;

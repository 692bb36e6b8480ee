import type { ClientStore } from './storage/clients';
import type { StoredClient } from './storage/clients';
import { invalidField } from './refusal';
import type { ClientChanges } from './ports';
import { randomToken, safeEqual, SecretBox } from './secrets';
import { CONTROL } from './request-values';

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
export function parseFeatures(raw: unknown, field = 'features'): Feature[] {
  if (!Array.isArray(raw) || raw.some((f) => typeof f !== 'string')) {
    throw invalidField(field, 'must be a JSON array of feature names, such as ["login_client"]');
  }
  const unknown = raw.filter((f) => !FEATURES.includes(f as Feature));
  if (unknown.length > 0) {
    throw invalidField(field, `unknown feature ${unknown.map((f) => JSON.stringify(f)).join(', ')}; known features are ${FEATURES.join(', ')}`);
  }
  return [...new Set(raw as Feature[])];
}

/**
 * Every authenticated request looks its client up and decrypts the secret. Both are cached for a
 * few seconds (found clients only, so unknown ids cannot fill memory). A committed change drops the
 * entry in this process at once and, through `changes`, in every other process (`changed`, which the
 * client cache subscriber calls); a process whose subscription to changes is not live does not
 * cache at all.
 */
function cachedClients(deps: { clients: ClientStore; box: SecretBox; clock: Clock; cacheMs?: number; changes?: ClientChanges }) {
  const { clients: queries, box, clock, changes } = deps;
  const cacheMs = deps.cacheMs ?? 5_000;
  const cache = new Map<string, { stored: StoredClient; secret: string; until: number }>();
  const key = (applicationId: number, clientId: string) => `${applicationId}:${clientId}`;
  const forget = (applicationId: number, clientId: string) => cache.delete(key(applicationId, clientId));
  // a process that does not cache (the worker, a CLI command) still publishes its changes, but holds no subscription
  const subscription = cacheMs > 0 ? changes?.subscribe({ forget, forgetAll: () => cache.clear() }) : undefined;
  const caching = () => cacheMs > 0 && (subscription === undefined || subscription.live());
  async function lookup(applicationId: number, clientId: string): Promise<{ stored: StoredClient; secret: string } | undefined> {
    // no client has an id longer than its column or holding a control character: not looked up (whatever the caller checked)
    if (clientId.length > 64 || CONTROL.test(clientId)) return undefined;
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
  return { lookup, clients: queries, changed };
}

/** No client of the application has this client_id. */
export class NoSuchClientError extends Error {
  constructor(readonly clientId: string) {
    super(`no client ${clientId.slice(0, 64)} in this application`);
  }
}

/** An owner client tried to remove its own owner feature (the application would lose its way in). */
export class OwnOwnerFeatureError extends Error {}

/** A client tried to delete itself. */
export class SelfDeletionError extends Error {}

/** A new client's row and its plain secret (shown once): a random client_id and secret, the secret sealed at rest. */
export function newClient(box: SecretBox, applicationId: number, input: { description: string; features: Feature[]; settings?: Record<string, string> }) {
  const clientId = randomToken(16);
  const secret = randomToken(16);
  const row: Omit<StoredClient, 'id'> = {
    applicationId, clientId, secretSealed: box.seal(secret, clientId), description: input.description, features: input.features, settings: input.settings ?? {},
  };
  return { row, secret };
}

/**
 * API clients of one application: creation, credentials (sealed at rest, compared in constant
 * time), features and settings. Every operation is scoped to the application it is given.
 */
export function createClientService(deps: { clients: ClientStore; box: SecretBox; clock: Clock; cacheMs?: number; changes?: ClientChanges }) {
  const { box } = deps;
  // Compared against when the client_id is unknown, so a miss costs what a hit costs.
  const decoy = box.seal(randomToken(16), 'decoy');
  const decoySecret = box.open(decoy, 'decoy');

  const { lookup, clients, changed } = cachedClients(deps);
  const reveal = (c: StoredClient) => box.open(c.secretSealed, c.clientId);

  return {
    /** Drops a changed client from every process's cache: after the change committed (the client cache subscriber calls it). */
    changed,

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

  };
}
export type ClientService = ReturnType<typeof createClientService>;

import type { Storage } from '../domain/storage';
import type { Application } from '../domain/storage/applications';
import { errors } from '../errors';

const CACHE_MS = 5_000;

/** `demo.localhost:3000` → `demo`; an IP address names no application. */
export function applicationLabel(host: string | undefined): string | undefined {
  if (!host) return undefined;
  const name = host.replace(/:\d+$/, '').replace(/^\[.*\]$/, '').toLowerCase();
  if (name === '' || /^[\d.]+$/.test(name)) return undefined;
  return name.split('.')[0];
}

/**
 * Finds the application a request addresses: the first label of its Host header, or the
 * default application when no application has that name. Names are cached for a few seconds
 * (applications are created rarely; a new one is reachable within CACHE_MS on every pod).
 */
export function createApplicationResolver(db: Pick<Storage, 'applications'>, defaultApp: string, now = () => Date.now()) {
  const cache = new Map<string, { app: Application | undefined; until: number }>();
  const lookup = async (name: string) => {
    const hit = cache.get(name);
    if (hit && hit.until > now()) return hit.app;
    const app = await db.applications.findByName(name);
    if (cache.size > 10_000) cache.clear();
    cache.set(name, { app, until: now() + CACHE_MS });
    return app;
  };
  return async (host: string | undefined): Promise<Application> => {
    const label = applicationLabel(host);
    const app = (label && (await lookup(label))) || (await lookup(defaultApp));
    if (!app) {
      throw errors.misconfigured(`no application answers to this host and the default application "${defaultApp}" does not exist; create it with: npx gatehouse apps:create ${defaultApp}`);
    }
    return app;
  };
}

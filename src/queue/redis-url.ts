// REDIS_URL read without a Redis client: the configuration checks it in every process, a CLI command included.

export type Nodes = { host: string; port: number }[];
export type Credentials = { tls: boolean; username?: string; password?: string };

/**
 * Where REDIS_URL points: one server; a cluster's seed nodes (the others are discovered); or the
 * Sentinels that know which server is the master of `name` now.
 */
export type RedisTarget =
  | { cluster: false; url: string }
  | { cluster: true; nodes: Nodes } & Credentials
  | { cluster: false; sentinels: Nodes; name: string } & Credentials;

// (an `@` in a password must be written %40: the host list takes none)
const CLUSTER_URL = /^redis(s?)\+cluster:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#@]+)\/?$/;
const SENTINEL_URL = /^redis(s?)\+sentinel:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#@]+)\/([^/?#@]+)$/;

/** `HOST:PORT,HOST:PORT,…` as nodes (port 6379, or `defaultPort`, when left out). */
function nodesOf(list: string, what: string, defaultPort: number): Nodes {
  return list.split(',').map((hostPort) => {
    const at = hostPort.lastIndexOf(':');
    const host = at > 0 ? hostPort.slice(0, at).replace(/^\[|\]$/g, '') : hostPort;
    const port = at > 0 ? Number(hostPort.slice(at + 1)) : defaultPort;
    if (!host || !Number.isInteger(port) || port < 1 || port > 65535) {
      throw new Error(`REDIS_URL names a ${what} "${hostPort}" that is not HOST:PORT`);
    }
    return { host, port };
  });
}

const decode = (v: string | undefined) => (v ? decodeURIComponent(v) : undefined);

/**
 * REDIS_URL (docs/configuration.md): `redis://HOST:PORT` or `rediss://…` for one server;
 * `redis+cluster://[USER:PASSWORD@]HOST:PORT,HOST:PORT,…` (or `rediss+cluster://` for TLS) for a
 * Redis Cluster, naming one or more of its nodes; `redis+sentinel://[USER:PASSWORD@]HOST:26379,…/NAME`
 * (or `rediss+sentinel://`) for a master and its replicas watched by Sentinels, naming one or more
 * Sentinels and the master's name (the credentials are the Redis servers'). One variable says both
 * where and what, so a deployment cannot point a single-server client at a cluster by mistake
 * (which PINGs fine and then fails every multi-key command).
 */
export function parseRedisUrl(url: string): RedisTarget {
  const sentinel = SENTINEL_URL.exec(url);
  if (sentinel) {
    return {
      cluster: false, sentinels: nodesOf(sentinel[4], 'Sentinel', 26379), name: decodeURIComponent(sentinel[5]),
      tls: sentinel[1] === 's', username: decode(sentinel[2]), password: decode(sentinel[3]),
    };
  }
  const m = CLUSTER_URL.exec(url);
  if (!m) {
    if (!/^rediss?:\/\/.+/.test(url)) {
      throw new Error('REDIS_URL must look like redis://HOST:6379, rediss://…, redis+cluster://HOST:7000,HOST:7001 or redis+sentinel://HOST:26379,HOST:26380/MASTER_NAME');
    }
    return { cluster: false, url };
  }
  return { cluster: true, nodes: nodesOf(m[4], 'cluster node', 6379), tls: m[1] === 's', username: decode(m[2]), password: decode(m[3]) };
}

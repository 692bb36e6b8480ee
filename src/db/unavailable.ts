import { ConnectionError } from 'sequelize';

/** The code of a NoAnswerError (src/db/sql.ts): the server took a connection or a statement and did not answer in time. */
export const NO_ANSWER = 'GATEHOUSE_NO_ANSWER';

/** Driver codes and MySQL error numbers meaning the server cannot be reached or is going away. */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND',
  'PROTOCOL_CONNECTION_LOST', 'PROTOCOL_SEQUENCE_TIMEOUT', 'ER_SERVER_SHUTDOWN', 'ER_CON_COUNT_ERROR', NO_ANSWER,
]);
const UNAVAILABLE_ERRNOS = new Set([
  1040 /* too many connections */, 1053 /* shutdown in progress */, 1927 /* connection killed */, 2002, 2003, 2006, 2013, 4031,
  1047 /* a Galera node not synced with its cluster: "WSREP has not yet prepared node for application use" */,
]);

/**
 * Whether `err` says the database cannot be reached (down, restarting, out of connections) rather
 * than that a statement failed: such a request gets 503 with Retry-After instead of a 500.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  return causes(err).some((e) => e instanceof ConnectionError
    || (typeof e.code === 'string' && UNAVAILABLE_CODES.has(e.code)) || (typeof e.errno === 'number' && UNAVAILABLE_ERRNOS.has(e.errno)));
}

/** Whether `err` says the server did not answer in time (a hung server: it accepts connections and answers nothing). */
export function isNoAnswer(err: unknown): boolean {
  return causes(err).some((e) => e.code === NO_ANSWER);
}

/** No such database, table or column: what a replica answers while it has not yet applied a migration the primary has. */
const SCHEMA_BEHIND_ERRNOS = new Set([1049, 1146, 1054]);

/** Whether `err` says the server lacks part of the schema (a replica behind a migration, or not yet copying the database). */
export function isSchemaMissing(err: unknown): boolean {
  return causes(err).some((e) => typeof e.errno === 'number' && SCHEMA_BEHIND_ERRNOS.has(e.errno));
}

/** `err` and the errors it wraps (Sequelize's `parent` and `original`, `cause`), a few deep. */
function causes(err: unknown): Record<string, unknown>[] {
  const chain: Record<string, unknown>[] = [];
  for (let e = err as Record<string, unknown> | undefined; e && typeof e === 'object' && chain.length < 4;) {
    chain.push(e);
    e = (e.parent ?? e.original ?? e.cause) as Record<string, unknown> | undefined;
  }
  return chain;
}

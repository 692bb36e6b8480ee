import type { Tx } from './transactions';

/** Where a logout token stands: waiting (or retrying), delivered (200 or 204), or given up. */
export type LogoutState = 'pending' | 'delivered' | 'failed';

/**
 * A logout token owed to a client (docs/openid-connect.md#back-channel-logout): whose session
 * ended (the account's public id, its `sub`, and the session id the client was given, its
 * `sid`), the token's `jti` (the same on every attempt), and its attempts.
 */
export interface StoredLogout {
  id: number;
  applicationId: number;
  clientId: string;
  accountId: number | null;
  /** The account's public id; null once an erased account's token was sent. */
  subject: string | null;
  sid: string | null;
  jti: string;
  state: LogoutState;
  attempts: number;
  lastAttemptAt: Date | null;
  lastStatus: number | null;
  lastMs: number | null;
  lastAnswer: string | null;
  createdAt: Date;
  finishedAt: Date | null;
}

export type NewLogout = Pick<StoredLogout, 'applicationId' | 'clientId' | 'accountId' | 'subject' | 'sid' | 'jti'>;

/** One attempt: the receiver's status (null: none), how long, its first bytes, and the state after it. */
export interface LogoutAttempt {
  status: number | null; ms: number; answer: string; state: LogoutState;
  /** The token's account was erased: the row keeps no public id or session id from this attempt on. */
  forgetSubject?: boolean;
}

/** The logout tokens owed to the applications' clients, written in the transaction of the session's end. */
export interface LogoutStore {
  insert(logouts: NewLogout[], now: Date, tx: Tx): Promise<void>;
  find(jti: string): Promise<StoredLogout | undefined>;
  /** Records an attempt of a pending token; false when it was not pending any more (another worker finished it). */
  recordAttemptAlone(jti: string, attempt: LogoutAttempt, now: Date): Promise<boolean>;
  /** A client's latest tokens, newest first. */
  list(applicationId: number, clientId: string, limit: number): Promise<StoredLogout[]>;
  /** Deletes finished tokens older than `before`, at most `limit`; answers how many. */
  purgeFinishedAlone(before: Date, limit: number): Promise<number>;
}

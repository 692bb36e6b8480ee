import type { ApplicationStore } from './applications';
import type { ClientStore } from './clients';
import type { CredentialStore } from './credentials';
import type { FlowStore } from './flows';
import type { OutboxStore } from './outbox';
import type { RecordStore } from './records';
import type { SocialStore } from './social';
import type { Transact } from './transactions';
import type { VersionStore } from './versions';

/**
 * What the domain needs from storage, one store per aggregate, and the one unit of work they
 * share: each method taking a `Tx` joins the transaction `transaction` opened. Implemented once per
 * engine family under src/db (MySQL/MariaDB, SQLite); test/contract holds what every
 * implementation must guarantee.
 */
export interface Storage {
  applications: ApplicationStore;
  clients: ClientStore;
  flows: FlowStore;
  credentials: CredentialStore;
  records: RecordStore;
  social: SocialStore;
  versions: VersionStore;
  outbox: OutboxStore;
  /** Runs `work` in one transaction: all of it commits or none of it does. */
  transaction: Transact;
}

export type { Transact, TransactionOptions, Tx } from './transactions';

import type { Tx } from './transactions';

export interface Application { id: number; name: string; settings: Record<string, string> }

export interface ApplicationStore {
  findByName(name: string): Promise<Application | undefined>;
  create(name: string, now: Date, transaction: Tx): Promise<Application>;
  /** The application (read in `transaction` when one is given, without a lock). */
  findById(id: number, transaction?: Tx): Promise<Application | undefined>;
  /**
   * Writes the application's row (its update time) in `transaction`: what a count of the
   * application's things (APIs, endpoints, roles, admins) is taken under, so parallel changes never
   * pass a limit. Written, not only locked: on a Galera cluster a row lock holds on its node alone,
   * while two transactions that write one row conflict on every node (the second runs again, and
   * counts the first's).
   */
  claim(id: number, now: Date, transaction: Tx): Promise<void>;
  /** Every application (an installation has a handful). */
  list(): Promise<Application[]>;
  /** Read-modify-write of the application-wide default settings under a row lock. */
  mutateSettings(id: number, change: (settings: Record<string, string>) => Record<string, string>, now: Date, transaction: Tx): Promise<void>;
}

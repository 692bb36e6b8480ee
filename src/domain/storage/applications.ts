import type { Tx } from './transactions';

export interface Application { id: number; name: string; settings: Record<string, string> }

export interface ApplicationStore {
  findByName(name: string): Promise<Application | undefined>;
  create(name: string, now: Date, transaction: Tx): Promise<Application>;
  /** The application (read in `transaction` when one is given, without a lock). */
  findById(id: number, transaction?: Tx): Promise<Application | undefined>;
  /** The application, locked until the transaction ends (what counts an application's endpoints under parallel adds). */
  findForUpdate(id: number, transaction: Tx): Promise<Application | undefined>;
  /** Every application (an installation has a handful). */
  list(): Promise<Application[]>;
  /** Read-modify-write of the application-wide default settings under a row lock. */
  mutateSettings(id: number, change: (settings: Record<string, string>) => Record<string, string>, now: Date, transaction: Tx): Promise<void>;
}

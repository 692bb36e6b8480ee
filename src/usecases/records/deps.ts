import type { Clock } from '../../domain/clients';
import type { Acting } from '../../domain/events';
import type { Work } from '../../domain/ports';
import type { PasswordHasher } from '../../domain/passwords';
import type { Storage } from '../../domain/storage';
import type { RecordVersions } from '../../domain/versions';
import type { BaseUrls } from '../../domain/base-urls';
import type { Application } from '../../domain/storage/applications';

/** What the record API's use cases need. */
export interface RecordDeps {
  db: Storage;
  work: Work;
  versions: RecordVersions;
  passwords: PasswordHasher;
  clock: Clock;
  baseUrls: BaseUrls;
  /** The time the database may spend on one statement of a search or a count. */
  entityQueryTimeoutMs: number;
}

/** A call of the record API: the application, and who acts (a client for the application, or the record's own token). */
export interface RecordCall { app: Application; acting: Acting }

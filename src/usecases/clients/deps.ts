import type { Clock } from '../../domain/clients';
import type { Acting } from '../../domain/events';
import type { Work } from '../../domain/ports';
import type { SecretBox } from '../../domain/secrets';
import type { Storage } from '../../domain/storage';

/** What the administration of clients and settings needs. */
export interface AdminDeps { db: Storage; work: Work; box: SecretBox; clock: Clock }

/** Who administers which application: an owner client through the admin API, an operator through the CLI. */
export interface AdminCall { applicationId: number; acting: Acting }

import type { Clock } from '../../domain/clients';
import type { Acting } from '../../domain/events';
import type { Storage } from '../../domain/storage';
import type { RecordVersions } from '../../domain/versions';
import type { Work } from '../unit-of-work';

/** What an operator's action on an account needs (the services have it all). */
export interface OperatorDeps { db: Storage; work: Work; versions: RecordVersions; clock: Clock }

/** An operator's action on one account: the application, the record, and who (the operator's name, for the audit log). */
export interface AccountCommand { applicationId: number; entityId: number; operator: string }

/** The operator as the events' actor (a command line has no request and no address). */
export const operatorActing = (name: string): Acting => ({ actor: { kind: 'operator', name }, origin: {} });

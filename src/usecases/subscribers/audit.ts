import { actsForOthers, kept, type DomainEvent } from '../../domain/events';
import type { AuditStore } from '../../domain/storage/audit';
import type { Subscriber } from './subscriber';

/**
 * The audit log (docs/audit.md): every change a client or an operator made is kept, in the change's
 * own transaction, without what the event carried (no snapshot, no email, no link); and every change
 * of an organization, whoever made it (a member's admin acts on others too). An import is one entry
 * (`records.imported`, with its counts), not two per record it made.
 */
export function audit(store: Pick<AuditStore, 'append'>): Subscriber {
  const handles = (event: DomainEvent) => !event.carried?.inImport
    && (actsForOthers(event.actor) || (event.type.startsWith('organization.') && event.type !== 'organization.switched'));
  return {
    name: 'audit',
    inTransaction: {
      handles,
      async write(events, tx) {
        await store.append(events.filter(handles).map(kept), tx);
      },
    },
  };
}

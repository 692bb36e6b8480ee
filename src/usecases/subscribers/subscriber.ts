import type { DomainEvent } from '../../domain/events';
import type { OutboxJob } from '../../domain/storage/outbox';
import type { Tx } from '../../domain/storage';

/**
 * What turns events into work (docs/architecture.md#add-an-event-subscriber). A subscriber writes in
 * the change's own transaction (`inTransaction`: the audit log), or leaves outbox rows that a worker
 * runs after the commit (`jobs`: an email, a history snapshot), or does something in this process
 * once the change committed (`afterCommit`: forgetting a cached client), or several of these. It
 * answers nothing for an event it does not handle.
 */
export interface Subscriber {
  name: string;
  inTransaction?: {
    /** Whether it writes for `event`: a write made by one procedure call cannot hold such an event. */
    handles(event: DomainEvent): boolean;
    write(events: readonly DomainEvent[], tx: Tx): Promise<void>;
  };
  jobs?(event: DomainEvent): OutboxJob[];
  /** Runs once the change committed, in this process only; never throws (what must not be lost is an outbox row instead). */
  afterCommit?(events: readonly DomainEvent[]): Promise<void>;
}

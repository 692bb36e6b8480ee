import { randomUUID } from 'node:crypto';
import type { DomainEvent } from '../../domain/events';
import type { OutboxJob } from '../../domain/storage/outbox';
import { SNAPSHOT_JOB, TOMBSTONE_JOB } from '../../domain/storage/versions';
import type { Subscriber } from './subscriber';

/**
 * Records' history (docs/versions.md): every event that carries the record as its change left it
 * leaves a snapshot row for the versions worker, which lookups read while it is pending.
 */
export const history: Subscriber = {
  name: 'history',
  jobs(event: DomainEvent): OutboxJob[] {
    const snapshot = event.carried?.snapshot;
    if (!snapshot) return [];
    return [{
      id: randomUUID(), applicationId: event.applicationId, queue: 'versions', name: snapshot.snapshot === null ? TOMBSTONE_JOB : SNAPSHOT_JOB,
      payload: { ...snapshot }, entityId: snapshot.entityId, eventId: event.eventId,
    }];
  },
};

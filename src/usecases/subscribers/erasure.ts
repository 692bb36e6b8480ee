import { randomUUID } from 'node:crypto';
import type { DomainEvent } from '../../domain/events';
import { ERASE_JOB } from '../../domain/payloads';
import type { ErasurePayload } from '../../domain/storage/outbox';
import type { SecretBox } from '../../domain/secrets';
import type { OutboxJob } from '../../domain/storage/outbox';
import type { Subscriber } from './subscriber';

/**
 * Erasures (docs/lifecycle.md#erase): the change removed the record's rows; its job removes what
 * names the person outside them again (a snapshot a worker recorded meanwhile) and in the mail
 * folder, and runs until it finishes, whatever stops a worker midway. What names the person is
 * sealed to the job's row, and cleared when the job is done.
 */
export function erasure(box: SecretBox): Subscriber {
  return {
    name: 'erasure',
    jobs(event: DomainEvent): OutboxJob[] {
      const erased = event.carried?.erasure;
      if (!erased) return [];
      const id = randomUUID();
      const payload: ErasurePayload = { entityId: erased.entityId, sealedNeedles: box.seal(JSON.stringify(erased.needles), id) };
      return [{ id, applicationId: event.applicationId, queue: 'maintenance', name: ERASE_JOB, payload, eventId: event.eventId }];
    },
  };
}

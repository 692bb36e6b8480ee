import { randomUUID } from 'node:crypto';
import type { DomainEvent } from '../../domain/events';
import { mailPayload } from '../../domain/mail';
import type { SecretBox } from '../../domain/secrets';
import type { OutboxJob } from '../../domain/storage/outbox';
import type { Subscriber } from './subscriber';

/** Emails (docs/api.md, Password reset and email verification): an event that carries one leaves its row for the mail worker, its link sealed to that row. */
export function mail(box: SecretBox): Subscriber {
  return {
    name: 'mail',
    jobs(event: DomainEvent): OutboxJob[] {
      const request = event.carried?.mail;
      if (!request) return [];
      const id = randomUUID();
      return [{ id, applicationId: event.applicationId, queue: 'mail', name: 'send', payload: mailPayload(request, id, box), eventId: event.eventId }];
    },
  };
}

import { randomUUID } from 'node:crypto';
import type { DomainEvent } from '../../domain/events';
import type { OutboxJob } from '../../domain/storage/outbox';
import type { Tx } from '../../domain/storage';
import type { LogoutStore } from '../../domain/storage/logouts';
import { WEBHOOK_JOBS } from '../../domain/webhooks';
import type { Subscriber } from './subscriber';

/**
 * Back-channel logout (docs/openid-connect.md#back-channel-logout): a session's end that owes apps
 * logout tokens (`oidc.backchannel_logout`) writes each token to send, in the change's own
 * transaction, and one job per token that sends it, retried as every job is until it is given up.
 */
export function backchannelLogout(logouts: Pick<LogoutStore, 'insert'>): Subscriber {
  const owed = (e: DomainEvent) => (e.type === 'oidc.backchannel_logout' ? e.carried?.logouts : undefined);
  return {
    name: 'backchannel-logout',
    inTransaction: {
      handles: (e) => owed(e) !== undefined,
      async write(events: readonly DomainEvent[], tx: Tx) {
        for (const e of events) {
          const o = owed(e);
          if (!o) continue;
          await logouts.insert(o.notices.map((n) => ({
            applicationId: e.applicationId, clientId: n.clientId, accountId: e.subject.kind === 'record' ? Number(e.subject.id) : null, subject: o.subject, sid: n.sid, jti: n.jti,
          })), e.occurredAt, tx);
        }
      },
    },
    jobs(e: DomainEvent): OutboxJob[] {
      return (owed(e)?.notices ?? []).map((n) => ({
        id: randomUUID(), applicationId: e.applicationId, queue: 'webhooks', name: WEBHOOK_JOBS.logout, payload: { logout: n.jti }, eventId: e.eventId,
      }));
    },
  };
}

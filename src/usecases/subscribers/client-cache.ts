import type { DomainEvent } from '../../domain/events';
import type { Subscriber } from './subscriber';

/**
 * Every process caches clients for a few seconds (domain/clients.ts): once a change of a client or
 * of its settings committed, it is dropped from this process's cache and, through the client
 * changes channel, from every other process's.
 */
export function clientCache(clients: { changed(applicationId: number, clientId: string): Promise<void> }): Subscriber {
  const clientOf = (e: DomainEvent): string | undefined => {
    if (e.subject.kind === 'client') return e.subject.id;
    if (e.type === 'setting.changed') return e.data.client;
    return undefined;
  };
  return {
    name: 'client cache',
    async afterCommit(events) {
      const changed = new Set(events.flatMap((e) => {
        const client = clientOf(e);
        return client === undefined ? [] : [JSON.stringify([e.applicationId, client])];
      }));
      for (const c of changed) {
        const [applicationId, clientId] = JSON.parse(c) as [number, string];
        await clients.changed(applicationId, clientId);
      }
    },
  };
}

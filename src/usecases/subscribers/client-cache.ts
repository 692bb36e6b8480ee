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
      // once per client, however many of its settings changed
      const changed = new Map<string, [number, string]>();
      for (const e of events) {
        const client = clientOf(e);
        if (client !== undefined) changed.set(`${e.applicationId}:${client}`, [e.applicationId, client]);
      }
      for (const [applicationId, clientId] of changed.values()) await clients.changed(applicationId, clientId);
    },
  };
}

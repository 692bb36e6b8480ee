import { kept, type DomainEvent } from '../domain/events';
import type { Work } from '../domain/ports';
import type { Storage } from '../domain/storage';
import type { OutboxJob } from '../domain/storage/outbox';
import type { Subscriber } from './subscribers';

export type { UnitOfWork, Work } from '../domain/ports';

/** The unit of work of src/domain/ports (Work), over storage and the subscribers. */
export function createWork(deps: {
  storage: Pick<Storage, 'transaction' | 'outbox' | 'events'>;
  subscribers: readonly Subscriber[];
  dispatch(jobs: OutboxJob[]): Promise<void>;
  now: () => Date;
}): Work {
  const { storage, subscribers } = deps;
  const jobs = (events: readonly DomainEvent[]) => events.flatMap((e) => subscribers.flatMap((s) => s.jobs?.(e) ?? []));
  const afterCommit = async (events: readonly DomainEvent[]) => {
    if (events.length > 0) for (const s of subscribers) await s.afterCommit?.(events);
  };
  return {
    async run(work, options) {
      let events: DomainEvent[] = [];
      const { result, rows } = await storage.transaction(async (tx) => {
        // a transaction run again (a deadlock victim) records its events again
        events = [];
        const result = await work({ tx, record: (...e) => events.push(...e) });
        // the events are kept with the change: one that cannot be written fails it
        await storage.events.append(events.map(kept), tx);
        for (const s of subscribers) {
          if (s.inTransaction && events.some(s.inTransaction.handles)) await s.inTransaction.write(events, tx);
        }
        const rows = jobs(events);
        await storage.outbox.insert(rows, deps.now(), tx);
        return { result, rows };
      }, options);
      if (options?.answerFirst) {
        // enqueueing never throws; a subscriber's reaction after the commit that fails is the relay's and the next request's to mend
        void deps.dispatch(rows).then(() => afterCommit(events)).catch(() => undefined);
        return result;
      }
      await deps.dispatch(rows);
      await afterCommit(events);
      return result;
    },
    jobsOf(events) {
      if (subscribers.some((s) => s.inTransaction && events.some(s.inTransaction.handles))) return undefined;
      return jobs(events);
    },
    async dispatch(rows, events) {
      await deps.dispatch(rows);
      await afterCommit(events);
    },
  };
}

import type { DomainEvent } from '../domain/events';
import type { Work } from '../domain/ports';
import type { Storage } from '../domain/storage';
import type { OutboxJob } from '../domain/storage/outbox';
import type { Subscriber } from './subscribers';

export type { UnitOfWork, Work } from '../domain/ports';

/** The unit of work of src/domain/ports (Work), over storage and the subscribers. */
export function createWork(deps: {
  storage: Pick<Storage, 'transaction' | 'outbox'>;
  subscribers: readonly Subscriber[];
  dispatch(jobs: OutboxJob[]): Promise<void>;
  now: () => Date;
}): Work {
  const { storage, subscribers } = deps;
  const jobs = (events: readonly DomainEvent[]) => events.flatMap((e) => subscribers.flatMap((s) => s.jobs?.(e) ?? []));
  return {
    async run(work, options) {
      const { result, rows } = await storage.transaction(async (tx) => {
        const events: DomainEvent[] = [];
        const result = await work({ tx, record: (...e) => events.push(...e) });
        for (const s of subscribers) {
          if (s.inTransaction && events.some(s.inTransaction.handles)) await s.inTransaction.write(events, tx);
        }
        const rows = jobs(events);
        await storage.outbox.insert(rows, deps.now(), tx);
        return { result, rows };
      }, options);
      await deps.dispatch(rows);
      return result;
    },
    jobsOf(events) {
      if (subscribers.some((s) => s.inTransaction && events.some(s.inTransaction.handles))) return undefined;
      return jobs(events);
    },
    dispatch: (rows) => deps.dispatch(rows),
  };
}

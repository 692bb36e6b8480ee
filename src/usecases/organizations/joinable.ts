import type { Clock } from '../../domain/clients';
import type { OrganizationStore } from '../../domain/storage/organizations';

/** How long a process trusts what it read of an application's joinable domains. */
export const JOINABLE_READ_MS = 5_000;

/**
 * Which email domains let accounts of an application join organizations just in time, as this
 * process last read them (at most JOINABLE_READ_MS ago, or afresh after a change made here): what
 * a sign-in asks before it looks for an organization to join, so that an application without such
 * domains pays a lookup in memory, not a query, per sign-in. Another process's change reaches
 * this one within JOINABLE_READ_MS.
 */
export interface JoinableDomains {
  has(applicationId: number, domain: string): Promise<boolean>;
  /** Read the application's afresh at the next question (a change made in this process). */
  forget(applicationId: number): void;
}

export function createJoinableDomains(store: Pick<OrganizationStore, 'listJoinableDomains'>, clock: Clock, readMs = JOINABLE_READ_MS): JoinableDomains {
  const read = new Map<number, { at: number; domains: Promise<Set<string>> }>();
  return {
    async has(applicationId, domain) {
      const now = clock.now().getTime();
      let held = read.get(applicationId);
      if (!held || now - held.at >= readMs) {
        const domains = store.listJoinableDomains(applicationId).then((list) => new Set(list));
        held = { at: now, domains };
        read.set(applicationId, held);
        // a failed read is not kept: the next question reads again
        domains.catch(() => read.get(applicationId) === held && read.delete(applicationId));
      }
      return (await held.domains).has(domain);
    },
    forget: (applicationId) => void read.delete(applicationId),
  };
}

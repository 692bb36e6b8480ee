import type { Client } from './clients';
import { Refusal } from './refusal';
import type { Application } from './storage/applications';

/**
 * Whether people may make their own accounts (docs/api-guide.md, setting `registration`):
 * `open` by default, `closed` for an application whose accounts only its operators or its backend
 * make (the operators' application always). A client may close registration for itself; it never
 * opens an application that closed it.
 */
export const registrationOpen = (app: Pick<Application, 'settings'>, client?: Pick<Client, 'settings'>): boolean =>
  app.settings.registration !== 'closed' && client?.settings.registration !== 'closed';

/** The refusal of a registration where it is closed, on every way in (a form, a social identity, an email code). */
export function refuseClosedRegistration(app: Pick<Application, 'settings'>, client?: Pick<Client, 'settings'>): void {
  if (!registrationOpen(app, client)) {
    throw new Refusal('not_offered', 'this application does not take registrations (its setting registration is closed): its accounts are made by its operators');
  }
}

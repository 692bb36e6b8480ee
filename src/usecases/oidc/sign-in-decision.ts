import { isDisabled } from '../../domain/storage/records';
import type { Application } from '../../domain/storage/applications';
import type { StoredCredential } from '../../domain/storage/credentials';
import { acrMet, essentialAcrs, requestedAcrs, sessionFacts, type AuthMethod } from '../../domain/session';
import { canStepUp } from '../factors/second-factors-of';
import type { Services } from '../services';

/**
 * An app's sign-in through the OpenID provider, at its login step: the interaction, why the
 * provider asks (its prompt's reasons: `no_session`, `login_prompt`, `max_age`, Gatehouse's own
 * `gatehouse_session` and `gatehouse_acr`), what the app asked for (`claims`, `acr_values`), and
 * the browser's session of the application (the account page's), if it has one.
 */
export interface ProviderSignInAsk {
  app: Application;
  interactionUid: string;
  reasons: readonly string[];
  claims: unknown;
  acrValues: unknown;
  session: StoredCredential | undefined;
}

/**
 * What answers it: the browser's session (the account, how and when it signed in, the `acr` met);
 * `unmet` when the person signed in just now for this sign-in and still cannot give what the app
 * must have (asking again would loop); otherwise the person signs in (again) on the hosted page.
 */
export type ProviderSignInDecision =
  | { kind: 'session'; accountId: string; amr: AuthMethod[]; acr?: string; authTime: number }
  | { kind: 'unmet' }
  | { kind: 'sign_in' };

/**
 * Decides an OpenID sign-in's login step (docs/openid-connect.md#signing-in). The browser's
 * session answers when the app asked nothing more than a session, or when it is the sign-in this
 * interaction sent the person to make; an essential `acr` (claims) it cannot meet after that is
 * `unmet`; `acr_values` is a wish (OpenID Connect Core 3.1.2.1): a sign-in made for it that could not
 * meet it stands, with no `acr`, as does a session of an account with nothing more to give. A
 * disabled or deleted account's session answers nothing. Reads only: nothing is written.
 */
export async function decideProviderSignIn(deps: Pick<Services, 'clock' | 'db'>, ask: ProviderSignInAsk): Promise<ProviderSignInDecision> {
  const { app, session, reasons } = ask;
  const facts = session && sessionFacts(session);
  if (!session || !facts || session.entityId === null) return { kind: 'sign_in' };
  // the session made for this interaction (the provider's session outlived the browser's, or is another account's: the browser's answers)
  const fresh = session.extra?.interaction === ask.interactionUid;
  const essential = essentialAcrs(ask.claims);
  const wanted = essential.length > 0 ? essential : requestedAcrs(ask.acrValues);
  // asked again only for a stronger sign-in that is a wish, of an account with nothing more to give: the session answers
  const wishOnly = !fresh && essential.length === 0 && reasons.includes('gatehouse_acr')
    && reasons.every((r) => r === 'no_session' || r === 'gatehouse_session' || r === 'gatehouse_acr')
    && !(await canStepUp(deps.db, app, session.entityId));
  const enough = reasons.every((r) => r === 'no_session' || r === 'gatehouse_session') || fresh || wishOnly;
  if (!enough) return { kind: 'sign_in' };
  const record = await deps.db.records.find(app.id, { id: session.entityId });
  if (!record || isDisabled(record, deps.clock.now())) return { kind: 'sign_in' };
  const acr = wanted.find((a) => acrMet(facts.amr, a));
  if (essential.length > 0 && acr === undefined && fresh) return { kind: 'unmet' };
  if (acr === undefined && wanted.length > 0 && !fresh && !wishOnly) return { kind: 'sign_in' };
  return { kind: 'session', accountId: record.uuid, amr: facts.amr, ...(acr !== undefined && { acr }), authTime: Math.floor(Date.parse(facts.auth_time) / 1000) };
}

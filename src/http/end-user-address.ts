import { addressBudgetKey, peerBudgetKey } from '../domain/addresses';
import type { Principal } from './authenticate';
import { errors } from '../errors';
import type { Logger } from '../logger';

/** The header an app's backend names its end user's address in. */
export const END_USER_IP_HEADER = 'x-end-user-ip';
/** Schemes that prove the client holds its secret: only such a caller may speak for its users. */
const CONFIDENTIAL = new Set(['basic', 'signature', 'client_params']);

/**
 * The address the per-address budgets (failed sign-ins, registrations, emails) count against. An
 * app's backend calls the login endpoints for all its users from one address; when the client
 * authenticates with its secret and its setting `trusted_end_user_ip` is `true`, its
 * `X-End-User-IP` header names the user's address instead. Anyone else's header is ignored (said
 * once per client in the log), so it can never spread one attacker's guesses over made-up addresses.
 * Either way the answer is the address's budget key (addressBudgetKey): one per IPv4 address, one
 * per IPv6 /64, whatever the spelling.
 */
export function createEndUserAddress(logger: Logger) {
  const warned = new Set<string>();
  return (principal: Principal, ip: string | undefined, header: string | string[] | undefined): string => {
    const own = peerBudgetKey(ip);
    if (header === undefined) return own;
    const client = principal.kind === 'client' ? principal.client : undefined;
    const trusted = principal.kind === 'client' && CONFIDENTIAL.has(principal.scheme) && principal.client.settings.trusted_end_user_ip === 'true';
    if (!trusted) {
      const who = client?.clientId ?? '(no client)';
      if (!warned.has(who) && warned.size < 1000) {
        warned.add(who);
        logger.warn({ client_id: client?.clientId }, 'X-End-User-IP ignored: only a client that authenticates with its secret and has trusted_end_user_ip=true may send it');
      }
      return own;
    }
    const value = Array.isArray(header) ? header.join(',') : header.trim();
    const key = addressBudgetKey(value);
    if (key === undefined) {
      throw errors.invalidArgument('X-End-User-IP', 'must be one IPv4 or IPv6 address without a zone id, such as 203.0.113.7 or 2001:db8::7 (the end user\'s, as your backend received it)');
    }
    return key;
  };
}

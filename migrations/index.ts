import * as initial from './0001-initial';
import * as normalizedKeys from './0002-normalized-keys';
import * as socialProviders from './0003-social-providers';
import * as versions from './0004-versions';
import * as rotationProcedure from './0005-rotation-procedure';
import * as signInProcedure from './0006-sign-in-procedure';
import * as userDisabled from './0007-user-disabled';
import * as rotationRefusesDisabled from './0008-rotation-refuses-disabled';
import * as auditLog from './0009-audit-log';
import * as signInEvents from './0010-sign-in-events';
import * as rotationKeepsSession from './0011-rotation-keeps-session';
import * as secondFactors from './0012-second-factors';
import * as passkeys from './0013-passkeys';
import * as signingKeys from './0014-signing-keys';
import * as oidcState from './0015-oidc-state';
import * as eventStore from './0016-event-store';
import * as spendWithEvent from './0017-spend-with-event';
import * as disableUntil from './0018-disable-until';
import * as erasures from './0019-erasures';
import * as imports from './0020-imports';
import * as webhooks from './0021-webhooks';
import * as organizations from './0022-organizations';
import * as erasureUuidDigest from './0023-erasure-uuid-digest';
import * as joinableDomains from './0024-joinable-domains';
import * as samlServiceProviders from './0025-saml-service-providers';
import * as organizationConnections from './0026-organization-connections';
import * as scim from './0027-scim';
import * as activityTallies from './0028-activity-tallies';
import * as compactHistory from './0029-compact-history';
import * as indexedAttributes from './0030-indexed-attributes';
import * as credentialsSpentIndex from './0031-credentials-spent-index';
import * as apis from './0032-apis';
import * as logoutDeliveries from './0033-logout-deliveries';
import * as cleanFreePages from './0034-clean-free-pages';
import * as accountClaims from './0035-account-claims';

/** Every migration, in order. Append new ones; never edit or reorder landed ones. */
export const MIGRATIONS = [
  { name: '0001-initial', ...initial },
  { name: '0002-normalized-keys', ...normalizedKeys },
  { name: '0003-social-providers', ...socialProviders },
  { name: '0004-versions', ...versions },
  { name: '0005-rotation-procedure', ...rotationProcedure },
  { name: '0006-sign-in-procedure', ...signInProcedure },
  { name: '0007-user-disabled', ...userDisabled },
  { name: '0008-rotation-refuses-disabled', ...rotationRefusesDisabled },
  { name: '0009-audit-log', ...auditLog },
  { name: '0010-sign-in-events', ...signInEvents },
  { name: '0011-rotation-keeps-session', ...rotationKeepsSession },
  { name: '0012-second-factors', ...secondFactors },
  { name: '0013-passkeys', ...passkeys },
  { name: '0014-signing-keys', ...signingKeys },
  { name: '0015-oidc-state', ...oidcState },
  { name: '0016-event-store', ...eventStore },
  { name: '0017-spend-with-event', ...spendWithEvent },
  { name: '0018-disable-until', ...disableUntil },
  { name: '0019-erasures', ...erasures },
  { name: '0020-imports', ...imports },
  { name: '0021-webhooks', ...webhooks },
  { name: '0022-organizations', ...organizations },
  { name: '0023-erasure-uuid-digest', ...erasureUuidDigest },
  { name: '0024-joinable-domains', ...joinableDomains },
  { name: '0025-saml-service-providers', ...samlServiceProviders },
  { name: '0026-organization-connections', ...organizationConnections },
  { name: '0027-scim', ...scim },
  { name: '0028-activity-tallies', ...activityTallies },
  { name: '0029-compact-history', ...compactHistory },
  { name: '0030-indexed-attributes', ...indexedAttributes },
  { name: '0031-credentials-spent-index', ...credentialsSpentIndex },
  { name: '0032-apis', ...apis },
  { name: '0033-logout-deliveries', ...logoutDeliveries },
  { name: '0034-clean-free-pages', ...cleanFreePages },
  { name: '0035-account-claims', ...accountClaims },
];

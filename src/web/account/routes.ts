import { ACCOUNT_CALLBACK_PATH } from '../../usecases/account/browser-sessions';
import { INVITATION_PATH } from '../../usecases/organizations/invitations';
import { OFFER_PATH, type OpenWork, type Page, type SignedWork } from './parts';
import { showOverview } from './overview';
import { callback, reauth, signOut } from './session';
import { saveProfile } from './profile';
import { changePassword } from './password';
import { passkeyAdd, passkeyBegin, passkeyRemove, passkeyRename } from './passkeys';
import { recoveryCodes, totpEnroll, totpRemove } from './second-factor';
import { identityLink, identityUnlink } from './identities';
import { sessionsEnd } from './sessions';
import { activityDisown } from './activity';
import { organizationInvite, organizationLeave, organizationSwitch } from './organizations';
import { invitationAccept, invitationPage, invitationSignIn } from './invitations';
import { exportData } from './your-data';
import { offerAdd, offerContinue, offerPage } from './passkey-offer';

/**
 * The account page's route table (index.ts builds the router from it, in this order): each
 * request's method and path, and its handler, made with the page's services and form token. A
 * `signed` one needs this browser's live session (without one a GET goes to sign in, a POST back
 * to the page) and, for a POST, the page's CSRF token; an `open` one needs no session. Every POST
 * reads the page's urlencoded form.
 */
export type AccountRoute = { method: 'GET' | 'POST'; path: string } & ({ signed: (p: Page) => SignedWork } | { open: (p: Page) => OpenWork });

export const ACCOUNT_ROUTES: readonly AccountRoute[] = [
  { method: 'GET', path: '/account', signed: showOverview },
  { method: 'GET', path: ACCOUNT_CALLBACK_PATH, open: callback },
  { method: 'GET', path: '/account/reauth', open: reauth },
  // one POST per change, each back to the page saying what it did (or the page with why not)
  { method: 'POST', path: '/account/profile', signed: saveProfile },
  { method: 'POST', path: '/account/password', signed: changePassword },
  { method: 'POST', path: '/account/passkeys/begin', signed: passkeyBegin },
  { method: 'POST', path: '/account/passkeys/add', signed: passkeyAdd },
  { method: 'POST', path: '/account/passkeys/rename', signed: passkeyRename },
  { method: 'POST', path: '/account/passkeys/remove', signed: passkeyRemove },
  { method: 'POST', path: '/account/totp/enroll', signed: totpEnroll },
  { method: 'POST', path: '/account/totp/remove', signed: totpRemove },
  { method: 'POST', path: '/account/recovery-codes', signed: recoveryCodes },
  { method: 'GET', path: '/account/identities/link', signed: identityLink },
  { method: 'POST', path: '/account/identities/unlink', signed: identityUnlink },
  { method: 'POST', path: '/account/sessions/end', signed: sessionsEnd },
  { method: 'POST', path: '/account/activity/disown', signed: activityDisown },
  { method: 'POST', path: '/account/organizations/switch', signed: organizationSwitch },
  { method: 'POST', path: '/account/organizations/leave', signed: organizationLeave },
  { method: 'POST', path: '/account/organizations/invite', signed: organizationInvite },
  // an invitation's link: its page, the sign-in (or registration) for it, and the join button
  { method: 'GET', path: INVITATION_PATH, open: invitationPage },
  { method: 'GET', path: `${INVITATION_PATH}/signin`, open: invitationSignIn },
  { method: 'POST', path: `${INVITATION_PATH}/accept`, open: invitationAccept },
  { method: 'POST', path: '/account/export', signed: exportData },
  { method: 'POST', path: '/account/signout', signed: signOut },
  // a registration's passkey offer: the page, the passkey added, and on to the app
  { method: 'GET', path: OFFER_PATH, signed: offerPage },
  { method: 'POST', path: OFFER_PATH, signed: offerAdd },
  { method: 'POST', path: '/register/continue', signed: offerContinue },
];

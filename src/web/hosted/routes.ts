import { EMAIL_LINK_PATH } from '../../domain/email-codes';
import { EMAIL_CODE_PATH, type EntryWork, type Hosted, ORGANIZATION_PATH } from './parts';
import { showSignIn, submitSignIn } from './sign-in';
import { showRegister, submitRegister } from './registration';
import { submitSocialRegistration } from './social-registration';
import { submitForgot } from './forgot-password';
import { askOrganization, submitOrganization } from './organization';
import { submitCode } from './code-step';
import { submitPasskey } from './passkey';
import { submitEnroll, submitEnrolledContinue } from './enrollment';
import { askEmail, submitEmailBegin, submitEmailCode } from './email-code';
import { followLink, type LinkWork, showLink } from './email-link';

/**
 * The hosted pages' route table (index.ts builds the router from it, in this order): each page's
 * method and path, and its handler, made with the pages' services and CSRF token. A `page` is one
 * of a sign-in in progress: its entry (login client, redirect URI, state, flow) is checked first,
 * then a POST's CSRF token and held social values; a `link` is a mailed link's page, which names
 * no entry. Every POST reads the page's urlencoded form.
 */
export type HostedRoute = { method: 'GET' | 'POST'; path: string } & ({ page: (h: Hosted) => EntryWork } | { link: (h: Hosted) => LinkWork });

export const HOSTED_ROUTES: readonly HostedRoute[] = [
  { method: 'GET', path: '/signin', page: showSignIn },
  { method: 'GET', path: '/register', page: showRegister },
  { method: 'POST', path: '/signin', page: submitSignIn },
  { method: 'POST', path: '/register', page: submitRegister },
  { method: 'POST', path: '/register/social', page: submitSocialRegistration },
  { method: 'POST', path: '/signin/forgot', page: submitForgot },
  // an organization's own identity provider: the work address asked for, then its connection
  { method: 'GET', path: ORGANIZATION_PATH, page: askOrganization },
  { method: 'POST', path: ORGANIZATION_PATH, page: submitOrganization },
  // a paused sign-in's second factor (a code, a recovery code or a passkey)
  { method: 'POST', path: '/signin/code', page: submitCode },
  { method: 'POST', path: '/signin/passkey', page: submitPasskey },
  // an authenticator to add before the sign-in ends (the application requires a second factor), then the sign-in that waited
  { method: 'POST', path: '/signin/enroll', page: submitEnroll },
  { method: 'POST', path: '/signin/enroll/continue', page: submitEnrolledContinue },
  // a sign-in by email code: the address, then the mailed code (or the registration form's other fields)
  { method: 'GET', path: EMAIL_CODE_PATH, page: askEmail },
  { method: 'POST', path: EMAIL_CODE_PATH, page: submitEmailBegin },
  { method: 'POST', path: `${EMAIL_CODE_PATH}/verify`, page: submitEmailCode },
  // the mailed code's link: a button (a mail scanner's GET signs nobody in), then the sign-in in the browser that asked
  { method: 'GET', path: EMAIL_LINK_PATH, link: showLink },
  { method: 'POST', path: EMAIL_LINK_PATH, link: followLink },
];

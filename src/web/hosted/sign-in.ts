import { signIn } from '../../usecases/login/sign-in';
import type { EntryWork, Hosted } from './parts';
import { hinted, show } from './form-page';
import { toConnection } from './organization';
import { submit } from './submit';

/** The sign-in page, or its forgotten-password view (`view=forgot`), from the login client's flow. */
export const showSignIn = (h: Hosted): EntryWork => async (req, res, app, entry) => {
  const view = req.query.view === 'forgot' ? 'forgot' : 'signin';
  // home-realm discovery: an app that knows the address (login_hint) at an organization's verified domain goes to its connection
  if (view === 'signin' && typeof req.query.login_hint === 'string' && await toConnection(h, res, app, entry, req.query.login_hint)) return;
  return show(h, req, res, app, entry, view, 200, hinted(h, app, entry, view, req.query.login_hint));
};

/** The sign-in form's POST; a merge token it holds links the social identity once the password is right. */
export const submitSignIn = submit('signin', signIn, (submitted, held, body) => ({ form: submitted, mergeToken: held.mergeToken, altcha: body.altcha }));

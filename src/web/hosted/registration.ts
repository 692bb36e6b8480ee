import { registrationOpen } from '../../domain/registration';
import { registerWithPassword } from '../../usecases/login/register';
import type { EntryWork, Hosted } from './parts';
import { hinted, show } from './form-page';
import { submit } from './submit';

/**
 * The registration page, from the login client's flow.
 * An invitation's registration names its address (login_hint), typed in already; where the
 * application takes no registrations, its registration page is its sign-in page.
 */
export const showRegister = (h: Hosted): EntryWork => (req, res, app, entry) => {
  const view = registrationOpen(app, entry.client) ? 'register' : 'signin';
  return show(h, req, res, app, entry, view, 200, hinted(h, app, entry, view, req.query.login_hint));
};

/** The registration form's POST. */
export const submitRegister = submit('register', registerWithPassword, (submitted, _held, body) => ({ form: submitted, altcha: body.altcha }));

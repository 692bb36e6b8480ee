import { updateProfile } from '../../usecases/login/update-profile';
import { formValues } from '../form-fields';
import { act, flowForm, type Page, say, sayHtml, type Section, type SignedWork } from './parts';

/** The password: the flow's changePasswordForm, where the account has a password. */
export const passwordSection: Section = {
  id: 'h-password',
  title: 'password',
  draw: ({ p, s, o, token, shown }) => (o.hasPassword
    ? flowForm(p, s, 'changePasswordForm', '/account/password', say(s.locale, 'changePassword'), {}, shown, token)
    : `<p>${sayHtml(s.locale)('noPassword')}</p>`),
};

/** The password's POST: through the use case of /oauth/update_profile_native. */
export const changePassword = (p: Page): SignedWork => async (req, res, s, body) => {
  const passwordForm = p.services.flows.form(s.app, s.flow, 'changePasswordForm');
  const values = passwordForm ? formValues(passwordForm, body) : {};
  await act(p, updateProfile, () => ({ form: { name: 'changePasswordForm', values }, accessToken: s.session }), 'password', 'changePasswordForm')(req, res, s, body);
};

import { prefillFrom } from '../../domain/profile-fields';
import { updateProfile } from '../../usecases/login/update-profile';
import { formValues } from '../form-fields';
import { act, flowForm, type Page, say, type Section, type SignedWork } from './parts';

/** The profile: the flow's editProfileForm, filled with the account's values. */
export const profileSection: Section = {
  id: 'h-profile',
  title: 'profile',
  draw: ({ p, s, o, token, shown }) => {
    // a flow without editProfileForm has no profile to edit here
    const editForm = p.services.flows.form(s.app, s.flow, 'editProfileForm');
    return editForm ? flowForm(p, s, 'editProfileForm', '/account/profile', say(s.locale, 'save'), prefillFrom(editForm, o.record), shown, token) : undefined;
  },
};

/** The profile's POST: through the use case of /oauth/update_profile_native. */
export const saveProfile = (p: Page): SignedWork => async (req, res, s, body) => {
  const editForm = p.services.flows.form(s.app, s.flow, 'editProfileForm');
  const values = editForm ? formValues(editForm, body) : {};
  await act(p, updateProfile, () => ({ form: { name: 'editProfileForm', values }, accessToken: s.session }), 'profile', 'editProfileForm')(req, res, s, body);
};

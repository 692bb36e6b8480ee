import { passkeySignIn } from '../../usecases/login/passkey-sign-in';
import { callUseCase } from '../login-calls';
import { type EntryWork, flowRequest, FORMS, type Hosted, pageFailure, say } from './parts';
import { show } from './form-page';
import { toAppOrPause } from './outcome';

// A sign-in with a passkey: the sign-in page's passkey button (PASSKEY_SCRIPT, form-page.ts) posts here.

/** The passkey's POST: to the app with a code, the code step when the account owes its second factor, or the sign-in page saying it failed. */
export const submitPasskey = (h: Hosted): EntryWork => async (req, res, app, entry, body) => {
  let credential: unknown;
  try {
    credential = JSON.parse(body.credential ?? '');
  } catch {
    return show(h, req, res, app, entry, 'signin', 400, { notice: say(entry.locale, 'passkeyFailed') });
  }
  const result = await callUseCase(h.services, req, res, app, passkeySignIn, flowRequest(entry), { challengeToken: body.challenge_token ?? '', credential });
  if (result.result) return toAppOrPause(h, req, res, app, entry, result.result);
  const { status, shown } = pageFailure(res, entry.locale, FORMS.signin, result.error!);
  // the flow's form says nothing of a passkey: one notice
  await show(h, req, res, app, entry, 'signin', status, { notice: shown.notice ?? say(entry.locale, 'passkeyFailed') });
};

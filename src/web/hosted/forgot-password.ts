import { Refusal } from '../../domain/refusal';
import type { FlowRequest } from '../../usecases/login/call';
import { requestPasswordReset } from '../../usecases/login/email-requests';
import { callUseCase } from '../login-calls';
import { formValues } from '../form-fields';
import { type EntryWork, flowRequest, FORMS, type Hosted, pageFailure, say } from './parts';
import { show } from './form-page';

/** The forgotten-password POST: the email links to the client's password_recover_url, which the use case requires as redirect_uri. */
export const submitForgot = (h: Hosted): EntryWork => async (req, res, app, entry, body) => {
  const found = h.services.flows.form(app, entry.flow, FORMS.forgot);
  const fields = found ? formValues(found, body) : {};
  const request: FlowRequest = { ...flowRequest(entry), redirectUri: entry.client.settings.password_recover_url ?? '', responseType: 'token' };
  const result = await callUseCase(h.services, req, res, app, requestPasswordReset, request, { form: { values: fields }, altcha: body.altcha });
  // the page says the same whether an account has this address (and a password) or not: it tells no one who has an account
  // (the API keeps its documented no_such_account, for an app's backend)
  const unknown = result.error instanceof Refusal && (result.error.reason === 'no_such_account' || result.error.reason === 'nothing_to_do');
  if (!result.error || unknown) return show(h, req, res, app, entry, 'forgot', 200, { done: say(entry.locale, 'forgotSent') });
  const { status, shown } = pageFailure(res, entry.locale, FORMS.forgot, result.error!);
  await show(h, req, res, app, entry, 'forgot', status, { ...shown, values: fields });
};

import { beginPasskeyRegistration } from '../../usecases/factors/begin-passkey-registration';
import { finishPasskeyRegistration } from '../../usecases/factors/finish-passkey-registration';
import { removePasskey, renamePasskey } from '../../usecases/factors/manage-passkeys';
import { callUseCase } from '../login-calls';
import { pageFailure } from '../hosted';
import { escape } from '../pages';
import {
  act, actionForm, dateOf, deviceOf, type Page, reauthTip, requestOf, say, sayHtml, type Section, type SignedWork, tooOld,
} from './parts';

/**
 * Adds a passkey from the page: the browser asks this page for the options (a POST with the form's
 * token), creates the passkey, and posts it back. Without WebAuthn the button stays hidden; a
 * session too old to add one goes to sign in again.
 */
export const ADD_PASSKEY_SCRIPT = `(()=>{const f=document.getElementById('passkey-add'),n=document.getElementById('page-notice');`
  + `if(!f||!window.PublicKeyCredential||!PublicKeyCredential.parseCreationOptionsFromJSON)return;const b=document.getElementById('passkey-add-button');b.hidden=false;`
  + `b.addEventListener('click',async()=>{try{const r=await fetch('/account/passkeys/begin',{method:'POST',body:new URLSearchParams({csrf:f.elements.namedItem('csrf').value})});`
  + `const j=await r.json();if(j.reauth){location.assign('/account/reauth');return}if(!j.options)throw new Error('refused');`
  + `const c=await navigator.credentials.create({publicKey:PublicKeyCredential.parseCreationOptionsFromJSON(j.options)});`
  + `f.elements.namedItem('credential').value=JSON.stringify(c.toJSON());f.submit()}catch(e){n.textContent=f.dataset.failed;n.hidden=false}})})();`;

/** The account's passkeys, each to rename or remove, and the button that adds one (ADD_PASSKEY_SCRIPT). */
export const passkeysSection: Section = {
  id: 'h-passkeys',
  title: 'passkeys',
  draw: ({ s: { locale }, o, token }) => {
    const t = sayHtml(locale);
    let html = o.passkeys.length === 0 ? `<p>${t('noPasskeys')}</p>` : '<ul class="items">' + o.passkeys.map((k) => {
      const used = k.lastUsedAt ? say(locale, 'lastUsed', { date: dateOf(locale, k.lastUsedAt) }) : say(locale, 'neverUsed');
      const id = `passkey-${k.id}`;
      return `<li><p><strong>${escape(k.name)}</strong><br>${t('passkeyDates', { created: dateOf(locale, k.createdAt), used })}${k.backedUp ? ` ${t('synced')}` : ''}</p>`
        + actionForm('/account/passkeys/rename', token, say(locale, 'rename'), { passkey: String(k.id) },
          `<label for="${id}">${t('passkeyName')}</label><input id="${id}" name="name" type="text" maxlength="100" value="${escape(k.name)}" required>`, true)
        + actionForm('/account/passkeys/remove', token, say(locale, 'removeNamed', { name: k.name }), { passkey: String(k.id) }, '', true)
        + '</li>';
    }).join('') + '</ul>';
    if (!o.fresh) html += reauthTip(locale);
    return html + `<form method="post" action="/account/passkeys/add" id="passkey-add" data-failed="${t('passkeyFailed')}">`
      + `<input type="hidden" name="csrf" value="${escape(token)}"><input type="hidden" name="credential" value="">`
      + `<button type="button" id="passkey-add-button" hidden>${t('addPasskey')}</button></form>`;
  },
};

const passkeyId = (body: Record<string, string>) => (/^\d{1,15}$/.test(body.passkey ?? '') ? Number(body.passkey) : -1);

/** The options of navigator.credentials.create(), as JSON for ADD_PASSKEY_SCRIPT. */
export const passkeyBegin = (p: Page): SignedWork => async (req, res, s) => {
  const begun = await callUseCase(p.services, req, res, s.app, beginPasskeyRegistration, requestOf(s), { token: s.session });
  if (begun.result) return void res.json({ options: begun.result });
  // the status the page would answer (a limit: 429 with Retry-After; a dependency down: 500)
  res.status(pageFailure(res, s.locale, 'passkey', begun.error).status).json({ reauth: tooOld(begun.error) });
};

/** The passkey the browser made, added and named after the device. */
export const passkeyAdd = (p: Page): SignedWork => async (req, res, s, body) => {
  let credential: unknown;
  try {
    credential = JSON.parse(body.credential ?? '');
  } catch {
    return p.show(req, res, s, 400, { notice: say(s.locale, 'passkeyFailed') });
  }
  await act(p, finishPasskeyRegistration, () => ({ token: s.session, credential, name: deviceOf(req.headers['user-agent']) || undefined }), 'passkeyAdded')(req, res, s, body);
};

export const passkeyRename = (p: Page) => act(p, renamePasskey, (s, body) => ({ token: s.session, passkeyId: passkeyId(body), name: body.name ?? '' }), 'passkeyRenamed');
export const passkeyRemove = (p: Page) => act(p, removePasskey, (s, body) => ({ token: s.session, passkeyId: passkeyId(body) }), 'passkeyRemoved');

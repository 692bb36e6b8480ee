import path from 'node:path';
import { loadFlowDirectory } from '../../src/domain/flow-definition';
import { compileForm } from '../../src/domain/flow-forms';
import { FLOWS } from '../helpers/backend';

// the standard flow as first released: a registration with every kind of field and rule
const { definition } = loadFlowDirectory(path.join(FLOWS, 'standard'));
const unique = { isUnique: async (_attribute: string, value: string) => value !== 'taken@example.com' };
const now = () => new Date('2026-11-21T12:00:00Z');
const registration = (locale: string) => compileForm(definition, 'registrationForm', locale, now)!;
const good = {
  emailAddress: 'ada@example.com', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
  firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada',
};

describe('flow forms compiled to yup', () => {
  it('accepts a valid registration and returns its values', async () => {
    const r = await registration('en-US').validate(good, unique);
    expect(r.invalid).toEqual({});
    expect(r.values).toMatchObject(good);
  });

  it('reports every failing rule of every field, in the request locale', async () => {
    const r = await registration('en-US').validate({ emailAddress: 'nope', newPassword: 'short', newPasswordConfirm: 'other', firstName: '' }, unique);
    expect(r.invalid).toEqual({
      emailAddress: ['Enter a valid email address, such as name@example.com.'],
      newPassword: ['Passwords must be at least 15 characters long.'],
      newPasswordConfirm: ['The two passwords do not match.'],
      firstName: ['Enter your first name.'],
      lastName: ['Enter your last name.'],
      displayName: ['Choose a display name.'],
    });
    const fr = await registration('fr-FR').validate({ ...good, emailAddress: 'taken@example.com', newPasswordConfirm: 'x' }, unique);
    expect(fr.invalid).toEqual({
      emailAddress: ['Cette adresse e-mail est déjà utilisée.'],
      newPasswordConfirm: ['Les deux mots de passe ne correspondent pas.'],
    });
    const de = await registration('de-DE').validate({ ...good, lastName: '' }, unique);
    expect(de.invalid).toEqual({ lastName: ['Gib deinen Nachnamen ein.'] });
    const es = await registration('es-ES').validate({ ...good, displayName: 'x'.repeat(65) }, unique);
    expect(es.invalid).toEqual({ displayName: ['El nombre visible no puede superar los 64 caracteres.'] });
  });

  it('reads dateselect fields and applies minYears', async () => {
    const young = await registration('en-US').validate({ ...good, 'birthdate[dateselect_year]': '2020', 'birthdate[dateselect_month]': '1', 'birthdate[dateselect_day]': '5' }, unique);
    expect(young.invalid).toEqual({ birthdate: ['You must be at least 13 years old to register.'] });
    const old = await registration('en-US').validate({ ...good, 'birthdate[dateselect_year]': '1815', 'birthdate[dateselect_month]': '12', 'birthdate[dateselect_day]': '10' }, unique);
    expect(old.invalid).toEqual({});
    expect(old.values.birthdate).toBe('1815-12-10');
    const bad = await registration('en-US').validate({ ...good, 'birthdate[dateselect_year]': '2001', 'birthdate[dateselect_month]': '2', 'birthdate[dateselect_day]': '30' }, unique);
    expect(bad.invalid).toEqual({ birthdate: ['Enter a valid date.'] });
  });

  it('refuses control characters and over-long values without a maxLength rule', async () => {
    const r = await registration('en-US').validate({ ...good, firstName: 'Ada\u0000', mobile: `+44${'1'.repeat(2000)}` }, unique);
    expect(r.invalid.firstName).toEqual(['This field contains characters that are not allowed.']);
    expect(r.invalid.mobile).toEqual(expect.arrayContaining(['This field is too long.']));
  });

  it('prefills fields the record already holds (edit profile)', async () => {
    const edit = compileForm(definition, 'editProfileForm', 'en-US', now)!;
    const r = await edit.validate({ displayName: 'countess' }, unique, { emailAddress: 'ada@example.com', firstName: 'Ada', lastName: 'Lovelace' });
    expect(r.invalid).toEqual({});
    expect(r.values).toMatchObject({ displayName: 'countess', firstName: 'Ada' });
  });

  it('has no form of an unknown or differently cased name', () => {
    expect(compileForm(definition, 'registrationform', 'en-US')).toBeUndefined();
  });
});

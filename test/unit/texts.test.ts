import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadTexts, PAGE_LOCALES, TEXTS_FILE, textsOf } from '../../src/texts';
import { ACTIVITY_TYPES } from '../../src/domain/activity';
import { FAILURE_REASONS } from '../../src/domain/storage/events';
import { activityTextKey } from '../../src/web/account';

// The pages' texts live in templates/pages/strings.json, one entry per locale, as the emails'
// strings do; a locale missing a text stops the process at start, never a page in use.

it('every locale has every text en-US has, and no other', () => {
  const all = loadTexts();
  expect(Object.keys(all).sort()).toEqual([...PAGE_LOCALES].sort());
  expect(textsOf('common', 'fr-FR').signIn).toBe('Se connecter');
  // a locale the pages do not have reads en-US
  expect(textsOf('hosted', 'pt-BR').signInButton).toBe('Sign in');
});

it('refuses a file where a locale lacks a text, or has one en-US lacks, naming them', () => {
  const all = JSON.parse(fs.readFileSync(TEXTS_FILE, 'utf8'));
  delete all['de-DE'].hosted.forgotLink;
  all['es-ES'].verifyEmail.extraText = 'sobra';
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-texts-')), 'strings.json');
  fs.writeFileSync(file, JSON.stringify(all));
  expect(() => loadTexts(file)).toThrow(/de-DE hosted lacks forgotLink; es-ES verifyEmail has extraText, which en-US lacks/);
});

it('the account page says every activity type and every failure reason in every locale', () => {
  for (const locale of PAGE_LOCALES) {
    const texts = textsOf('account', locale);
    expect(ACTIVITY_TYPES.map(activityTextKey).filter((key) => texts[key] === undefined)).toEqual([]);
    expect(FAILURE_REASONS.map((r) => `reason_${r}`).filter((key) => texts[key] === undefined)).toEqual([]);
  }
});

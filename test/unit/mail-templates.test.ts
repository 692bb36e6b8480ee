import { MAIL_TEMPLATES } from '../../src/domain/mail';
import path from 'node:path';
import { createLogger } from '../../src/logger';
import { projectRoot } from '../../src/runtime';
import { formatDuration, loadMailTemplates, type MailTemplates } from '../../src/jobs/mail-templates';

let templates: MailTemplates;
const values = { appName: 'Acme <Shop>', name: '<script>alert(1)</script>', email: 'ada@example.com', link: 'https://acme.example/reset?code=abc&x="1"', expiresIn: '1 hour' };

beforeAll(async () => {
  templates = await loadMailTemplates(path.join(projectRoot(), 'templates'), createLogger('silent'));
});

describe('email templates', () => {
  it('has every email in every locale', () => {
    expect(templates.names()).toEqual([...MAIL_TEMPLATES].sort());
    for (const name of templates.names()) expect(templates.locales(name).sort()).toEqual(['de-DE', 'en-US', 'es-ES', 'fr-FR']);
  });

  it('fills values, escaping them in the HTML part only', () => {
    const mail = templates.render('reset-password', 'en-US', values);
    expect(mail.subject).toBe('Reset your Acme <Shop> password');
    expect(mail.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(mail.html).not.toContain('<script>');
    expect(mail.html).toContain('href="https://acme.example/reset?code=abc&amp;x=&quot;1&quot;"');
    expect(mail.text).toContain('https://acme.example/reset?code=abc&x="1"');
    expect(mail.text).toContain('Hello <script>alert(1)</script>,');
  });

  it('writes each locale as its own language, and falls back to en-US for others', () => {
    expect(templates.render('verify-email', 'fr-FR', values).subject).toBe('Confirmez votre adresse e-mail pour Acme <Shop>');
    expect(templates.render('welcome', 'de-DE', values).subject).toBe('Willkommen bei Acme <Shop>');
    expect(templates.render('welcome', 'es-ES', values).html).toContain('lang="es"');
    expect(templates.render('welcome', 'it-IT', values).subject).toBe('Welcome to Acme <Shop>');
    expect(() => templates.render('nope', 'en-US', values)).toThrow('no email template');
  });

  it('names the new address in the email telling the old one of a change, escaped in the HTML part', () => {
    const mail = templates.render('email-changed', 'en-US', { ...values, newEmail: '<new>@example.com' });
    expect(mail.text).toContain('to <new>@example.com.');
    expect(mail.html).toContain('&lt;new&gt;@example.com');
    expect(mail.html).not.toContain('{{');
  });

  it('paints with the application\'s palette and shows its logo only when it has one', () => {
    const plain = templates.render('welcome', 'en-US', values);
    expect(plain.html).not.toContain('{{');
    expect(plain.html).toContain('#3b4cca');
    expect(plain.html).not.toContain('<img');
    const branded = templates.render('reset-password', 'en-US', {
      ...values, accent: '#ffd200', onAccent: '#1f2933', accentText: '#1f2933', logoUrl: 'https://acme.example/logo.png?v=1&x="2"',
    });
    expect(branded.html).not.toContain('#3b4cca');
    expect(branded.html).toMatch(/background:#ffd200/);
    expect(branded.html).toContain('color:#1f2933');
    expect(branded.html).toContain('src="https://acme.example/logo.png?v=1&amp;x=&quot;2&quot;"');
    expect(branded.html).not.toContain('{{');
  });

  it('keeps line breaks out of the subject', () => {
    expect(templates.render('welcome', 'en-US', { ...values, appName: 'Evil\r\nBcc: x@y' }).subject).toBe('Welcome to Evil Bcc: x@y');
  });

  it('formats how long a link lives in the message language', () => {
    expect(formatDuration(3600, 'en-US')).toBe('1 hour');
    expect(formatDuration(604_800, 'fr-FR')).toMatch(/^7\sjours$/); // French separates with a narrow no-break space
    expect(formatDuration(7200, 'de-DE')).toBe('2 Stunden');
    expect(formatDuration(86_400, 'es-ES')).toBe('1 día');
  });
});

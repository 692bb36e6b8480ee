import type { Application } from './storage/applications';
import { isHttpUrl } from './settings';

/**
 * What the hosted pages and the emails share per application: its name (`app_name`, else
 * DEFAULT_APP_NAME), accent colour (`brand_color`, #rrggbb) and logo (`logo_url`, an http(s)
 * URL). A colour or logo that is not well-formed is ignored.
 */
export interface Brand { name: string; color: string; logoUrl?: string }

export const DEFAULT_BRAND_COLOR = '#3b4cca';
/**
 * The name pages and emails show until the application's `app_name` is set: the service's own.
 * An application's name is a host label (`local`, `demo`), not what a person would write.
 */
export const DEFAULT_APP_NAME = 'Gatehouse';
export const TEXT_COLOR = '#1f2933';

/** WCAG relative luminance of a #rrggbb colour. */
function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255).map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** WCAG contrast ratio of two #rrggbb colours (1 to 21). */
export function contrast(a: string, b: string): number {
  const [x, y] = [luminance(a), luminance(b)].sort((m, n) => n - m);
  return (x + 0.05) / (y + 0.05);
}

export function brandOf(app: Application): Brand {
  const color = /^#[0-9a-fA-F]{6}$/.test(app.settings.brand_color ?? '') ? app.settings.brand_color.toLowerCase() : DEFAULT_BRAND_COLOR;
  const logo = app.settings.logo_url;
  // a value stored before settings were checked may still be unusable: it is left out, never fatal
  const logoUrl = logo && isHttpUrl(logo) ? logo : undefined;
  return { name: app.settings.app_name || DEFAULT_APP_NAME, color, logoUrl };
}

/**
 * The colours a brand paints with, readable (WCAG AA, contrast ≥ 4.5): the accent as a fill
 * (buttons), the text on that fill (white, or dark on a light accent), and the accent as text on
 * white (the accent itself, or the text colour when the accent is too light to read).
 */
export function paletteOf(color: string): { accent: string; onAccent: string; accentText: string } {
  const readable = contrast(color, '#ffffff') >= 4.5;
  return { accent: color, onAccent: readable ? '#ffffff' : TEXT_COLOR, accentText: readable ? color : TEXT_COLOR };
}

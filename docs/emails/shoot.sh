#!/usr/bin/env bash
# Renders every email template with sample values and screenshots it in headless Chromium
# (Debian's `chromium`): docs/emails/<template>-<locale>.png. Run after `npm run build`.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=docs/emails
tmp=$(mktemp -d)
node -e '
const path = require("path");
const fs = require("fs");
const { loadMailTemplates } = require("./dist/src/jobs/mail-templates.js");
const { createLogger } = require("./dist/src/logger.js");
const shots = [["reset-password", "en-US"], ["verify-email", "fr-FR"], ["welcome", "de-DE"], ["welcome", "es-ES"]];
loadMailTemplates(path.resolve("templates"), createLogger("silent")).then((t) => {
  for (const [name, locale] of shots) {
    const mail = t.render(name, locale, { appName: "Acme", name: "Ada", email: "ada@example.com",
      link: "https://acme.example/" + name + "?code=8f3a9c0d2e", expiresIn: name === "reset-password" ? "1 hour" : "7 days" });
    fs.writeFileSync(path.join(process.argv[1], name + "-" + locale + ".html"), mail.html);
  }
});' "$tmp"
for html in "$tmp"/*.html; do
  name=$(basename "$html" .html)
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$tmp/profile" \
    --window-size=640,900 --screenshot="$out/$name.png" "file://$html" > /dev/null 2>&1
  echo "$out/$name.png"
done
rm -rf "$tmp"

// A person opening a consent link in Debian's Chromium, driven by playwright-core: signs in
// at the test OpenID provider (tests/oidc/provider.mjs, its development login page) as
// LOGIN, allows access on its consent page when asked, and stops at the first page the MCP
// server itself answers after the provider (its refusal, or its callback page). Run by
// tests/trust_consent.rs.
//
// Environment: LINK (the consent link), LOGIN, SERVER (http://127.0.0.1:PORT, the MCP
// server), CHROMIUM (/usr/bin/chromium), SHOT (a PNG path for the last page, optional).
// Prints one JSON line: {"status", "url", "title", "text", "cookies"}; "cookies" are the
// names of the server's cookies the browser holds at the end.

import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const link = process.env.LINK;
const login = process.env.LOGIN;
const server = process.env.SERVER;
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
if (!link || !login || !server) throw new Error("LINK, LOGIN and SERVER are required");

const profile = mkdtempSync(join(tmpdir(), "shortlist-consent-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
try {
  const page = context.pages()[0] || (await context.newPage());
  let status = 0;
  page.on("response", (r) => {
    if (r.request().isNavigationRequest() && r.frame() === page.mainFrame()) status = r.status();
  });
  await page.goto(link);
  for (let i = 0; i < 10; i++) {
    await page.waitForLoadState("load");
    const here = new URL(page.url());
    // The server's own page after the provider: the refusal, or the callback's answer.
    if (here.origin === new URL(server).origin && !here.pathname.startsWith("/oauth/consent")) break;
    if (await page.locator("input[name=login]").count()) {
      await page.fill("input[name=login]", login);
      await page.fill("input[name=password]", "any");
      await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
      continue;
    }
    if (await page.locator("input[name=prompt][value=consent]").count()) {
      await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
      continue;
    }
    break;
  }
  if (process.env.SHOT) await page.screenshot({ path: process.env.SHOT, fullPage: true });
  const cookies = (await context.cookies(server)).map((c) => c.name);
  const title = (await page.locator("h1").first().textContent().catch(() => "")) || "";
  const text = (await page.locator("body").textContent().catch(() => "")) || "";
  console.log(JSON.stringify({ status, url: page.url(), title, text: text.replace(/\s+/g, " ").trim(), cookies }));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}

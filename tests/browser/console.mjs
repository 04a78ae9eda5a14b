// Uses the shortlist console the way a person does, in Debian's Chromium driven by
// playwright-core: finds an endpoint with a missing description on the health page, edits
// its generated description on the review page, accepts a generated example, rejects a
// value and restores it, and asks for a shortlist on the try page. Screenshots go to $SHOTS_DIR. Run by tests/console_browser.rs.
//
// Environment: CONSOLE_URL (http://127.0.0.1:PORT), SHOTS_DIR, CHROMIUM (/usr/bin/chromium),
// EDITED (the description to type). Prints a JSON summary on stdout; any failed check
// throws, which exits non-zero with the reason.

import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const base = process.env.CONSOLE_URL;
const shots = process.env.SHOTS_DIR;
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const edited = process.env.EDITED;
if (!base || !shots || !edited) throw new Error("CONSOLE_URL, SHOTS_DIR and EDITED are required");

function check(ok, what) {
  if (!ok) throw new Error("check failed: " + what);
}

const profile = mkdtempSync(join(tmpdir(), "shortlist-console-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
  viewport: { width: 1366, height: 860 },
});
const summary = { screenshots: [] };
try {
  const page = context.pages()[0] || (await context.newPage());
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });

  // 1. Catalog health: the broken spec is named; filtering finds missing descriptions.
  await page.goto(base + "/console/health");
  check((await page.locator("h1").textContent()) === "Catalog health", "health title");
  const problems = await page.locator("#problems").textContent();
  check(problems.includes("broken.json") && problems.includes("invalid JSON"), "problem row: " + problems);
  await page.selectOption("select[name=description]", "missing");
  const visible = page.locator("#endpoints tbody tr:not([hidden])");
  const missing = await visible.count();
  check(missing > 0, "some endpoints have a missing description");
  const states = await visible.evaluateAll((rows) => rows.map((r) => r.dataset.state));
  check(states.every((s) => s === "missing"), "the filter shows missing ones only: " + states);
  await page.fill("input[name=q]", "top_rated");
  check((await visible.count()) === 1, "typing narrows to one endpoint");
  const row = visible.first();
  check((await row.textContent()).includes("/movie/top_rated"), "the top-rated endpoint");
  summary.missing = missing;
  await page.screenshot({ path: join(shots, "health.png"), fullPage: true });
  summary.screenshots.push("health.png");

  // 2. Review: from that row to its generated values; edit the description.
  await row.locator("a", { hasText: "review" }).click();
  await page.waitForURL(/\/console\/review\?/);
  const cards = page.locator("article.item");
  check((await cards.count()) >= 2, "the endpoint's generated values are listed");
  const heading = (re) => cards.filter({ has: page.locator("h3", { hasText: re }) }).first();
  const description = heading(/operation · description/);
  check((await description.textContent()).includes("the spec has none"), "filled in place");
  check((await description.textContent()).includes("not checked"), "validation shown");
  await description.locator("button[data-action=edit]").click();
  await description.locator("textarea").fill(edited);
  await description.locator("button[data-action=save]").click();
  await description.locator(".message", { hasText: "Saved your edit" }).waitFor();
  check((await description.locator("h3 .badge").textContent()) === "reviewed", "badge turns reviewed");
  check((await description.locator(".value").textContent()).includes(edited), "edited text shown");
  const example = heading(/region.*· example/);
  await example.locator("button[data-action=accept]").click();
  await example.locator(".message", { hasText: "Accepted" }).waitFor();
  await page.screenshot({ path: join(shots, "review.png"), fullPage: true });
  summary.screenshots.push("review.png");
  // Reloaded from the file: the edit is there, no longer pending.
  await page.goto(base + "/console/review?api=tmdb&status=reviewed");
  check((await page.locator("main").textContent()).includes(edited), "the edit was saved to the spec");

  // Reject a pending value, then undo it from the rejected list.
  await page.goto(base + "/console/review?api=tmdb&status=pending");
  const pending = page.locator("article.item").first();
  const rejectedText = await pending.locator(".value").textContent();
  await pending.locator("button[data-action=reject]").click();
  await pending.locator(".message", { hasText: "Rejected" }).waitFor();
  check((await pending.locator("h3 .badge").textContent()) === "rejected", "badge turns rejected");
  await page.goto(base + "/console/review?api=tmdb&status=rejected");
  const rejected = page.locator("article.item").first();
  check((await rejected.locator(".value").textContent()) === rejectedText, "the rejected value is listed");
  check((await rejected.textContent()).includes("later runs do not write it again"), "why it is listed");
  await rejected.locator("button[data-action=restore]").click();
  await rejected.locator(".message", { hasText: "Restored" }).waitFor();
  check((await rejected.locator("h3 .badge").textContent()) === "restored", "badge turns restored");
  await page.goto(base + "/console/review?api=tmdb&status=rejected");
  check((await page.locator("article.item").count()) === 0, "nothing left rejected");

  // 3. Try a request: the shortlist, where each tool came from, its tokens and definition.
  await page.goto(base + "/console/try");
  await page.fill("input[name=q]", "who played in the movie Inception");
  await Promise.all([page.waitForURL(/\/console\/try\?q=/), page.click("#try button")]);
  const rows = page.locator("#shortlist tbody tr[data-origin]");
  check((await rows.count()) > 0, "a shortlist");
  const first = await rows.first().textContent();
  check(first.includes("tmdb__getMovieCredits"), "credits first: " + first);
  const origins = await rows.evaluateAll((r) => r.map((x) => x.dataset.origin));
  check(origins.includes("prerequisite"), "a prerequisite came along: " + origins);
  check(Number(await page.locator("#tools-tokens").textContent()) > 0, "token count");
  await page.locator("#shortlist details").first().locator("summary").click();
  const definition = await page.locator("#shortlist details pre").first().textContent();
  check(JSON.parse(definition).name === "tmdb__getMovieCredits", "tool definition as JSON");
  summary.tools = await rows.evaluateAll((r) => r.map((x) => x.querySelector("code").textContent));
  summary.origins = origins;
  await page.screenshot({ path: join(shots, "try.png"), fullPage: true });
  summary.screenshots.push("try.png");

  check(errors.length === 0, "no script errors: " + errors.join("; "));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify(summary));

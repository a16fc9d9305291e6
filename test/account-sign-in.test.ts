import { describe, expect, it } from "vitest";
import { Browser, SESSION_COOKIE } from "./account-browser";

describe("smoke", () => {
  it("signs in", async () => {
    const browser = new Browser();
    const answer = await browser.signIn("alice");
    expect(answer.status, await answer.clone().text()).toBe(303);
    expect(browser.cookie(SESSION_COOKIE)).toBeDefined();
    const page = await browser.page("/account");
    expect(page.html).toContain("Signed in as <strong>alice</strong>");
  });
});

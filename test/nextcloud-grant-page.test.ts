import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { gpodderUsername } from "../src/auth/gpodder-username";
import { LOGIN_FLOW_LIFETIME_MS, pendingLoginFlow } from "../src/nextcloud/login-flow";
import { dateTime } from "../src/pages/format";
import { bucketOf, shardRouting } from "../src/shards";
import { Browser, SESSION_COOKIE, signInBindings } from "./account-browser";
import { as, databaseFor, ORIGIN, withinOneRateWindow } from "./helpers";
import {
  ANTENNAPOD,
  age,
  expectNotGranted,
  flowRow,
  granted,
  json,
  nextcloud,
  poll,
  type StartedFlow,
  startFlow,
} from "./nextcloud-client";

/**
 * The grant page of Nextcloud's Login Flow v2 (docs/API.md §17) through a browser (test/account-browser.ts: the
 * worker, the local identity provider, cookies, forms): sign-in first, the page, `Grant access` and `Deny` under
 * §16's anti-forgery rules, and what the app's poll then receives.
 */

const unique = (name: string) => `${name}-${crypto.randomUUID().slice(0, 8)}`;

/** The path of the flow's login link (the app opens the absolute URL; the browser is on this origin). */
const pathOf = (flow: StartedFlow) => new URL(flow.login).pathname;

/** A browser signed in as a new user (sub = the returned id). */
async function signedIn(name: string, bindings = signInBindings()) {
  const userId = unique(name);
  const browser = new Browser(bindings);
  expect((await browser.signIn(userId)).status).toBe(303);
  return { browser, userId };
}

/** The grant page of a flow, answered 200, and its forms' anti-forgery token. */
async function grantPage(browser: Browser, flow: StartedFlow) {
  const page = await browser.page(pathOf(flow));
  expect(page.response.status, page.html).toBe(200);
  expect(page.token).toMatch(/^[0-9a-f]{64}$/);
  return { html: page.html, token: page.token as string, response: page.response };
}

/** Presses one of the page's buttons: the form it sits in, posted from the page. */
function press(
  browser: Browser,
  flow: StartedFlow,
  button: "grant" | "deny",
  token: string,
  headers: HeadersInit = {},
) {
  return browser.post(`${pathOf(flow)}/${button}`, { anti_forgery_token: token }, headers);
}

/** The user's app passwords, as stored. */
async function appPasswordsOf(userId: string) {
  const db = await databaseFor(userId);
  const { results } = await db
    .prepare("SELECT label FROM app_passwords WHERE user_id = ? ORDER BY created_at")
    .bind(userId)
    .all<{ label: string }>();
  return results.map((row) => row.label);
}

function expectPageHeaders(response: Response) {
  const csp = response.headers.get("Content-Security-Policy") ?? "";
  expect(response.headers.get("Content-Type")).toMatch(/^text\/html; charset=UTF-8/i);
  expect(response.headers.get("Cache-Control")).toBe("no-store");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).toMatch(/default-src 'none'/);
  expect(csp).not.toContain("unsafe-inline");
  expect(response.headers.get("X-Content-Type-Options")).toBe("nosniff");
  expect(response.headers.get("Referrer-Policy")).toBe("same-origin");
}

describe("the grant page: signed out", () => {
  it("sends the visitor to sign in with return_to the flow, and the sign-in returns there", async () => {
    const flow = await startFlow();
    const path = pathOf(flow);
    const visitor = new Browser();
    const first = await visitor.request(path);
    expect(first.status).toBe(302);
    expect(first.headers.get("Location")).toBe(`/account/signin?return_to=${encodeURIComponent(path)}`);
    expect(first.headers.get("Cache-Control")).toBe("no-store");

    // Through the provider's form, as the redirect leads: the callback sends the browser back to the flow.
    const callback = await visitor.authorizeFrom(
      (await visitor.request(first.headers.get("Location") as string)).headers.get("Location") as string,
      unique("signed-out"),
    );
    const back = await visitor.request(callback);
    expect(back.status).toBe(303);
    expect(back.headers.get("Location")).toBe(path);
    expect((await visitor.page(path)).html).toContain("Grant access");
    // Seen before signing in, the flow is still pending: the visit changed nothing.
    await expectNotGranted(await poll(flow.token));
  });

  it("return_to still leads only to paths of this service", async () => {
    const path = pathOf(await startFlow());
    for (const returnTo of [
      `https://evil.example${path}`,
      `//evil.example${path}`,
      `/\\evil.example${path}`,
      `https:${path}`,
    ]) {
      const browser = new Browser();
      const answer = await browser.signIn(unique("return-to"), returnTo);
      expect(answer.headers.get("Location"), returnTo).toBe("/account");
    }
  });

  it("a POST without a session is refused (403) and changes nothing", async () => {
    const flow = await startFlow();
    const visitor = new Browser();
    for (const button of ["grant", "deny"] as const) {
      const answer = await press(visitor, flow, button, "0".repeat(64));
      expect(answer.status).toBe(403);
      expectPageHeaders(answer);
    }
    expect(await pendingLoginFlow(shardRouting(env), flow.loginId, Date.now())).toBeDefined();
  });
});

describe("the grant page: signed in", () => {
  it("names the app (as text), the person, when and from where the flow started; warns; Grant access and Deny", async () => {
    const appName = `<img src=x onerror="alert(1)"> & 'AntennaPod'`;
    const flow = await startFlow({ "User-Agent": appName, "CF-Connecting-IP": "198.51.100.23" });
    const { browser, userId } = await signedIn("page");
    browser.workerHeaders = { "CF-Connecting-IP": "203.0.113.9" };
    const { html, response } = await grantPage(browser, flow);
    expectPageHeaders(response);

    expect(html.match(/<h1[ >]/g)).toHaveLength(1);
    expect(html).not.toContain("<img");
    expect(html).not.toContain("<script");
    // As text, and isolated (docs/API.md §16): in the main sentence and in the facts, every time it is shown.
    const escaped = "&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; &#39;AntennaPod&#39;";
    expect(html.split(escaped)).toHaveLength(3);
    expect(html.split(`<strong class="app-name"><bdi>${escaped}</bdi></strong>`)).toHaveLength(3);
    expect(html).toContain(`<strong><bdi>${userId}</bdi></strong>`);
    const startedAt = (await flowRow(flow.token))?.started_at as number;
    expect(html).toContain(dateTime(startedAt));
    expect(html).toContain("198.51.100.23");
    expect(html).toContain("203.0.113.9");
    expect(html).toContain(dateTime(startedAt + LOGIN_FLOW_LIFETIME_MS));
    expect(html).toContain("Grant access only to an app you have just started signing in from");

    // Two POST forms, each with the session's anti-forgery token, and the buttons the contract names.
    const forms = [...html.matchAll(/<form method="post" action="([^"]+)">(.*?)<\/form>/gs)].filter(([, action]) =>
      action.startsWith(pathOf(flow)),
    );
    expect(forms.map(([, action]) => action)).toEqual([`${pathOf(flow)}/grant`, `${pathOf(flow)}/deny`]);
    for (const [, , body] of forms) expect(body).toMatch(/name="anti_forgery_token" value="[0-9a-f]{64}"/);
    expect(forms.map(([, , body]) => /<button[^>]*>\s*([^<]+?)\s*<\/button>/.exec(body)?.[1])).toEqual([
      "Grant access",
      "Deny",
    ]);
    // Looking at the page grants nothing.
    await expectNotGranted(await poll(flow.token));
  });

  it("Grant access mints the app password; the app's poll receives it exactly once, and it syncs", async () => {
    const flow = await startFlow();
    const { browser, userId } = await signedIn("grant");
    const { token } = await grantPage(browser, flow);
    await expectNotGranted(await poll(flow.token));

    const answer = await press(browser, flow, "grant", token);
    const html = await answer.text();
    expect(answer.status, html).toBe(200);
    expectPageHeaders(answer);
    expect(html).toContain("<h1>Access granted</h1>");
    // Shown as a success (pages.css `.notice.success`), not as the warnings' notice.
    expect(html).toMatch(/<p class="notice success" role="status">/);
    expect(html).toContain(`<strong class="app-name"><bdi>${ANTENNAPOD}</bdi></strong>`);
    expect(html).toContain("return to the app");
    expect(await appPasswordsOf(userId)).toEqual([ANTENNAPOD]);

    const credentials = await granted(flow.token);
    expect(credentials).toMatchObject({ server: ORIGIN, loginName: await gpodderUsername(userId) });
    await expectNotGranted(await poll(flow.token));
    await expectNotGranted(await poll(flow.token));
    const synced = await json<{ add: string[] }>(nextcloud(credentials).get("subscriptions?since=0"));
    expect(synced.add).toEqual([]);

    // Used: the page and both buttons answer 404, and nothing more is minted.
    expect((await browser.request(pathOf(flow))).status).toBe(404);
    expect((await press(browser, flow, "grant", token)).status).toBe(404);
    expect((await press(browser, flow, "deny", token)).status).toBe(404);
    expect(await appPasswordsOf(userId)).toEqual([ANTENNAPOD]);
    // The account page lists it like any other, with Revoke.
    expect((await browser.page("/account")).html).toContain(
      `Revoke<span class="sr-only"> <bdi>${ANTENNAPOD}</bdi></span>`,
    );
  });

  it("Deny ends the flow: the page says so, the poll answers 404 [], nothing is minted", async () => {
    const flow = await startFlow();
    const { browser, userId } = await signedIn("deny");
    const { token } = await grantPage(browser, flow);
    const answer = await press(browser, flow, "deny", token);
    const html = await answer.text();
    expect(answer.status, html).toBe(200);
    expect(html).toContain("<h1>Access denied</h1>");
    expect(html).toContain(`<strong class="app-name"><bdi>${ANTENNAPOD}</bdi></strong> was not given access`);
    expect(await flowRow(flow.token)).toBeNull();
    await expectNotGranted(await poll(flow.token));
    expect((await browser.request(pathOf(flow))).status).toBe(404);
    expect((await press(browser, flow, "grant", token)).status).toBe(404);
    expect(await appPasswordsOf(userId)).toEqual([]);
  });

  it("refuses Grant access and Deny without the token, with another session's, from another site, or as a GET", async () => {
    const flow = await startFlow();
    const { browser, userId } = await signedIn("forgery");
    const { browser: other } = await signedIn("forgery-other");
    const { token } = await grantPage(browser, flow);
    const foreign = (await grantPage(other, flow)).token;
    for (const button of ["grant", "deny"] as const) {
      const path = `${pathOf(flow)}/${button}`;
      const refusals = [
        await browser.post(path, {}),
        await press(browser, flow, button, foreign),
        await press(browser, flow, button, token, { Origin: "https://evil.example" }),
        await press(browser, flow, button, token, { Origin: "null", "Sec-Fetch-Site": "cross-site" }),
        await press(browser, flow, button, token, { Origin: "null" }),
        await browser.request(path, {
          method: "POST",
          headers: { Origin: ORIGIN, "Content-Type": "application/json" },
          body: JSON.stringify({ anti_forgery_token: token }),
        }),
      ];
      expect(
        refusals.map((answer) => answer.status),
        button,
      ).toEqual([403, 403, 403, 403, 403, 403]);
      for (const answer of refusals) expectPageHeaders(answer);
      expect((await browser.request(`${path}?anti_forgery_token=${token}`)).status, button).toBe(405);
    }
    // Nothing changed: the flow waits, the poll tells nothing, no password exists.
    expect(await pendingLoginFlow(shardRouting(env), flow.loginId, Date.now())).toBeDefined();
    await expectNotGranted(await poll(flow.token));
    expect(await appPasswordsOf(userId)).toEqual([]);

    // The same form from the page itself (Origin absent: Sec-Fetch-Site decides) grants.
    const allowed = await browser.request(`${pathOf(flow)}/grant`, {
      method: "POST",
      headers: { "Sec-Fetch-Site": "same-origin", "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ anti_forgery_token: token }).toString(),
    });
    expect(allowed.status).toBe(200);
    expect((await granted(flow.token)).loginName).toBe(await gpodderUsername(userId));
  });

  it("a Grant access or Deny form that cannot be read is a 400 page, and the flow still waits", async () => {
    const flow = await startFlow();
    const { browser, userId } = await signedIn("unreadable");
    await grantPage(browser, flow);
    for (const button of ["grant", "deny"] as const) {
      const answer = await browser.request(`${pathOf(flow)}/${button}`, {
        method: "POST",
        headers: { Origin: ORIGIN, "Content-Type": "multipart/form-data; boundary=x" },
        body: "no parts here",
      });
      expect(answer.status, button).toBe(400);
      expectPageHeaders(answer);
    }
    expect(await pendingLoginFlow(shardRouting(env), flow.loginId, Date.now())).toBeDefined();
    await expectNotGranted(await poll(flow.token));
    expect(await appPasswordsOf(userId)).toEqual([]);
  });

  it("an expired, used or unknown flow: a 404 page with the pages' headers, and its buttons grant nothing", async () => {
    const { browser, userId } = await signedIn("gone");
    const live = await startFlow();
    const { token } = await grantPage(browser, live);

    const expired = await startFlow();
    await age(expired.token, LOGIN_FLOW_LIFETIME_MS);
    const used = await startFlow();
    expect((await press(browser, used, "grant", token)).status).toBe(200);
    const unknown = { ...live, loginId: "A".repeat(43), login: `${ORIGIN}/index.php/login/v2/flow/${"A".repeat(43)}` };
    const malformed = { ...live, loginId: "x", login: `${ORIGIN}/index.php/login/v2/flow/x` };
    const passwords = await appPasswordsOf(userId);

    for (const [name, flow] of Object.entries({
      expired,
      used,
      unknown,
      malformed,
      token: { ...live, login: live.login.replace(live.loginId, live.token) },
    })) {
      const page = await browser.request(pathOf(flow));
      const html = await page.text();
      expect(page.status, name).toBe(404);
      expectPageHeaders(page);
      expect(html).toContain("Sign-in link not found");
      expect(html.match(/<h1[ >]/g)).toHaveLength(1);
      for (const button of ["grant", "deny"] as const) {
        expect((await press(browser, flow, button, token)).status, `${name} ${button}`).toBe(404);
      }
    }
    await expectNotGranted(await poll(expired.token));
    expect(await appPasswordsOf(userId)).toEqual(passwords);
    // Anything else under the flow path is a page too: an HTML 404, not the API's JSON.
    const stray = await browser.request(`${pathOf(live)}/elsewhere`);
    expect(stray.status).toBe(404);
    expectPageHeaders(stray);
  });

  it("never hands one person's grant to another flow's poll", async () => {
    const mine = await startFlow();
    const theirs = await startFlow();
    const { browser: alice, userId: aliceId } = await signedIn("owner-a");
    const { browser: bob, userId: bobId } = await signedIn("owner-b");
    expect((await press(alice, mine, "grant", (await grantPage(alice, mine)).token)).status).toBe(200);
    // Alice's grant is not Bob's flow's: its poll still waits.
    await expectNotGranted(await poll(theirs.token));
    expect((await press(bob, theirs, "grant", (await grantPage(bob, theirs)).token)).status).toBe(200);
    const [first, second] = [await granted(mine.token), await granted(theirs.token)];
    expect(first.loginName).toBe(await gpodderUsername(aliceId));
    expect(second.loginName).toBe(await gpodderUsername(bobId));
    expect(first.appPassword).not.toBe(second.appPassword);
    // Each password opens its own account only.
    const bobFeed = "https://owner-b.example/feed.xml";
    await json(nextcloud(second).post("subscription_change/create", { add: [bobFeed] }));
    expect((await json<{ add: string[] }>(nextcloud(first).get("subscriptions?since=0"))).add).toEqual([]);
    const wrong = nextcloud({ loginName: first.loginName, appPassword: second.appPassword });
    expect((await wrong.get("subscriptions?since=0")).status).toBe(401);
  });

  it("at the 50 app passwords: a 403 page, nothing minted, the flow still waits", async () => {
    const { browser, userId } = await signedIn("limit");
    const api = await as(userId);
    for (let i = 0; i < 50; i++) {
      const created = await api.post("/v1/app-passwords", {
        data: { type: "app-password", attributes: { label: `app ${i}` } },
      });
      expect(created.status).toBe(201);
    }
    const flow = await startFlow();
    const answer = await press(browser, flow, "grant", (await grantPage(browser, flow)).token);
    const html = await answer.text();
    expect(answer.status).toBe(403);
    expectPageHeaders(answer);
    expect(html).toContain("App password limit reached");
    expect(await appPasswordsOf(userId)).toHaveLength(50);
    expect(await pendingLoginFlow(shardRouting(env), flow.loginId, Date.now())).toBeDefined();
    await expectNotGranted(await poll(flow.token));
  });

  it("while the user's bucket is being moved: 503 with Retry-After, nothing minted, the flow still waits", async () => {
    const { browser, userId } = await signedIn("frozen");
    const flow = await startFlow();
    const { token } = await grantPage(browser, flow);
    const frozen = new Browser(signInBindings({ SHARD_FROZEN: String(await bucketOf(userId)) }));
    frozen.setCookie(SESSION_COOKIE, browser.cookie(SESSION_COOKIE) as string);
    const answer = await press(frozen, flow, "grant", token);
    expect(answer.status).toBe(503);
    expect(answer.headers.get("Retry-After")).not.toBeNull();
    expectPageHeaders(answer);
    expect(await appPasswordsOf(userId)).toEqual([]);
    expect(await pendingLoginFlow(shardRouting(env), flow.loginId, Date.now())).toBeDefined();
    // Once the move is over, the same button grants.
    expect((await press(browser, flow, "grant", token)).status).toBe(200);
  });

  it("counts toward the per-user rate limit, as the other pages do (429 page)", async () => {
    await withinOneRateWindow();
    const tight = signInBindings({ USER_RATE_LIMITER: env.TIGHT_USER_RATE_LIMITER }); // 5 requests per 60 s
    const { browser } = await signedIn("rate", tight);
    const flow = await startFlow();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await browser.request(pathOf(flow))).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const refused = await browser.request(pathOf(flow));
    expect(refused.headers.get("Retry-After")).not.toBeNull();
    expectPageHeaders(refused);
  });

  it("without OIDC_ISSUER the page answers 503 saying sign-in is not configured", async () => {
    const flow = await startFlow();
    const answer = await new Browser({}).request(pathOf(flow));
    expect(answer.status).toBe(503);
    expectPageHeaders(answer);
  });
});

describe("the poll after the grant: only a password that still exists", () => {
  it("answers 404 [] when the password was revoked between the grant and the poll", async () => {
    const flow = await startFlow();
    const { browser, userId } = await signedIn("revoked");
    expect((await press(browser, flow, "grant", (await grantPage(browser, flow)).token)).status).toBe(200);
    const api = await as(userId);
    const list = await json<{ data: { id: string }[] }>(api.get("/v1/app-passwords"));
    expect((await api.delete(`/v1/app-passwords/${list.data[0].id}`)).status).toBe(204);
    await expectNotGranted(await poll(flow.token));
    expect(await flowRow(flow.token)).toBeNull();
  });

  it("answers 404 [] when the account was erased (DELETE /v1/account, or the page) between the grant and the poll", async () => {
    for (const how of ["api", "page"] as const) {
      const flow = await startFlow();
      const { browser, userId } = await signedIn(`erased-${how}`);
      const { token } = await grantPage(browser, flow);
      expect((await press(browser, flow, "grant", token)).status).toBe(200);
      if (how === "api") expect((await (await as(userId)).delete("/v1/account")).status).toBe(204);
      else
        expect((await browser.post("/account/erase", { anti_forgery_token: token, confirm: "erase" })).status).toBe(
          200,
        );
      await expectNotGranted(await poll(flow.token));
    }
  });
});

describe("where listeners find it", () => {
  it("the connect page gives AntennaPod's Nextcloud steps (Server address, Proceed to login, Grant access) and Kasts'", async () => {
    const { browser } = await signedIn("connect-steps");
    const { token } = await browser.page("/account");
    const answer = await browser.post("/account/app-passwords", {
      anti_forgery_token: token as string,
      label: "Phone",
    });
    const html = await answer.text();
    expect(answer.status).toBe(200);
    const section = html.slice(
      html.indexOf("<h2>AntennaPod, option &quot;Nextcloud&quot;</h2>"),
      html.indexOf("<h2>Kasts"),
    );
    expect(section).toContain("<em>Server address</em>");
    expect(section).toContain("<em>Proceed to login</em>");
    expect(section).toContain("<strong>Grant access</strong>");
    expect(section).not.toContain("Coming soon");
    expect(html.slice(html.indexOf("<h2>Kasts"))).toContain("<em>GPodder Nextcloud</em>");
  });
});

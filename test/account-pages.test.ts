import { describe, expect, it, vi } from "vitest";
import { gpodderUsername } from "../src/auth/gpodder-username";
import { accountPageStatements } from "../src/db/account-pages";
import { ACCOUNT_SESSION_TTL_MS, accountSessionStatements, MAX_ACCOUNT_SESSIONS } from "../src/db/account-sessions";
import { podcastGuid } from "../src/podcast-guid";
import { bucketOf } from "../src/shards";
import { Browser, SESSION_COOKIE, signInBindings } from "./account-browser";
import {
  as,
  databaseFor,
  meteredDatabaseOf,
  ORIGIN,
  queryPlan,
  runCron,
  seedPodcast,
  seedSubscriptions,
  send,
  subscriptionDocument,
  walksOf,
} from "./helpers";

/** docs/API.md §16, the signed-in pages: sessions, anti-forgery, headers, and each page through its forms. */

const unique = (name: string) => `${name}-${crypto.randomUUID().slice(0, 8)}`;

/** A browser signed in as a new user (sub = the returned id). */
async function signedIn(name = "page-user", bindings = signInBindings()) {
  const userId = unique(name);
  const browser = new Browser(bindings);
  expect((await browser.signIn(userId)).status).toBe(303);
  return { browser, userId };
}

async function sessionRows(userId: string): Promise<number> {
  const row = await (await databaseFor(userId))
    .prepare("SELECT count(*) AS n FROM account_sessions WHERE user_id = ?")
    .bind(userId)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

async function tokenOf(browser: Browser, path = "/account"): Promise<string> {
  const { token } = await browser.page(path);
  expect(token).toMatch(/^[0-9a-f]{64}$/);
  return token as string;
}

/** Everything stored for the user, to prove a refused request changed nothing. */
async function snapshot(userId: string): Promise<string> {
  const db = await databaseFor(userId);
  const tables = ["subscriptions", "episodes", "app_passwords", "gpodder_sessions", "account_sessions", "devices"];
  const rows = await db.batch(
    tables.map((table) => db.prepare(`SELECT * FROM ${table} WHERE user_id = ? ORDER BY 1, 2`).bind(userId)),
  );
  return JSON.stringify(rows.map((result) => result.results));
}

function gpodderBasic(username: string, password: string) {
  return `Basic ${btoa(`${username}:${password}`)}`;
}

/** The credentials the connect page shows, read off its labelled fields. */
function credentialsOn(html: string) {
  const field = (id: string) =>
    new RegExp(`<label for="${id}">([^<]+)</label><input id="${id}"[^>]* value="([^"]*)"`).exec(html);
  const [server, username, password] = ["server", "username", "password"].map((id) => field(id));
  expect([server?.[1], username?.[1], password?.[1]]).toEqual(["Server", "Username", "Password"]);
  return { server: server?.[2] as string, username: username?.[2] as string, password: password?.[2] as string };
}

async function createAppPassword(browser: Browser, label: string) {
  const token = await tokenOf(browser);
  const answer = await browser.post("/account/app-passwords", { anti_forgery_token: token, label });
  const html = await answer.text();
  expect(answer.status, html).toBe(200);
  return credentialsOn(html);
}

describe("headers on every page", () => {
  it("no-store, a CSP without inline scripts that forbids framing, nosniff, Referrer-Policy same-origin", async () => {
    const { browser } = await signedIn("headers");
    const signedOut = new Browser();
    const answers = [
      await browser.request("/account"),
      await browser.request("/account/subscriptions"),
      await browser.request("/account/progress"),
      await browser.request("/account/erase"),
      await browser.request("/account/subscriptions?after=bogus"),
      await browser.request("/account/no-such-page"),
      await browser.request("/account", { method: "PUT" }),
      await browser.post("/account/app-passwords", { label: "no token" }),
      await signedOut.request("/account"),
      await signedOut.request("/account/progress"),
      await signedOut.request("/"),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 400, 404, 405, 403, 200, 302, 200]);
    for (const answer of answers) {
      const csp = answer.headers.get("Content-Security-Policy") ?? "";
      expect(answer.headers.get("Cache-Control")).toBe("no-store");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain("unsafe-inline");
      expect(csp).toMatch(/default-src 'none'/);
      expect(answer.headers.get("X-Content-Type-Options")).toBe("nosniff");
      expect(answer.headers.get("Referrer-Policy")).toBe("same-origin");
      if (answer.status !== 302) expect(answer.headers.get("Content-Type")).toMatch(/^text\/html; charset=UTF-8/i);
    }
    // The API keeps its own: no-referrer.
    expect((await send(new Request(`${ORIGIN}/v1/subscriptions`))).headers.get("Referrer-Policy")).toBe("no-referrer");
  });

  it("each page has one h1, and a label for every field", async () => {
    const { browser } = await signedIn("structure");
    await createAppPassword(browser, "Structure");
    for (const path of ["/", "/account", "/account/subscriptions", "/account/progress", "/account/erase"]) {
      const { html } = await browser.page(path);
      expect(html.match(/<h1[ >]/g), path).toHaveLength(1);
      for (const [, id] of html.matchAll(/<input id="([^"]+)"/g))
        expect(html, `${path} #${id}`).toContain(`<label for="${id}">`);
    }
  });
});

describe("sessions", () => {
  it("a signed-out visitor sees Sign in on /account and is sent to sign in (and back) from the other pages", async () => {
    const visitor = new Browser();
    const account = await visitor.page("/account");
    expect(account.response.status).toBe(200);
    expect(account.html).toMatch(/<a class="button" href="\/account\/signin\?return_to=%2Faccount">\s*Sign in\s*<\/a>/);
    expect(account.html).not.toContain("Sign out");
    const progress = await visitor.request("/account/progress?x=1");
    expect(progress.status).toBe(302);
    expect(progress.headers.get("Location")).toBe("/account/signin?return_to=%2Faccount%2Fprogress%3Fx%3D1");
  });

  it("Sign out ends the session on the server at once: the same cookie replayed is signed out", async () => {
    const { browser, userId } = await signedIn("sign-out");
    const cookie = browser.cookie(SESSION_COOKIE) as string;
    const token = await tokenOf(browser);
    const answer = await browser.post("/account/signout", { anti_forgery_token: token });
    expect(answer.status).toBe(303);
    expect(
      answer.headers.getSetCookie().some((line) => line.startsWith(`${SESSION_COOKIE}=;`) && /Max-Age=0/.test(line)),
    ).toBe(true);
    const rows = await (await databaseFor(userId))
      .prepare("SELECT count(*) AS n FROM account_sessions WHERE user_id = ?")
      .bind(userId)
      .first("n");
    expect(rows).toBe(0);
    const replay = new Browser();
    replay.setCookie(SESSION_COOKIE, cookie);
    const page = await replay.page("/account");
    expect(page.html).toMatch(/Sign in/);
    expect(page.html).not.toMatch(/Sign out/);
    expect((await replay.post("/account/app-passwords", { anti_forgery_token: token, label: "x" })).status).toBe(403);
  });

  it("ends 7 days after sign-in", async () => {
    const { browser } = await signedIn("seven-days");
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + ACCOUNT_SESSION_TTL_MS - 60_000);
      expect((await browser.page("/account")).html).toContain("Sign out");
      vi.setSystemTime(Date.now() + 120_000);
      expect((await browser.page("/account")).html).not.toContain("Sign out");
    } finally {
      vi.useRealTimers();
    }
  });

  it("the retention cron deletes expired sessions, never a live one", async () => {
    const expired = await signedIn("expired-session");
    const live = await signedIn("live-session");
    // Signed in 7 days and a minute ago (the provider's tokens carry the real time: the row is aged instead).
    await (await databaseFor(expired.userId))
      .prepare("UPDATE account_sessions SET created_at = ?, expires_at = ? WHERE user_id = ?")
      .bind(Date.now() - ACCOUNT_SESSION_TTL_MS - 60_000, Date.now() - 60_000, expired.userId)
      .run();
    expect((await expired.browser.page("/account")).html).not.toContain("Sign out");
    expect(await sessionRows(expired.userId)).toBe(1);
    await runCron();
    expect(await sessionRows(expired.userId)).toBe(0);
    expect(await sessionRows(live.userId)).toBe(1);
    expect((await live.browser.page("/account")).html).toContain("Sign out");
  });

  it(`keeps at most ${MAX_ACCOUNT_SESSIONS} sessions per user, ending the oldest`, async () => {
    const userId = unique("many");
    const browsers: Browser[] = [];
    for (let i = 0; i <= MAX_ACCOUNT_SESSIONS; i++) {
      const browser = new Browser();
      await browser.signIn(userId);
      browsers.push(browser);
    }
    const db = await databaseFor(userId);
    expect(
      await db.prepare("SELECT count(*) AS n FROM account_sessions WHERE user_id = ?").bind(userId).first("n"),
    ).toBe(MAX_ACCOUNT_SESSIONS);
    expect((await browsers[0].page("/account")).html).not.toContain("Sign out");
    expect((await browsers[MAX_ACCOUNT_SESSIONS].page("/account")).html).toContain("Sign out");
  });

  it("never authenticates /v1 or the gpodder paths, and their credentials never open a page", async () => {
    const { browser, userId } = await signedIn("separate");
    const { username, password } = await createAppPassword(browser, "Separate");
    const cookie = `${SESSION_COOKIE}=${browser.cookie(SESSION_COOKIE)}`;
    expect((await send(new Request(`${ORIGIN}/v1/subscriptions`, { headers: { Cookie: cookie } }))).status).toBe(401);
    expect(
      (await send(new Request(`${ORIGIN}/api/2/devices/${username}.json`, { headers: { Cookie: cookie } }))).status,
    ).toBe(401);

    const api = await as(userId);
    for (const authorization of [`Bearer ${api.token}`, gpodderBasic(username, password)]) {
      const page = await send(
        new Request(`${ORIGIN}/account`, { headers: { Authorization: authorization } }),
        signInBindings(),
      );
      expect(await page.text()).not.toContain("Sign out");
      const progress = await send(
        new Request(`${ORIGIN}/account/progress`, { headers: { Authorization: authorization } }),
        signInBindings(),
      );
      expect(progress.status).toBe(302);
    }
  });

  it("a cookie naming another user's username, or a made-up one, is signed out", async () => {
    const { browser } = await signedIn("forged");
    const [, secret] = (browser.cookie(SESSION_COOKIE) as string).split(".");
    for (const forged of [`${await gpodderUsername("someone-else")}.${secret}`, `nobody.${secret}`, secret, ""]) {
      const other = new Browser();
      other.setCookie(SESSION_COOKIE, forged);
      expect((await other.page("/account")).html, forged).not.toContain("Sign out");
    }
  });
});

describe("anti-forgery: every change is a POST with the session's token from this service's own pages", () => {
  it("refuses (403, nothing changes) a missing or foreign token, another site's Origin, and Origin null without same-origin", async () => {
    const { browser, userId } = await signedIn("forgery");
    const { browser: other } = await signedIn("forgery-other");
    const token = await tokenOf(browser);
    const foreignToken = await tokenOf(other);
    const feed = crypto.randomUUID();
    await (await as(userId)).post("/v1/subscriptions", subscriptionDocument(feed, `https://forgery.example/${feed}`));
    await createAppPassword(browser, "Forgery");
    const before = await snapshot(userId);
    const changes: [string, Record<string, string>][] = [
      ["/account/app-passwords", { label: "forged" }],
      ["/account/app-passwords/revoke", { id: "x" }],
      ["/account/subscriptions/unsubscribe", { guid: feed, return_to: "/account/subscriptions" }],
      ["/account/erase", { confirm: "erase" }],
      ["/account/signout", {}],
    ];
    for (const [path, fields] of changes) {
      const refusals = [
        await browser.post(path, fields),
        await browser.post(path, { ...fields, anti_forgery_token: foreignToken }),
        await browser.post(path, { ...fields, anti_forgery_token: token }, { Origin: "https://evil.example" }),
        await browser.post(
          path,
          { ...fields, anti_forgery_token: token },
          { Origin: "null", "Sec-Fetch-Site": "cross-site" },
        ),
        await browser.post(path, { ...fields, anti_forgery_token: token }, { Origin: "null" }),
        await browser.request(path, {
          method: "POST",
          headers: { Origin: ORIGIN, "Content-Type": "application/json" },
          body: JSON.stringify({ ...fields, anti_forgery_token: token }),
        }),
      ];
      expect(
        refusals.map((answer) => answer.status),
        path,
      ).toEqual([403, 403, 403, 403, 403, 403]);
      expect(
        (await browser.request(`${path}?${new URLSearchParams({ ...fields, anti_forgery_token: token })}`)).status,
        path,
      ).toBe(path === "/account/erase" ? 200 : 405);
    }
    expect(await snapshot(userId)).toBe(before);
    // The same form from the page itself (Origin absent: Sec-Fetch-Site decides) does what it says.
    const allowed = await browser.request("/account/app-passwords", {
      method: "POST",
      headers: { "Sec-Fetch-Site": "same-origin", "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ anti_forgery_token: token, label: "From the page" }).toString(),
    });
    expect(allowed.status).toBe(200);
    expect(await snapshot(userId)).not.toBe(before);
  });
});

describe("a form checks everything it was sent before it writes: a 400 page means nothing changed", () => {
  /** Posts each bad form to `path` and expects a 400 HTML page and the user's rows as they were. */
  async function expectRefused(browser: Browser, userId: string, path: string, forms: Record<string, string>[]) {
    const before = await snapshot(userId);
    for (const fields of forms) {
      const answer = await browser.post(path, fields);
      const html = await answer.text();
      expect(answer.status, `${path} ${JSON.stringify(fields)}: ${html}`).toBe(400);
      expect(answer.headers.get("Content-Type")).toMatch(/^text\/html/);
      expect(await snapshot(userId), `${path} ${JSON.stringify(fields)}`).toBe(before);
    }
  }

  /** A form that cannot be read (a multipart body without its boundary): 400 before any field is looked at. */
  async function expectUnreadableRefused(browser: Browser, userId: string, path: string) {
    const before = await snapshot(userId);
    const answer = await browser.request(path, {
      method: "POST",
      headers: { Origin: ORIGIN, "Content-Type": "multipart/form-data; boundary=x" },
      body: "no parts here",
    });
    expect(answer.status, path).toBe(400);
    expect(await snapshot(userId), path).toBe(before);
  }

  it("Unsubscribe: a missing or malformed guid or return_to unsubscribes nothing", async () => {
    const { browser, userId } = await signedIn("form-unsubscribe");
    const feed = crypto.randomUUID();
    await (await as(userId)).post("/v1/subscriptions", subscriptionDocument(feed, `https://form.example/${feed}`));
    const token = await tokenOf(browser, "/account/subscriptions");
    const good = { anti_forgery_token: token, guid: feed, return_to: "/account/subscriptions" };
    const { return_to: _, ...withoutReturn } = good;
    const { guid: __, ...withoutGuid } = good;
    await expectRefused(browser, userId, "/account/subscriptions/unsubscribe", [
      withoutReturn,
      { ...good, return_to: "/account/subscriptions?after=not-a-key" },
      { ...good, return_to: "/account/subscriptions?after=1.2&before=3.4" },
      { ...good, return_to: "http://[" },
      withoutGuid,
      { ...good, guid: "not-a-guid" },
    ]);
    await expectUnreadableRefused(browser, userId, "/account/subscriptions/unsubscribe");
    expect((await browser.post("/account/subscriptions/unsubscribe", good)).status).toBe(303);
    expect((await (await as(userId)).get(`/v1/subscriptions/${feed}`)).status).toBe(404);
  });

  it("Create app password: a missing, blank or too long App name creates none", async () => {
    const { browser, userId } = await signedIn("form-create");
    const token = await tokenOf(browser);
    await expectRefused(browser, userId, "/account/app-passwords", [
      { anti_forgery_token: token },
      { anti_forgery_token: token, label: " " },
      { anti_forgery_token: token, label: "x".repeat(101) },
    ]);
    await expectUnreadableRefused(browser, userId, "/account/app-passwords");
  });

  it("Revoke: a form without the app password revokes none", async () => {
    const { browser, userId } = await signedIn("form-revoke");
    await createAppPassword(browser, "Kept");
    const token = await tokenOf(browser);
    await expectRefused(browser, userId, "/account/app-passwords/revoke", [{ anti_forgery_token: token }]);
    await expectUnreadableRefused(browser, userId, "/account/app-passwords/revoke");
  });

  it("Import: no file, an empty one, or one that is not OPML imports nothing", async () => {
    const { browser, userId } = await signedIn("form-import");
    const token = await tokenOf(browser, "/account/subscriptions");
    await expectRefused(browser, userId, "/account/opml", [{ anti_forgery_token: token }]);
    for (const content of ["", "not xml", "<opml><body><outline xmlUrl="]) {
      const form = new FormData();
      form.set("anti_forgery_token", token);
      form.set("opml", new File([content], "x.opml"));
      const before = await snapshot(userId);
      const answer = await browser.request("/account/opml", {
        method: "POST",
        headers: { Origin: ORIGIN },
        body: form,
      });
      expect(answer.status, JSON.stringify(content)).toBe(400);
      expect(await snapshot(userId)).toBe(before);
    }
    await expectUnreadableRefused(browser, userId, "/account/opml");
  });

  it("Erase my account and Sign out: a form that cannot be read, or no Confirm, changes nothing", async () => {
    const { browser, userId } = await signedIn("form-erase");
    const token = await tokenOf(browser, "/account/erase");
    await expectRefused(browser, userId, "/account/erase", [{ anti_forgery_token: token }]);
    await expectUnreadableRefused(browser, userId, "/account/erase");
    await expectUnreadableRefused(browser, userId, "/account/signout");
    expect((await browser.page("/account")).html).toContain("Sign out");
  });
});

describe("the pages", () => {
  it("account: who is signed in and what the account holds; connect an app; the app syncs; Revoke stops it", async () => {
    const { browser, userId } = await signedIn("connect");
    const feed = crypto.randomUUID();
    const api = await as(userId);
    await api.post("/v1/subscriptions", subscriptionDocument(feed, `https://connect.example/${feed}`));
    const credentials = await createAppPassword(browser, "gPodder on the laptop");
    expect(credentials.server).toBe(ORIGIN);
    expect(credentials.username).toBe(await gpodderUsername(userId));
    // Typeable from another screen: six groups of five, no l/I/1 or O/0 (nor any capital): 30 characters of 32.
    expect(credentials.password).toMatch(/^[a-km-np-z2-9]{5}(-[a-km-np-z2-9]{5}){5}$/);
    expect(30 * Math.log2(32)).toBeGreaterThanOrEqual(128);
    const auth = { Authorization: gpodderBasic(credentials.username, credentials.password) };
    const device = await send(
      new Request(`${ORIGIN}/api/2/devices/${credentials.username}/laptop.json`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ caption: "My laptop", type: "laptop" }),
      }),
    );
    expect(device.status).toBe(200);

    const { html } = await browser.page("/account");
    expect(html).toContain(`Signed in as <strong><bdi>${userId}</bdi></strong>`);
    expect(html).toMatch(/<dt>Subscriptions<\/dt><dd><a href="\/account\/subscriptions">1 podcast<\/a>/);
    expect(html).toMatch(/<dt>Devices<\/dt><dd>1 device/);
    // In the listener's words: the device by the name they gave it, its id after it; "Listening progress".
    expect(html).not.toMatch(/Caption|Episode states/);
    expect(html).toMatch(/<dt>Listening progress<\/dt><dd><a href="\/account\/progress">0 episodes<\/a>/);
    expect(html).toMatch(/<dt>App passwords<\/dt><dd>1 app password/);
    expect(html).toMatch(/Storage used<\/dt><dd>\d+ bytes of 8 MiB/);
    // On a phone the column headers are hidden (pages.css): the cells that do not say what they are carry a label.
    expect(html).toContain(
      '<td><bdi>My laptop</bdi> <span class="secondary">(<code><bdi>laptop</bdi></code>)</span></td><td data-label="Type">laptop</td>',
    );
    expect(html).toMatch(
      /<td><bdi>gPodder on the laptop<\/bdi><\/td><td data-label="Created">[^<]+<\/td><td data-label="Last used">[^<]+<\/td>/,
    );
    expect(html).toMatch(
      /<button type="submit" class="danger">Revoke<span class="sr-only"> <bdi>gPodder on the laptop<\/bdi><\/span><\/button>/,
    );
    expect(html).toMatch(/<label for="label">App name<\/label>/);
    expect(html).toMatch(/<button type="submit">Create app password<\/button>/);
    // The password is on the connect page only: never on the account page.
    expect(html).not.toContain(credentials.password);

    const id = /name="id" value="([^"]+)"/.exec(html)?.[1] as string;
    const revoke = await browser.post("/account/app-passwords/revoke", {
      anti_forgery_token: await tokenOf(browser),
      id,
    });
    expect(revoke.status).toBe(303);
    expect(
      (await send(new Request(`${ORIGIN}/api/2/devices/${credentials.username}.json`, { headers: auth }))).status,
    ).toBe(401);
    expect((await browser.page("/account")).html).toContain("No app has been connected yet.");
  });

  it("connect an app: an App name of 1 to 100 characters; at most 50 app passwords, then the page says so", async () => {
    const { browser, userId } = await signedIn("labels");
    const token = await tokenOf(browser);
    // A right-to-left name with a trailing number is shown isolated, on the connect page and in the list.
    const rtl = "פודקאסט 2";
    const connected = await browser.post("/account/app-passwords", { anti_forgery_token: token, label: rtl });
    expect(await connected.text()).toContain(`<h1>Connect <bdi>${rtl}</bdi></h1>`);
    expect((await browser.page("/account")).html).toContain(`<td><bdi>${rtl}</bdi></td>`);
    await browser.post("/account/app-passwords/revoke", {
      anti_forgery_token: token,
      id: (
        await (
          await databaseFor(userId)
        )
          .prepare("SELECT id FROM app_passwords WHERE user_id = ?")
          .bind(userId)
          .first<{ id: string }>()
      )?.id as string,
    });
    for (const label of ["", "   ", "x".repeat(101)]) {
      const answer = await browser.post("/account/app-passwords", { anti_forgery_token: token, label });
      expect(answer.status, JSON.stringify(label)).toBe(400);
    }
    const db = await databaseFor(userId);
    const username = await gpodderUsername(userId);
    await db.batch(
      Array.from({ length: 50 }, (_, i) =>
        db
          .prepare(
            "INSERT INTO app_passwords (user_id, id, username, label, password_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)",
          )
          .bind(userId, crypto.randomUUID(), username, `app ${i}`, "0".repeat(64), i),
      ),
    );
    const full = await browser.post("/account/app-passwords", { anti_forgery_token: token, label: "one more" });
    expect(full.status).toBe(403);
    expect(await full.text()).toContain("App password limit reached");
    expect((await browser.page("/account")).html).toMatch(/Full: at most 50; revoke one first\./);
  });

  it("subscriptions: 25 a page in list order, Next and Previous, Unsubscribe", async () => {
    const { browser, userId } = await signedIn("paging");
    await seedSubscriptions(userId, 60, {
      feedUrl: (_guid, index) => `https://paging.example/${String(index).padStart(3, "0")}`,
    });
    const listed = (html: string) =>
      [...html.matchAll(/<span class="url">(https:\/\/paging\.example\/\d+)<\/span>/g)].map((m) => m[1]);
    const link = (html: string, name: string) =>
      new RegExp(`<a href="([^"]+)" rel="[a-z]+">${name}</a>`).exec(html)?.[1]?.replaceAll("&amp;", "&");

    const first = await browser.page("/account/subscriptions");
    const all = listed(first.html);
    expect(all).toHaveLength(25);
    expect(first.html).toContain("You follow 60 podcasts");
    expect(link(first.html, "Previous")).toBeUndefined();
    const second = await browser.page(link(first.html, "Next") as string);
    const third = await browser.page(link(second.html, "Next") as string);
    expect(listed(third.html)).toHaveLength(10);
    expect(link(third.html, "Next")).toBeUndefined();
    const back = await browser.page(link(third.html, "Previous") as string);
    expect(listed(back.html)).toEqual(listed(second.html));
    const backAgain = await browser.page(link(back.html, "Previous") as string);
    expect(listed(backAgain.html)).toEqual(all);
    expect(link(backAgain.html, "Previous")).toBeUndefined();
    // List order (docs/API.md §4), as the API lists them.
    const api = (await (await (await as(userId)).get("/v1/subscriptions?page[size]=100")).json()) as {
      data: { attributes: { feedUrl: string } }[];
    };
    expect([...all, ...listed(second.html), ...listed(third.html)]).toEqual(
      api.data.map((item) => item.attributes.feedUrl),
    );

    const guid = /name="guid" value="([^"]+)"/.exec(second.html)?.[1] as string;
    const here = /name="return_to" value="([^"]+)"/.exec(second.html)?.[1]?.replaceAll("&amp;", "&") as string;
    expect(second.html).toMatch(/Unsubscribe<span class="sr-only"> from https:\/\/paging\.example\/025<\/span>/);
    const gone = await browser.post("/account/subscriptions/unsubscribe", {
      anti_forgery_token: second.token as string,
      guid,
      return_to: here,
    });
    expect(gone.status).toBe(303);
    expect(gone.headers.get("Location")).toBe(here);
    expect((await (await as(userId)).get(`/v1/subscriptions/${guid}`)).status).toBe(404);
    expect((await browser.page("/account/subscriptions")).html).toContain("You follow 59 podcasts");
    expect((await browser.request("/account/subscriptions?after=1.2&before=3.4")).status).toBe(400);
  });

  it("listening progress: the 50 states changed last, with a progress bar when the duration is known", async () => {
    const { browser, userId } = await signedIn("progress");
    const feed = crypto.randomUUID();
    const api = await as(userId);
    await api.post("/v1/subscriptions", subscriptionDocument(feed, `https://progress.example/${feed}`));
    const write = (id: string, attributes: Record<string, unknown>) =>
      api.post("/v1/episodes", {
        data: {
          type: "episode",
          id,
          attributes: { changedAt: "2026-06-01T00:00:00Z", ...attributes },
          relationships: { subscription: { data: { type: "subscription", id: feed } } },
        },
      });
    for (let i = 0; i < 52; i++) {
      const response = await write(crypto.randomUUID(), { mediaUrl: `https://progress.example/${i}.mp3`, position: i });
      expect(response.status).toBe(201);
    }
    await write(crypto.randomUUID(), { mediaUrl: "https://progress.example/half.mp3", position: 900, duration: 1800 });
    await write(crypto.randomUUID(), {
      mediaUrl: "https://progress.example/done.mp3",
      position: 1800,
      duration: 1800,
      played: true,
    });
    const { html } = await browser.page("/account/progress");
    const shown = [...html.matchAll(/<span class="url">([^<]+)<\/span>/g)].map((m) => m[1]);
    expect(shown).toHaveLength(50);
    expect(shown.slice(0, 3)).toEqual([
      "https://progress.example/done.mp3",
      "https://progress.example/half.mp3",
      "https://progress.example/51.mp3",
    ]);
    expect(shown).not.toContain("https://progress.example/3.mp3");
    expect(html).toContain(
      '<progress max="1800" value="900" aria-label="Position in https://progress.example/half.mp3"></progress>',
    );
    expect(html).toMatch(/15:00 of 30:00<\/span><span class="unplayed">Not played/);
    expect(html).toMatch(/30:00 of 30:00<\/span><span class="played">Played/);
    expect(html).toContain(`from https://progress.example/${feed}`);
  });

  it("subscriptions by their podcasts (docs/API.md §18): title and author, the URL beside them; pending by URL; gone says so", async () => {
    const { browser, userId } = await signedIn("podcast-names");
    const api = await as(userId);
    const feeds = ["titled", "pending", "gone", "hostile"].map((name) => ({
      guid: crypto.randomUUID(),
      feedUrl: `https://names.example/${name}.xml`,
    }));
    for (const feed of feeds) await api.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const [titled, pending, gone, hostile] = feeds;
    await seedPodcast(userId, titled.feedUrl, {
      title: "Tech & Talk",
      author: "Ada Lovelace",
      imageUrl: "https://cdn.example.com/art.jpg",
    });
    await seedPodcast(userId, gone.feedUrl, { status: "gone", title: "Gone Show" });
    await seedPodcast(userId, hostile.feedUrl, {
      title: "<script>alert(1)</script>",
      author: '"><img src=x onerror=alert(1)>',
      siteUrl: "javascript:alert(1)",
      imageUrl: "https://tracker.example/pixel.gif",
    });
    const { html, response } = await browser.page("/account/subscriptions");
    expect(html).toContain(
      `<span class="podcast titled"><span class="title">Tech &amp; Talk</span><span class="author">by Ada Lovelace</span><span class="url">${titled.feedUrl}</span></span>`,
    );
    expect(html).toContain(`<span class="podcast"><span class="url">${pending.feedUrl}</span></span>`);
    expect(html).toMatch(/<span class="title">Gone Show<\/span><span class="gone">No longer available<\/span>/);
    expect(html).toContain('Unsubscribe<span class="sr-only"> from Tech &amp; Talk</span>');
    expect(html).toContain(`Unsubscribe<span class="sr-only"> from ${pending.feedUrl}</span>`);
    // Whatever a feed held reaches the page as text: escaped, never markup, never a link or an image.
    expect(html).toContain('<span class="title">&lt;script&gt;alert(1)&lt;/script&gt;</span>');
    expect(html).toContain('<span class="author">by &quot;&gt;&lt;img src=x onerror=alert(1)&gt;</span>');
    expect(html).not.toContain("<script>alert");
    expect(html).not.toContain("javascript:");
    expect(html).not.toMatch(/<img/i);
    expect(html).not.toContain("cdn.example.com");
    expect(html).not.toContain("tracker.example");
    // The policy that keeps every image (and everything else) to the service's own origin stays.
    expect(response.headers.get("Content-Security-Policy")).toMatch(/img-src 'self'/);
  });

  it("listening progress names each episode's podcast by its title when known, else its feed URL", async () => {
    const { browser, userId } = await signedIn("progress-names");
    const api = await as(userId);
    const [titled, pending] = [crypto.randomUUID(), crypto.randomUUID()];
    for (const feed of [titled, pending]) {
      await api.post("/v1/subscriptions", subscriptionDocument(feed, `https://progress-names.example/${feed}`));
      const response = await api.post("/v1/episodes", {
        data: {
          type: "episode",
          id: crypto.randomUUID(),
          attributes: { changedAt: "2026-06-01T00:00:00Z", mediaUrl: `https://progress-names.example/${feed}.mp3` },
          relationships: { subscription: { data: { type: "subscription", id: feed } } },
        },
      });
      expect(response.status).toBe(201);
    }
    await seedPodcast(userId, `https://progress-names.example/${titled}`, { title: "<i>Night</i> Sky" });
    const { html } = await browser.page("/account/progress");
    expect(html).toContain('<span class="feed">from &lt;i&gt;Night&lt;/i&gt; Sky</span>');
    expect(html).toContain(`<span class="feed">from https://progress-names.example/${pending}</span>`);
  });

  it("the subscriptions and progress pages read the podcasts in their one batch: round trips unchanged", async () => {
    const { browser, userId } = await signedIn("podcast-trips");
    await seedSubscriptions(userId, 30);
    const meter = await meteredDatabaseOf(userId);
    const metered = new Browser(signInBindings(meter.bindings));
    metered.setCookie(SESSION_COOKIE, browser.cookie(SESSION_COOKIE) as string);
    for (const path of ["/account/subscriptions", "/account/progress"]) {
      meter.reset();
      expect((await metered.page(path)).response.status).toBe(200);
      // The session, then one batch.
      expect(meter.totals.calls, path).toBe(2);
    }
  });

  it("OPML: Export OPML downloads the export; Import adds and lists each skipped outline with its reason", async () => {
    const { browser, userId } = await signedIn("opml");
    // The guid an outline without one maps to (docs/API.md §11): the same feed again is no new subscription.
    const feed = await podcastGuid(`https://opml.example/${userId}`);
    await (await as(userId)).post("/v1/subscriptions", subscriptionDocument(feed, `https://opml.example/${userId}`));
    const exported = await browser.request("/account/subscriptions.opml");
    expect(exported.status).toBe(200);
    expect(exported.headers.get("Content-Disposition")).toBe('attachment; filename="subscriptions.opml"');
    expect(await exported.text()).toContain(`xmlUrl="https://opml.example/${userId}"`);
    const { token, html } = await browser.page("/account/subscriptions");
    expect(html).toMatch(
      /<a href="\/account\/subscriptions.opml" download="subscriptions.opml">\s*Export OPML\s*<\/a>/,
    );
    expect(html).toMatch(/<label for="opml-file">OPML file<\/label>/);

    const form = new FormData();
    form.set("anti_forgery_token", token as string);
    const file = `<?xml version="1.0"?><opml version="2.0"><body>
      <outline text="new" xmlUrl="https://opml.example/new.xml"/>
      <outline text="again" xmlUrl="https://opml.example/${userId}"/>
      <outline text="bad" xmlUrl="ftp://opml.example/nope"/>
    </body></opml>`;
    form.set("opml", new File([file], "podcasts.opml", { type: "text/x-opml" }));
    const before = await snapshot(userId);
    const imported = await browser.request("/account/opml", {
      method: "POST",
      headers: { Origin: ORIGIN },
      body: form,
    });
    const result = await imported.text();
    expect(imported.status, result).toBe(200);
    expect(result).toContain("Added 1 podcast; 1 was already among your subscriptions; 1 outline was skipped.");
    expect(result).toMatch(/<span class="url">ftp:\/\/opml\.example\/nope<\/span>: [^<]*http/);
    expect(await snapshot(userId)).not.toBe(before);
    // Not OPML: 400, nothing changes.
    const broken = new FormData();
    broken.set("anti_forgery_token", token as string);
    broken.set("opml", new File(["not xml"], "x.opml"));
    const after = await snapshot(userId);
    const refused = await browser.request("/account/opml", {
      method: "POST",
      headers: { Origin: ORIGIN },
      body: broken,
    });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refused.status).toBeLessThan(500);
    expect(await snapshot(userId)).toBe(after);
  });

  it("erase: only the word erase in Confirm erases, then every session of the user ends", async () => {
    const { browser, userId } = await signedIn("erase");
    const second = new Browser();
    await second.signIn(userId);
    const feed = crypto.randomUUID();
    await (await as(userId)).post("/v1/subscriptions", subscriptionDocument(feed, `https://erase.example/${feed}`));
    const credentials = await createAppPassword(browser, "Erase");
    const before = await snapshot(userId);
    const token = await tokenOf(browser, "/account/erase");
    for (const confirm of ["", "Erase", "erase ", "ERASE", "yes"]) {
      const answer = await browser.post("/account/erase", { anti_forgery_token: token, confirm });
      expect(answer.status, confirm).toBe(400);
      expect(await answer.text()).toContain("Nothing was erased");
    }
    expect(await snapshot(userId)).toBe(before);
    const { html } = await browser.page("/account/erase");
    expect(html).toMatch(/<label for="confirm">Confirm<\/label>/);
    expect(html).toMatch(/<button type="submit" class="danger">\s*Erase my account\s*<\/button>/);

    const erased = await browser.post("/account/erase", { anti_forgery_token: token, confirm: "erase" });
    expect(erased.status).toBe(200);
    expect(await erased.text()).toContain("Your account is erased");
    expect(await snapshot(userId)).toBe(JSON.stringify([[], [], [], [], [], []]));
    expect((await browser.page("/account")).html).not.toContain("Sign out");
    expect((await second.page("/account")).html).not.toContain("Sign out");
    const auth = { Authorization: gpodderBasic(credentials.username, credentials.password) };
    expect(
      (await send(new Request(`${ORIGIN}/api/2/devices/${credentials.username}.json`, { headers: auth }))).status,
    ).toBe(401);
  });

  it("erase: a path naming a device the isolate knew before the erasure creates that device again", async () => {
    // Found by the soak (bench/soak.mjs): the isolate's cache of existing devices outlived the page's erasure.
    const { browser, userId } = await signedIn("erase-devices");
    const gpodderGet = (credentials: { username: string; password: string }, path: string) =>
      send(
        new Request(`${ORIGIN}${path}`, {
          headers: { Authorization: gpodderBasic(credentials.username, credentials.password) },
        }),
      );
    const devices = async (credentials: { username: string; password: string }) => {
      const sync = await gpodderGet(credentials, `/api/2/subscriptions/${credentials.username}/phone.json?since=0`);
      expect(sync.status).toBe(200);
      const listed = (await (await gpodderGet(credentials, `/api/2/devices/${credentials.username}.json`)).json()) as {
        id: string;
      }[];
      return listed.map((device) => device.id);
    };
    expect(await devices(await createAppPassword(browser, "Before"))).toEqual(["phone"]);
    const token = await tokenOf(browser, "/account/erase");
    expect((await browser.post("/account/erase", { anti_forgery_token: token, confirm: "erase" })).status).toBe(200);
    const minted = await (await as(userId)).post("/v1/app-passwords", {
      data: { type: "app-password", attributes: { label: "After" } },
    });
    const { attributes } = ((await minted.json()) as { data: { attributes: { username: string; password: string } } })
      .data;
    expect(await devices(attributes)).toEqual(["phone"]);
  });

  it("while the user's bucket is being moved: pages read, changes answer 503 and change nothing", async () => {
    const { browser, userId } = await signedIn("frozen");
    const token = await tokenOf(browser);
    const frozen = new Browser(signInBindings({ SHARD_FROZEN: String(await bucketOf(userId)) }));
    frozen.setCookie(SESSION_COOKIE, browser.cookie(SESSION_COOKIE) as string);
    expect((await frozen.page("/account")).html).toContain("Sign out");
    const before = await snapshot(userId);
    for (const [path, fields] of [
      ["/account/app-passwords", { label: "frozen" }],
      ["/account/signout", {}],
      ["/account/erase", { confirm: "erase" }],
    ] as const) {
      const answer = await frozen.post(path, { anti_forgery_token: token, ...fields });
      expect(answer.status, path).toBe(503);
      expect(answer.headers.get("Retry-After")).not.toBeNull();
    }
    expect(await snapshot(userId)).toBe(before);
    expect((await new Browser(frozen.bindings).signIn(userId)).status).toBe(503);
  });
});

describe("cost", () => {
  it("the signed-in account page: two D1 round trips, rows read those shown plus a constant", async () => {
    const { browser, userId } = await signedIn("cost");
    for (let i = 0; i < 3; i++) await createAppPassword(browser, `App ${i}`);
    await seedSubscriptions(userId, 40);
    const meter = await meteredDatabaseOf(userId);
    const metered = new Browser(signInBindings(meter.bindings));
    metered.setCookie(SESSION_COOKIE, browser.cookie(SESSION_COOKIE) as string);
    meter.reset();
    const { html } = await metered.page("/account");
    expect(html).toContain("3 app passwords");
    // Two D1 calls: the session (one statement), then one batch of three (meter.totals.sqlMs: one per result).
    expect(meter.totals.sqlMs).toHaveLength(1 + 3);
    // 1 session + 1 stats + 3 app passwords + 0 devices (+ the stats row once for the device count).
    // The rows shown (3 app passwords, no device) and at most 3 more: the session, the stats row, and the seek
    // of a list that finds nothing.
    expect(meter.totals.rowsRead).toBeGreaterThanOrEqual(3);
    expect(meter.totals.rowsRead).toBeLessThanOrEqual(3 + 3);
  });

  it("no page statement scans a table", async () => {
    const { browser, userId } = await signedIn("plans");
    const meter = await meteredDatabaseOf(userId);
    const metered = new Browser(signInBindings(meter.bindings));
    metered.setCookie(SESSION_COOKIE, browser.cookie(SESSION_COOKIE) as string);
    await seedSubscriptions(userId, 30);
    const first = await metered.page("/account/subscriptions");
    const next = /<a href="([^"]+)" rel="next">/.exec(first.html)?.[1] as string;
    const second = await metered.page(next.replaceAll("&amp;", "&"));
    const previous = /<a href="([^"]+)" rel="prev">/.exec(second.html)?.[1] as string;
    await metered.page(previous.replaceAll("&amp;", "&"));
    await metered.page("/account/progress");
    await metered.page("/account");
    await metered.post("/account/signout", { anti_forgery_token: first.token as string });
    await new Browser(signInBindings(meter.bindings)).signIn(userId);
    const distinct = new Map(meter.totals.statements.map((statement) => [statement.sql, statement]));
    const mine = { ...accountPageStatements, ...accountSessionStatements };
    for (const [name, statement] of Object.entries(mine)) {
      expect(distinct.has(statement.sql), `statement ${name} not exercised`).toBe(true);
      const { params } = distinct.get(statement.sql) as { params: unknown[] };
      const details = await queryPlan(await databaseFor(userId), statement.sql, params);
      const scans = walksOf(
        details,
        ["subscriptions", "episodes", "user_stats", "account_sessions"],
        ["subscriptions", "episodes"],
      );
      expect(scans, `${name}: ${statement.sql}\n${details.join("\n")}`).toEqual([]);
    }
  });
});

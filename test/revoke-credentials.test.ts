import { afterEach, describe, expect, it, vi } from "vitest";
import { VERIFIED_FOR_MS } from "../src/auth/verified-credentials";
import { revokeAllCredentials } from "../src/db/app-passwords";
import { as, type Caller, databaseFor, newFeed, ORIGIN, send, subscriptionDocument } from "./helpers";

/**
 * revokeAllCredentials (src/db/app-passwords.ts), what `npm run admin -- revoke` runs: every app password, gpodder
 * session and account-page session of one user ends in one batch, nothing else of anyone changes, and every
 * credential stops authenticating once the isolates' 60 s trust has run out (test-node/admin.test.ts runs the
 * command itself against wrangler dev).
 */

async function mint(user: Caller, label: string) {
  const response = await user.post("/v1/app-passwords", { data: { type: "app-password", attributes: { label } } });
  expect(response.status).toBe(201);
  const { data } = (await response.json()) as { data: { attributes: { username: string; password: string } } };
  return data.attributes;
}

function gpodderGet(path: string, headers: Record<string, string>) {
  return send(new Request(`${ORIGIN}${path}`, { headers }));
}

const basic = ({ username, password }: { username: string; password: string }) => ({
  Authorization: `Basic ${btoa(`${username}:${password}`)}`,
});

async function signedIn(credentials: { username: string; password: string }) {
  const response = await gpodderGet(`/api/2/devices/${credentials.username}.json`, basic(credentials));
  expect(response.status).toBe(200);
  return { Cookie: (response.headers.get("Set-Cookie") ?? "").split(";")[0] };
}

async function rowsOf(userId: string) {
  const db = await databaseFor(userId);
  const count = async (table: string) =>
    (await db.prepare(`SELECT count(*) AS n FROM ${table} WHERE user_id = ?`).bind(userId).first<{ n: number }>())?.n ??
    0;
  return {
    appPasswords: await count("app_passwords"),
    gpodderSessions: await count("gpodder_sessions"),
    accountSessions: await count("account_sessions"),
    subscriptions: await count("subscriptions"),
  };
}

/** An account-page session row (the pages write them: docs/API.md §16). */
async function accountSession(userId: string) {
  await (await databaseFor(userId))
    .prepare(
      "INSERT INTO account_sessions (session_hash, user_id, name, created_at, expires_at) VALUES (?, ?, 'Alice', ?, ?)",
    )
    .bind(crypto.randomUUID(), userId, Date.now(), Date.now() + 7 * 86_400_000)
    .run();
}

describe("revoking every credential of a user", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("ends the user's app passwords and sessions in one batch, keeps the data and everyone else's credentials", async () => {
    const user = await as("revoke-all-user");
    const other = await as("revoke-all-other");
    expect((await user.post("/v1/subscriptions", subscriptionDocument(newFeed().guid, newFeed().feedUrl))).status).toBe(
      201,
    );
    const used = await mint(user, "phone");
    const unused = await mint(user, "laptop");
    const cookie = await signedIn(used);
    await signedIn(used); // Basic again: the session is reused, the credential served from this isolate's cache
    await accountSession(user.userId);
    const others = await mint(other, "phone");
    const otherCookie = await signedIn(others);
    await accountSession(other.userId);
    const before = await rowsOf(other.userId);

    const revoked = await revokeAllCredentials(await databaseFor(user.userId), user.userId);

    expect(revoked).toEqual({ appPasswords: 2, gpodderSessions: 1, accountSessions: 1 });
    expect(await rowsOf(user.userId)).toEqual({
      appPasswords: 0,
      gpodderSessions: 0,
      accountSessions: 0,
      subscriptions: 1,
    });
    expect(await rowsOf(other.userId)).toEqual(before);
    // Never verified by this isolate: refused at once.
    expect((await gpodderGet(`/api/2/devices/${unused.username}.json`, basic(unused))).status).toBe(401);

    // What this isolate verified before the revocation it still trusts (for at most VERIFIED_FOR_MS), then 401.
    expect((await gpodderGet(`/api/2/devices/${used.username}.json`, basic(used))).status).toBe(200);
    // ... but nothing it sends is stored any more (the credential guard of every gpodder write, docs/API.md §15).
    const upload = await send(
      new Request(`${ORIGIN}/api/2/subscriptions/${used.username}/phone.json`, {
        method: "POST",
        headers: basic(used),
        body: JSON.stringify({ add: ["https://revoked.example/after.xml"], remove: [] }),
      }),
    );
    expect(upload.status).toBe(401);
    expect((await rowsOf(user.userId)).subscriptions).toBe(1);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + VERIFIED_FOR_MS + 1 });
    expect((await gpodderGet(`/api/2/devices/${used.username}.json`, basic(used))).status).toBe(401);
    expect((await gpodderGet(`/api/2/devices/${used.username}.json`, cookie)).status).toBe(401);
    expect((await gpodderGet(`/api/2/devices/${others.username}.json`, basic(others))).status).toBe(200);
    expect((await gpodderGet(`/api/2/devices/${others.username}.json`, otherCookie)).status).toBe(200);
    // The user mints again with a token, as after any revocation.
    vi.useRealTimers();
    const fresh = await mint(user, "new phone");
    expect((await gpodderGet(`/api/2/devices/${fresh.username}.json`, basic(fresh))).status).toBe(200);
  });

  it("answers zeros for a user with nothing to revoke", async () => {
    expect(await revokeAllCredentials(await databaseFor("revoke-nobody"), "revoke-nobody")).toEqual({
      appPasswords: 0,
      gpodderSessions: 0,
      accountSessions: 0,
    });
  });
});

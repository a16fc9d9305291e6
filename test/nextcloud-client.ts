import { env } from "cloudflare:test";
import { expect } from "vitest";
import { secretHash } from "../src/auth/secrets";
import { grantLoginFlow } from "../src/nextcloud/login-flow";
import { shardOfBucket, shardRouting } from "../src/shards";
import { type Bindings, type Caller, ORIGIN, send } from "./helpers";

/**
 * The app's side of Nextcloud's Login Flow v2 and the gpoddersync API (docs/API.md §17) as the workerd tests
 * speak it (test/nextcloud.test.ts, test/nextcloud-grant-page.test.ts): AntennaPod's requests, and the rows they
 * leave in D1.
 */

export const LOGIN = "/index.php/login/v2";
export const POLL = "/index.php/login/v2/poll";
export const SYNC = "/index.php/apps/gpoddersync";
/** What AntennaPod sends on every request (net/common UserAgentInterceptor: "AntennaPod/" + its version). */
export const ANTENNAPOD = "AntennaPod/3.7.0";
export const SECRET = /^[A-Za-z0-9_-]{43}$/;

export interface StartedFlow {
  token: string;
  loginId: string;
  endpoint: string;
  login: string;
}

/** The database of bucket 0, where flows live. */
export function flowD1(): D1Database {
  return shardOfBucket(shardRouting(env), 0).database;
}

export function basic(username: string, password: string): string {
  return `Basic ${btoa(`${username}:${password}`)}`;
}

/** `POST /index.php/login/v2` as AntennaPod sends it: an empty form body. */
export function start(headers: Record<string, string> = {}, bindings: Partial<Bindings> = {}, body = "") {
  return send(
    new Request(`${ORIGIN}${LOGIN}`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", "User-Agent": ANTENNAPOD, ...headers },
      body,
    }),
    bindings,
  );
}

export async function startFlow(headers: Record<string, string> = {}): Promise<StartedFlow> {
  const response = await start(headers);
  expect(response.status).toBe(200);
  const body = (await response.json()) as { poll: { token: string; endpoint: string }; login: string };
  return {
    token: body.poll.token,
    endpoint: body.poll.endpoint,
    login: body.login,
    loginId: body.login.slice(body.login.lastIndexOf("/") + 1),
  };
}

/** `POST <endpoint>` with `token=<T>`, as AntennaPod polls. */
export function poll(token: string, bindings: Partial<Bindings> = {}, headers: Record<string, string> = {}) {
  return send(
    new Request(`${ORIGIN}${POLL}`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers },
      body: `token=${encodeURIComponent(token)}`,
    }),
    bindings,
  );
}

export async function expectNotGranted(response: Response) {
  expect(response.status).toBe(404);
  expect(response.headers.get("Content-Type")).toBe("application/json");
  expect(await response.text()).toBe("[]");
}

/** Grants the flow as `userId` through the function the grant page calls. */
export async function grant(userId: string, loginId: string, now = Date.now()) {
  return grantLoginFlow(shardRouting(env), userId, loginId, now);
}

export async function granted(token: string) {
  const response = await poll(token);
  expect(response.status).toBe(200);
  return (await response.json()) as { server: string; loginName: string; appPassword: string };
}

export async function flowRow(tokenOrLoginId: string) {
  const hash = await secretHash(tokenOrLoginId);
  return flowD1()
    .prepare("SELECT * FROM login_flows WHERE token_hash = ?1 OR login_hash = ?1")
    .bind(hash)
    .first<Record<string, string | number | null>>();
}

/** Moves a flow's stored times `ms` into the past (the clock the poll compares them with moves on by as much). */
export async function age(token: string, ms: number) {
  await flowD1()
    .prepare("UPDATE login_flows SET started_at = started_at - ?1, expires_at = expires_at - ?1 WHERE token_hash = ?2")
    .bind(ms, await secretHash(token))
    .run();
}

/** A client of the gpoddersync API: Basic on every request, no cookie kept. */
export function nextcloud(credentials: { loginName: string; appPassword: string }, bindings: Partial<Bindings> = {}) {
  const request = (method: string, path: string, body?: unknown) =>
    send(
      new Request(`${ORIGIN}${SYNC}/${path}`, {
        method,
        headers: {
          Authorization: basic(credentials.loginName, credentials.appPassword),
          Accept: "application/json",
          ...(body === undefined ? {} : { "Content-Type": "application/json; charset=utf-8" }),
        },
        body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      }),
      bindings,
    );
  return {
    get: (path: string) => request("GET", path),
    post: (path: string, body: unknown) => request("POST", path, body),
  };
}

/** What Debian's gPodder 3.11.1 sends as its User-Agent through mygpoclient 1.9 (gpodder/my.py). */
export const GPODDER_USER_AGENT =
  "mygpoclient/1.9 (+http://gpodder.org/mygpoclient/) gPodder/3.11.1 (+http://gpodder.org/) Linux";

/** A gpodder.net client (Basic on every request; `headers` on each too, a User-Agent for one). */
export function gpodder(
  credentials: { loginName: string; appPassword: string },
  bindings: Partial<Bindings> = {},
  headers: Record<string, string> = {},
) {
  const request = (method: string, path: string, body?: unknown) =>
    send(
      new Request(`${ORIGIN}${path}`, {
        method,
        headers: { Authorization: basic(credentials.loginName, credentials.appPassword), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
      bindings,
    );
  return {
    get: (path: string) => request("GET", path),
    post: (path: string, body: unknown) => request("POST", path, body),
    put: (path: string, body: unknown) => request("PUT", path, body),
  };
}

/** A gpodder.net / Nextcloud `play` of item `item-1` at `position` of 100 s, under podcast URL `podcast`. */
export function playAction(podcast: string, episode: string, position: number, timestamp: string) {
  return { podcast, episode, guid: "item-1", action: "play", timestamp, started: 0, position, total: 100 };
}

/** An app password minted through the JSON:API, as the credentials the apps send. */
export async function mint(user: Caller, label = "Kasts") {
  const response = await user.post("/v1/app-passwords", { data: { type: "app-password", attributes: { label } } });
  expect(response.status).toBe(201);
  const { data } = (await response.json()) as {
    data: { id: string; attributes: { username: string; password: string } };
  };
  return { id: data.id, loginName: data.attributes.username, appPassword: data.attributes.password };
}

/** A user signed in to AntennaPod through the whole flow. */
export async function signedInApp(userId: string) {
  const flow = await startFlow();
  expect((await grant(userId, flow.loginId)).kind).toBe("granted");
  return granted(flow.token);
}

export async function json<T>(response: Response | Promise<Response>): Promise<T> {
  const answered = await response;
  expect(answered.status).toBe(200);
  return (await answered.json()) as T;
}

export type Changes = { add: string[]; remove: string[]; timestamp: number };
export type Actions = { actions: Record<string, unknown>[]; timestamp: number };

import { expect, inject } from "vitest";
import type { NamedFeed } from "./feed-documents";
import { type Caller, subscriptionDocument } from "./helpers";

/**
 * What the feed round tests (feed-round, feed-moves) share: the local feed server (test/feed-server.ts), a scheduled
 * run's variables that let it fetch from there, fresh URLs and what the server saw of them, and a subscription.
 */
export const feedServer = inject("feedServer");

/** A scheduled run that fetches (the suite runs with FEED_FETCH=off) and may reach the loopback feed server. */
export const FETCHING = { FEED_FETCH: "", FEED_FETCH_ALLOW_PRIVATE: "true" };

let unique = 0;
/** A number no earlier call of this file gave: names that no other test of the file uses. */
export const uniqueNumber = () => ++unique;

/** `path` on the feed server under a URL no other test uses (the server ignores the query). */
export const at = (path: string) => `${feedServer}${path}?t=${Date.now()}-${uniqueNumber()}`;

/** A URL of `/named/<name>` on the feed server (what it answers is defined with `define`). */
export const named = () => `${feedServer}/named/n${Date.now()}-${uniqueNumber()}`;

/** Defines (or redefines) what the named URL answers. */
export async function define(url: string, feed: NamedFeed): Promise<string> {
  const name = new URL(url).pathname.split("/").pop();
  const response = await fetch(`${feedServer}/_define/${name}`, { method: "POST", body: JSON.stringify(feed) });
  expect(response.status).toBe(204);
  return url;
}

/** A new named URL answering `definition`. */
export const feed = async (definition: NamedFeed) => define(named(), definition);

/** The requests the feed server received for `url`, in order. */
export async function requestsFor(url: string): Promise<{ headers: Record<string, string> }[]> {
  const { pathname, search } = new URL(url);
  const response = await fetch(`${feedServer}/_requests?url=${encodeURIComponent(`${pathname}${search}`)}`);
  return (await response.json()) as { headers: Record<string, string> }[];
}

/** Subscribes `user` to `url` through the API; the subscription's guid. */
export async function subscribe(user: Caller, url: string): Promise<string> {
  const guid = crypto.randomUUID();
  const response = await user.post("/v1/subscriptions", subscriptionDocument(guid, url));
  expect(response.status).toBe(201);
  return guid;
}

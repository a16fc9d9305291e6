import { describe, expect, inject, it } from "vitest";
import { isPrivateHost, refusedFetchTarget } from "../src/feeds/address";
import { FETCH_TIMEOUT_MS, fetchFeed, MAX_HEAD_BYTES, MAX_REDIRECTS } from "../src/feeds/fetch";
import { NotAFeedError, parseChannelHead } from "../src/feeds/parse";
import { cleanText } from "../src/feeds/text";
import { atomFeed, hostileFeed, TECH_FACTS, techFeed } from "./feed-documents";

/**
 * Feeds (docs/API.md §18): the address rule, the parse of a channel's head and the fetch's limits, against the local
 * feed server (test/feed-server.ts) on a loopback port. The feed round: test/feed-round.test.ts.
 */
const server = inject("feedServer");
const settings = (allowPrivate = true, timeoutMs = FETCH_TIMEOUT_MS) => ({
  userAgent: "test fetcher",
  allowPrivate,
  timeoutMs,
  subrequests: { left: 50 },
});
const NONE = { etag: null, lastModified: null };
let unique = 0;
/** A URL of the feed server, unique to the call (the server records requests by path and query). */
const at = (path: string) => `${server}${path}?t=${Date.now()}-${++unique}`;
const requestsOf = async (url: string) => {
  const { pathname, search } = new URL(url);
  const response = await fetch(`${server}/_requests?url=${encodeURIComponent(`${pathname}${search}`)}`);
  return (await response.json()) as { headers: Record<string, string> }[];
};

describe("the address rule", () => {
  it.each([
    "localhost",
    "LOCALHOST.",
    "feeds.localhost",
    "127.0.0.1",
    "127.9.9.9",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "[::1]",
    "[::]",
    "[fd12:3456::1]",
    "[fc00::1]",
    "[fe80::1]",
    "[::ffff:7f00:1]",
    "[::ffff:a00:1]",
    "[64:ff9b::a00:1]",
    "[64:ff9b::7f00:1]",
  ])("refuses %s", (host) => {
    expect(isPrivateHost(host)).toBe(true);
  });

  it.each([
    "feeds.example.com",
    "8.8.8.8",
    "172.32.0.1",
    "100.128.0.1",
    "[2001:db8::1]",
    "[::ffff:808:808]",
    "[64:ff9b::808:808]",
  ])("allows %s", (host) => {
    expect(isPrivateHost(host)).toBe(false);
  });

  it("reads hosts as the URL parser writes them: every spelling of a loopback address is refused", () => {
    for (const url of ["http://2130706433/", "http://0x7f.1/", "http://[::ffff:127.0.0.1]/", "http://127.1/"]) {
      expect(refusedFetchTarget(new URL(url), false), url).toMatch(/private or loopback/);
    }
  });

  it("fetches http and https only, and no URL with credentials", () => {
    expect(refusedFetchTarget(new URL("ftp://feeds.example.com/x"), true)).toMatch(/scheme/);
    expect(refusedFetchTarget(new URL("https://user:pw@feeds.example.com/x"), true)).toMatch(/credentials/);
    expect(refusedFetchTarget(new URL("https://feeds.example.com/x"), false)).toBeUndefined();
    expect(refusedFetchTarget(new URL("http://127.0.0.1:8080/x"), true)).toBeUndefined();
  });
});

describe("the parse of a channel's head", () => {
  it("reads a podcast RSS feed's iTunes and Podcasting 2.0 facts, as clean text", () => {
    expect(parseChannelHead(techFeed())).toEqual({ ...TECH_FACTS, newFeedUrl: null });
  });

  it("reads an Atom feed", () => {
    expect(parseChannelHead(atomFeed)).toMatchObject({
      title: "Atom Audio Notes",
      author: "Ann Atom",
      description: "Short notes, read aloud.",
      imageUrl: "https://atom.example.org/logo.png",
      siteUrl: "https://atom.example.org/",
    });
  });

  it("keeps no markup, control or bidi character, and no URL that is not http or https", () => {
    const facts = parseChannelHead(hostileFeed);
    expect(facts).toEqual({
      title: "Evil Title",
      author: "Mallory",
      description: "Plain words",
      imageUrl: null,
      siteUrl: null,
      language: "en",
      podcastGuid: null,
      newFeedUrl: null,
    });
  });

  it("keeps the start of show notes far longer than what is kept, in CDATA or not", () => {
    const notes = `<p>${"Words of the show notes. ".repeat(3000)}</p>`;
    const expected = cleanText(notes, 1000);
    for (const description of [`<![CDATA[${notes}]]>`, notes.replaceAll("<", "&lt;").replaceAll(">", "&gt;")]) {
      const head = techFeed().replace(
        /<description>[\s\S]*?<\/description>/,
        `<description>${description}</description>`,
      );
      const facts = parseChannelHead(head.slice(0, head.indexOf("<item")));
      expect(facts.description).toBe(expected);
      expect(Array.from(facts.description ?? "").length).toBeGreaterThan(990);
      expect(Array.from(facts.description ?? "").length).toBeLessThanOrEqual(1000);
      expect(facts.title).toBe("Tech Talk Weekly");
    }
  });

  it("bounds every field in code points, with whitespace runs made one space", () => {
    expect(cleanText(`${"é".repeat(600)}`, 500)).toHaveLength(500);
    expect(cleanText("a\t\r\n  b&nbsp;&#x1F600;", 500)).toBe("a b 😀");
    expect(Array.from(cleanText("😀".repeat(600), 500) ?? "")).toHaveLength(500);
    expect(cleanText("<p></p>  ", 500)).toBeUndefined();
  });

  it.each([
    ["a DOCTYPE", `<?xml version="1.0"?><!DOCTYPE rss SYSTEM "x.dtd"><rss><channel><title>x</title></channel></rss>`],
    ["an entity declaration", `<!DOCTYPE r [<!ENTITY a "b">]><rss><channel><title>&a;</title></channel></rss>`],
    ["an HTML page", "<!doctype html><html><body><h1>It works</h1></body></html>"],
    ["plain text", "not a feed at all"],
    ["JSON", '{"title":"x"}'],
  ])("refuses %s as not a feed", (_, text) => {
    expect(() => parseChannelHead(text)).toThrow(NotAFeedError);
  });
});

describe("a fetch", () => {
  it("follows up to 5 redirects, and tells whether every one was permanent", async () => {
    const five = await fetchFeed(at(`/redirect/301/${MAX_REDIRECTS}/feeds/tech.rss`), NONE, settings());
    expect(five).toMatchObject({ kind: "feed", permanent: true });
    expect(five.kind === "feed" && new URL(five.finalUrl).pathname).toBe("/feeds/tech.rss");
    const six = await fetchFeed(at(`/redirect/308/${MAX_REDIRECTS + 1}/feeds/tech.rss`), NONE, settings());
    expect(six).toEqual({ kind: "failed", error: "more than 5 redirects" });
    const temporary = await fetchFeed(at("/redirect/302/1/redirect/301/1/feeds/tech.rss"), NONE, settings());
    expect(temporary).toMatchObject({ kind: "feed", permanent: false });
  });

  it("reads the body only up to the first item", async () => {
    const outcome = await fetchFeed(at("/feeds/tech.rss"), NONE, settings());
    if (outcome.kind !== "feed") throw new Error(`a feed expected, got ${outcome.kind}`);
    expect(outcome.head).toContain("<podcast:guid>");
    expect(outcome.head).not.toContain("Episode 3");
    expect(techFeed().startsWith(outcome.head)).toBe(true);
  });

  it("stops an endless body at its byte limit (64 KiB, under the 1 MiB allowed), and what it read counts", async () => {
    const outcome = await fetchFeed(at("/feeds/endless.rss"), NONE, settings());
    if (outcome.kind !== "feed") throw new Error(`a feed expected, got ${outcome.kind}`);
    expect(new TextEncoder().encode(outcome.head).length).toBeLessThanOrEqual(MAX_HEAD_BYTES);
    expect(outcome.head.length).toBeGreaterThan(MAX_HEAD_BYTES - 1024);
    expect(MAX_HEAD_BYTES).toBeLessThanOrEqual(1024 * 1024);
    expect(parseChannelHead(outcome.head).title).toBe("Endless");
  });

  it("sends the validators it was given, and takes a 304 as not modified", async () => {
    const url = at("/conditional/fetch-304");
    const first = await fetchFeed(url, NONE, settings());
    if (first.kind !== "feed") throw new Error(`a feed expected, got ${first.kind}`);
    expect(first.etag).toBe('"v1"');
    const second = await fetchFeed(url, { etag: first.etag, lastModified: first.lastModified }, settings());
    expect(second).toMatchObject({ kind: "not-modified" });
    const [, conditional] = await requestsOf(url);
    expect(conditional.headers["if-none-match"]).toBe('"v1"');
    expect(conditional.headers["if-modified-since"]).toBe(first.lastModified);
    expect(conditional.headers["user-agent"]).toBe("test fetcher");
    expect(conditional.headers.accept).toMatch(/application\/rss\+xml/);
  });

  it("takes a 410 as gone and any other error status as a failure", async () => {
    expect(await fetchFeed(at("/status/410"), NONE, settings())).toEqual({ kind: "gone", error: "HTTP 410 Gone" });
    expect(await fetchFeed(at("/status/503"), NONE, settings())).toEqual({ kind: "failed", error: "HTTP 503" });
    expect(await fetchFeed(at("/status/404"), NONE, settings())).toEqual({ kind: "failed", error: "HTTP 404" });
  });

  it("gives up on a host that never answers, or answers forever, when its time is up", async () => {
    const [hang, slow] = await Promise.all([
      fetchFeed(at("/hang"), NONE, settings(true, 1_000)),
      fetchFeed(at("/slow-body"), NONE, settings(true, 1_000)),
    ]);
    expect(hang).toEqual({ kind: "failed", error: `no complete answer within ${FETCH_TIMEOUT_MS / 1000} s` });
    expect(slow).toEqual(hang);
  });

  it("fetches nothing on a loopback address unless private addresses are allowed", async () => {
    const url = at("/feeds/tech.rss");
    const outcome = await fetchFeed(url, NONE, settings(false));
    expect(outcome).toEqual({ kind: "failed", error: "a private or loopback address is not fetched" });
    expect(await requestsOf(url)).toEqual([]);
  });

  it("checks every redirect target like the URL itself", async () => {
    expect(await fetchFeed(at("/redirect-ftp"), NONE, settings())).toEqual({
      kind: "failed",
      error: "redirected: the scheme ftp: is not fetched",
    });
  });

  it("makes no request once the round's subrequests are spent, and records nothing for it", async () => {
    const url = at("/redirect/301/2/feeds/tech.rss");
    expect(await fetchFeed(url, NONE, { ...settings(), subrequests: { left: 2 } })).toEqual({ kind: "deferred" });
    expect(await requestsOf(url)).toHaveLength(1);
  });
});
